// The LeaderWorkerSet rules (kubernetes-sigs/lws v0.10.0, pkg/webhooks/leaderworkerset_webhook.go),
// each at its boundary. The manifests are written by hand: the constructs that emit LeaderWorkerSets
// live elsewhere, and the guard must answer for any LeaderWorkerSet.
import { guard, IMMUTABLE_FIELDS } from '../../src';
import { celRules } from '../../src/guard/crd';
import { liveExport } from './live-export';

const CRD = require('../../src/validation/crds/lws/leaderworkerset.x-k8s.io_leaderworkersets.json');
const WEBHOOK = 'admission webhook "vleaderworkerset.kb.io" denied the request: ';

const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x));
const pod = (image = 'vllm/vllm-openai:v0.31.0', gpus = 8) => ({
  spec: { containers: [{ name: 'vllm', image, resources: { limits: { 'nvidia.com/gpu': gpus } } }] },
});
function lws(spec: Record<string, any> = {}, template: Record<string, any> = {}, meta: object = {}): any {
  return {
    apiVersion: 'leaderworkerset.x-k8s.io/v1',
    kind: 'LeaderWorkerSet',
    metadata: { name: 'llm', namespace: 'serving', ...meta },
    spec: {
      replicas: 2,
      leaderWorkerTemplate: { size: 4, workerTemplate: pod(), ...template },
      ...spec,
    },
  };
}
const errorsOf = (before: any, after: any, crds = false) =>
  guard([before, ...(crds ? [CRD] : [])], [after, ...(crds ? [CRD] : [])]).findings.filter(f => f.severity === 'error');
const paths = (before: any, after: any) => errorsOf(before, after).map(f => f.path);

describe('LeaderWorkerSet guard rules (lws v0.10.0)', () => {
  test('are registered for leaderworkerset.x-k8s.io/LeaderWorkerSet, each citing the webhook', () => {
    const rules = IMMUTABLE_FIELDS.find(k => k.group === 'leaderworkerset.x-k8s.io' && k.kind === 'LeaderWorkerSet');
    expect(rules?.fields.length).toBeGreaterThan(0);
    // Kueue's rules for the kind are tested in kueue.test.ts.
    for (const r of rules!.fields.filter(f => f.kueue === undefined)) {
      expect(r.source).toMatch(/kubernetes-sigs\/lws v0\.10\.0 pkg\/webhooks\/leaderworkerset_webhook\.go/);
      expect(r.message.startsWith(WEBHOOK)).toBe(true);
    }
  });

  test('the vendored CRD has no transition rules (re-vendoring one with them fails here)', () => {
    const derived = celRules([CRD]).get('leaderworkerset.x-k8s.io/LeaderWorkerSet')!.get('v1')!;
    expect(derived).toEqual([]);
    // With the CRD in the input, the result is the same: nothing more is refused.
    expect(errorsOf(lws(), lws({ replicas: 3 }), true)).toEqual([]);
  });

  test('the templates, size, replicas, restart and rollout settings and the network config may change', () => {
    const before = lws();
    for (const after of [
      lws({}, { workerTemplate: pod('vllm/vllm-openai:v0.32.0') }),
      lws({}, { leaderTemplate: pod('vllm/vllm-openai:v0.32.0') }),
      lws({}, { size: 8 }),
      lws({ replicas: 5 }),
      lws({}, { restartPolicy: 'None' }),
      lws({ rolloutStrategy: { type: 'RollingUpdate', rollingUpdateConfiguration: { maxSurge: 1, partition: 1 } } }),
      lws({ networkConfig: { subdomainPolicy: 'UniquePerReplica' } }),
      lws({ startupPolicy: 'LeaderReady' }),
    ]) {
      expect(paths(before, after)).toEqual([]);
      expect(paths(liveExport(before), after)).toEqual([]);
    }
  });

  describe('subGroupSize ((*LeaderWorkerSetWebhook).ValidateUpdate)', () => {
    const sub = (subGroupSize: number, subGroupPolicyType?: string) => ({
      subGroupPolicy: { subGroupSize, ...(subGroupPolicyType ? { subGroupPolicyType } : {}) },
    });

    test('a changed subGroupSize is refused with the webhook path and words; the same one is allowed', () => {
      const [f, ...rest] = errorsOf(lws({}, sub(2)), lws({}, sub(4)));
      expect(rest).toEqual([]);
      expect(f).toMatchObject({
        code: 'immutable-field',
        path: 'spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize',
        before: 2,
        after: 4,
        message: `${WEBHOOK}spec.leaderWorkerTemplate.SubGroupPolicy.subGroupSize: Invalid value: 4: field is immutable`,
      });
      expect(f.remedy).toMatch(/subGroupSize is fixed .* new name/);
      expect(paths(lws({}, sub(2)), lws({}, sub(2)))).toEqual([]);
    });

    test('the policy may be neither added nor removed', () => {
      expect(errorsOf(lws(), lws({}, sub(2)))[0].message).toBe(
        `${WEBHOOK}spec.leaderWorkerTemplate.SubGroupPolicy.subGroupSize: Invalid value: 2: cannot enable subGroupSize after the lws is already created`,
      );
      expect(errorsOf(lws({}, sub(2)), lws())[0].message).toBe(
        `${WEBHOOK}spec.leaderWorkerTemplate.SubGroupPolicy.subGroupSize: Invalid value: 2: cannot remove subGroupSize after enabled`,
      );
      // From a live export too: kubectl apply deletes a policy the last apply set and the manifest dropped.
      expect(paths(liveExport(lws({}, sub(2))), lws())).toEqual([
        'spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize',
      ]);
    });

    test('its type is not compared: LeaderWorker to LeaderExcluded is allowed where size - 1 divides', () => {
      // size 4: 3 % 3 == 0
      expect(paths(lws({}, sub(3)), lws({}, sub(3, 'LeaderExcluded')))).toEqual([]);
    });
  });

  describe('the create checks, run on the new object ((*LeaderWorkerSetWebhook).generalValidate)', () => {
    const ru = (c: object) => ({ rolloutStrategy: { type: 'RollingUpdate', rollingUpdateConfiguration: c } });

    test('lowering replicas until a percentage maxUnavailable rounds down to 0 beside maxSurge 0 is refused', () => {
      // 50% of 2 groups is 1; of 1 group, 0 (rounded down).
      const before = lws({ replicas: 2, ...ru({ maxUnavailable: '50%' }) });
      expect(paths(before, lws({ replicas: 2, ...ru({ maxUnavailable: '50%' }) }))).toEqual([]);
      const [f] = errorsOf(before, lws({ replicas: 1, ...ru({ maxUnavailable: '50%' }) }));
      expect(f).toMatchObject({
        code: 'invalid-field',
        path: 'spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable',
        message: `${WEBHOOK}spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable: Invalid value: "50%": must not be 0 when \`maxSurge\` is 0`,
      });
      expect(f.remedy).toMatch(/1 group\(s\), maxUnavailable "50%" comes to 0 groups/);
      // A surge (rounded up) lifts it; so does scaling to 0.
      expect(paths(before, lws({ replicas: 1, ...ru({ maxUnavailable: '50%', maxSurge: '1%' }) }))).toEqual([]);
      expect(paths(before, lws({ replicas: 0, ...ru({ maxUnavailable: '50%' }) }))).toEqual([]);
      // Explicit zeros are refused; the defaults (1 and 0) are not.
      expect(paths(lws(), lws(ru({ maxUnavailable: 0 })))).toEqual([
        'spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable',
      ]);
      expect(paths(lws(), lws(ru({ maxUnavailable: 0, maxSurge: 1 })))).toEqual([]);
      expect(paths(lws(), lws(ru({})))).toEqual([]);
      // From a live export: the apply keeps the stored maxSurge 0, and deletes a maxUnavailable the
      // last apply set and the manifest dropped (the server then defaults it to 1).
      const live = liveExport(lws({ replicas: 2, ...ru({ maxUnavailable: '50%' }) }));
      live.spec.rolloutStrategy.rollingUpdateConfiguration = { maxUnavailable: '50%', maxSurge: 0, partition: 0 };
      expect(paths(live, lws({ replicas: 1, ...ru({ maxUnavailable: '50%' }) }))).toEqual([
        'spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable',
      ]);
      expect(paths(live, lws({ replicas: 1 }))).toEqual([]);
    });

    test('a size that subGroupSize no longer divides is refused: size may change, subGroupSize may not', () => {
      const before = lws({}, { size: 8, subGroupPolicy: { subGroupSize: 4 } });
      // 9: 9 - 1 = 8 divides; 12 divides.
      expect(paths(before, lws({}, { size: 9, subGroupPolicy: { subGroupSize: 4 } }))).toEqual([]);
      expect(paths(before, lws({}, { size: 12, subGroupPolicy: { subGroupSize: 4 } }))).toEqual([]);
      const [f, ...rest] = errorsOf(before, lws({}, { size: 6, subGroupPolicy: { subGroupSize: 4 } }));
      expect(rest).toEqual([]);
      expect(f).toMatchObject({
        code: 'invalid-field',
        path: 'spec.leaderWorkerTemplate.SubGroupPolicy.subGroupSize',
        message: `${WEBHOOK}spec.leaderWorkerTemplate.SubGroupPolicy.subGroupSize: Invalid value: 4: size or size - 1 must be divisible by subGroupSize`,
      });
      expect(f.remedy).toMatch(/size or size - 1 is a multiple of 4/);
      const smaller = errorsOf(before, lws({}, { size: 3, subGroupPolicy: { subGroupSize: 4 } })).map(e => e.message);
      expect(smaller).toEqual([
        `${WEBHOOK}spec.leaderWorkerTemplate.SubGroupPolicy.subGroupSize: Invalid value: 4: size or size - 1 must be divisible by subGroupSize`,
        `${WEBHOOK}spec.leaderWorkerTemplate.SubGroupPolicy.subGroupSize: Invalid value: 4: subGroupSize cannot be larger than size`,
      ]);
      // LeaderExcluded needs size - 1: 8 divides by 4, so 8 is refused there and 9 is not.
      const excluded = (size: number) =>
        lws({}, { size, subGroupPolicy: { subGroupSize: 4, subGroupPolicyType: 'LeaderExcluded' } });
      expect(errorsOf(excluded(9), excluded(8)).map(e => e.message)).toEqual([
        `${WEBHOOK}spec.leaderWorkerTemplate.SubGroupPolicy.subGroupSize: Invalid value: 4: size-1 must be divisible by subGroupSize when using LeaderExcluded`,
      ]);
      expect(paths(excluded(9), excluded(13))).toEqual([]);
    });

    test('bounds: size at least 1, partition not negative, percentages at most 100%, replicas × size within int32', () => {
      expect(errorsOf(lws(), lws({}, { size: 0 }))[0].message).toBe(
        `${WEBHOOK}spec.leaderWorkerTemplate.size: Invalid value: 0: size must be equal or greater than 1`,
      );
      expect(paths(lws(), lws({}, { size: 1 }))).toEqual([]);
      expect(errorsOf(lws(), lws(ru({ partition: -1 })))[0].message).toBe(
        `${WEBHOOK}spec.rolloutStrategy.rollingUpdateConfiguration.partition: Invalid value: -1: must be greater than or equal to 0`,
      );
      expect(paths(lws(), lws(ru({ partition: 2 })))).toEqual([]);
      expect(errorsOf(lws(), lws(ru({ maxSurge: '101%' })))[0].message).toBe(
        `${WEBHOOK}spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge: Invalid value: "101%": must not be greater than 100%`,
      );
      expect(paths(lws(), lws(ru({ maxSurge: '100%' })))).toEqual([]);
      expect(errorsOf(lws(), lws(ru({ maxSurge: -1 })))[0].message).toBe(
        `${WEBHOOK}spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge: Invalid value: -1: must be greater than or equal to 0`,
      );
      expect(errorsOf(lws(), lws(ru({ maxUnavailable: 'one' }))).map(e => e.message)).toEqual([
        `${WEBHOOK}spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable: Invalid value: "one": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')`,
        `${WEBHOOK}spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable: Invalid value: "one": invalid value`,
        // GetScaledValueFromIntOrPercent returns 0 with its error: beside maxSurge 0, the webhook says so too.
        `${WEBHOOK}spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable: Invalid value: "one": must not be 0 when \`maxSurge\` is 0`,
      ]);
      expect(errorsOf(lws({ replicas: 1 }), lws({ replicas: 536870912 }))[0].message).toBe(
        `${WEBHOOK}spec.replicas: Invalid value: 536870912: the product of replicas and worker replicas must not exceed 2147483647`,
      );
      expect(paths(lws({ replicas: 1 }), lws({ replicas: 536870911 }))).toEqual([]);
    });

    test('the subgroup-exclusive-topology annotation needs a subGroupPolicy', () => {
      const key = 'leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology';
      const annotated = (t: object) => lws({}, t, { annotations: { [key]: 'cloud.google.com/gke-nodepool' } });
      expect(errorsOf(lws(), annotated({}))[0]).toMatchObject({
        path: `metadata.annotations.${key}`,
        message: `${WEBHOOK}metadata.annotations.${key}: Invalid value: "cloud.google.com/gke-nodepool": cannot have subgroup-exclusive-topology without subGroupSize set`,
      });
      const withPolicy = { subGroupPolicy: { subGroupSize: 2 } };
      expect(paths(lws({}, withPolicy), annotated(withPolicy))).toEqual([]);
    });
  });

  test('a LeaderWorkerSet of another API group is not checked (the rules key on group and kind)', () => {
    const other = clone(lws({}, { subGroupPolicy: { subGroupSize: 2 } }));
    other.apiVersion = 'example.com/v1';
    const changed = clone(other);
    changed.spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize = 4;
    expect(paths(other, changed)).toEqual([]);
  });
});
