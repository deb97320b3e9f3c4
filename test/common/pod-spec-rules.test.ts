import { synthValid, testChart } from '../support/synth';
import { TestWorkload, testWorkloadError } from '../support/test-workload';

/**
 * The API server's value rules for the pod parts a user hands the library whole
 * (kubernetes pkg/apis/core/validation/validation.go): refused at construction, naming the prop.
 */
const errorOf = testWorkloadError;

const c = (extra: object) => ({ name: 'extra', image: 'busybox:1.36.1', ...extra }) as any;
const term = (r: object) =>
  ({
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', ...r }] }],
      },
    },
  }) as any;

describe('affinity (ValidateAffinity)', () => {
  test.each([
    [
      'an unknown operator',
      term({ operator: 'Equals', values: ['a'] }),
      /matchExpressions\[0\]\.operator must be one of In, NotIn, Exists, DoesNotExist, Gt, Lt \(got "Equals"\)/,
    ],
    ['In without values', term({ operator: 'In' }), /matchExpressions\[0\]\.values must be non-empty for In/],
    ['Exists with values', term({ operator: 'Exists', values: ['a'] }), /values must be empty for Exists/],
    ['Gt with two values', term({ operator: 'Gt', values: ['1', '2'] }), /values must be one integer for Gt/],
    [
      'no terms',
      { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [] } } },
      /nodeSelectorTerms must have at least one term/,
    ],
    [
      'a weight of 0',
      {
        nodeAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 0, preference: { matchExpressions: [{ key: 'a', operator: 'Exists' }] } },
          ],
        },
      },
      /weight must be a whole number from 1 to 100|weight must be .*1.*100/,
    ],
    [
      'a weight of 101',
      {
        nodeAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 101, preference: { matchExpressions: [{ key: 'a', operator: 'Exists' }] } },
          ],
        },
      },
      /weight must be/,
    ],
    [
      'anti-affinity without a topologyKey',
      {
        podAntiAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { a: 'b' } } }],
        },
      },
      /podAntiAffinity\.requiredDuringSchedulingIgnoredDuringExecution\[0\]\.topologyKey must be a non-empty label key/,
    ],
  ])('%s is refused', (_what, affinity, message) => {
    expect(errorOf({ pod: { affinity } })).toMatch(message);
  });

  test('a valid affinity passes', () => {
    const chart = testChart('ml');
    new TestWorkload(chart, 'w', {
      name: 'w',
      pod: {
        affinity: {
          ...term({ operator: 'In', values: ['gpu'] }),
          podAntiAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              {
                weight: 50,
                podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { a: 'b' } } },
              },
            ],
          },
        },
      },
    });
    expect(synthValid(chart).length).toBeGreaterThan(0);
  });
});

describe('topology spread constraints (validateTopologySpreadConstraints)', () => {
  const spread = (x: object) =>
    ({ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule', ...x }) as any;
  test.each([
    ['maxSkew 0', spread({ maxSkew: 0 }), /maxSkew must be/],
    [
      'an unknown whenUnsatisfiable',
      spread({ whenUnsatisfiable: 'Never' }),
      /whenUnsatisfiable must be one of DoNotSchedule, ScheduleAnyway/,
    ],
    ['an empty topologyKey', spread({ topologyKey: '' }), /topologyKey must be a non-empty label key/],
    [
      'minDomains with ScheduleAnyway',
      spread({ whenUnsatisfiable: 'ScheduleAnyway', minDomains: 2 }),
      /minDomains is only allowed with whenUnsatisfiable DoNotSchedule/,
    ],
  ])('%s is refused', (_what, constraint, message) => {
    expect(errorOf({ pod: { topologySpreadConstraints: [constraint] } })).toMatch(message);
  });

  test('two constraints on one topologyKey and whenUnsatisfiable are refused (Duplicate)', () => {
    expect(errorOf({ pod: { topologySpreadConstraints: [spread({}), spread({ maxSkew: 2 })] } })).toMatch(
      /pod\.topologySpreadConstraints\[1\] must not repeat a constraint on topologyKey topology\.kubernetes\.io\/zone with whenUnsatisfiable DoNotSchedule/,
    );
  });
});

describe('tolerations (ValidateTolerations)', () => {
  test('a value that is not a label value, and a fractional tolerationSeconds, are refused', () => {
    expect(
      errorOf({ pod: { tolerations: [{ key: 'a', operator: 'Equal', value: 'has space', effect: 'NoSchedule' }] } }),
    ).toMatch(/pod\.tolerations\[0\]\.value must be a label value/);
    expect(
      errorOf({
        pod: { tolerations: [{ key: 'a', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 1.5 }] },
      }),
    ).toMatch(/tolerationSeconds must be a whole number of seconds/);
  });
});

describe('extra containers (validateContainers)', () => {
  test.each([
    ['containerPort 0', c({ ports: [{ containerPort: 0 }] }), /ports\[0\]\.containerPort must be/],
    ['containerPort 70000', c({ ports: [{ containerPort: 70000 }] }), /ports\[0\]\.containerPort must be/],
    [
      'a port name that is not an IANA name',
      c({ ports: [{ containerPort: 80, name: 'Metrics_Port_Too_Long' }] }),
      /ports\[0\]\.name must be a port name/,
    ],
    [
      'two ports of one name',
      c({
        ports: [
          { containerPort: 80, name: 'http' },
          { containerPort: 81, name: 'http' },
        ],
      }),
      /ports\[1\]\.name must not repeat/,
    ],
    [
      'a variable twice',
      c({
        env: [
          { name: 'A', value: '1' },
          { name: 'A', value: '2' },
        ],
      }),
      /env\[1\]\.name must not repeat a variable/,
    ],
    ['runAsUser -1', c({ securityContext: { runAsUser: -1 } }), /securityContext\.runAsUser must be/],
    [
      'a liveness probe with successThreshold 2',
      c({ livenessProbe: { exec: { command: ['true'] }, successThreshold: 2 } }),
      /livenessProbe\.successThreshold must be 1/,
    ],
    [
      'a probe with no handler',
      c({ readinessProbe: { periodSeconds: 5 } }),
      /readinessProbe must have exactly one handler/,
    ],
    [
      'an unknown pull policy',
      c({ imagePullPolicy: 'Sometimes' }),
      /imagePullPolicy must be one of Always, IfNotPresent, Never/,
    ],
    [
      'restartPolicy OnFailure (every sidecar is a native sidecar, restartPolicy Always)',
      c({ restartPolicy: 'OnFailure' }),
      /pod\.sidecars\[0\]\.restartPolicy must be left out: every sidecar is a native sidecar.*\(got "OnFailure"\)/,
    ],
  ])('a sidecar with %s is refused', (_what, container, message) => {
    expect(errorOf({ pod: { sidecars: [container] } })).toMatch(message);
  });

  test('an init container takes restartPolicy Always only (a native sidecar), which may then have probes and hooks', () => {
    expect(errorOf({ pod: { initContainers: [c({ restartPolicy: 'Never' })] } })).toMatch(
      /pod\.initContainers\[0\]\.restartPolicy must be Always \(a native sidecar.*\(got "Never"\)/,
    );
    const probe = { exec: { command: ['true'] } };
    const sidecar = c({
      restartPolicy: 'Always',
      readinessProbe: probe,
      lifecycle: { preStop: { sleep: { seconds: 1 } } },
    });
    const chart = testChart();
    new TestWorkload(chart, 'w', { name: 'w', pod: { initContainers: [sidecar] } });
    const init = synthValid(chart).find(o => o.kind === 'StatefulSet').spec.template.spec.initContainers;
    expect(init).toEqual([expect.objectContaining({ name: 'extra', restartPolicy: 'Always', readinessProbe: probe })]);
  });

  test('an init container may have neither probes nor lifecycle (it runs to completion)', () => {
    expect(errorOf({ pod: { initContainers: [c({ readinessProbe: { exec: { command: ['true'] } } })] } })).toMatch(
      /pod\.initContainers\[0\]\.readinessProbe is not allowed on an init container/,
    );
    expect(
      errorOf({ pod: { initContainers: [c({ lifecycle: { preStop: { exec: { command: ['true'] } } } })] } }),
    ).toMatch(/pod\.initContainers\[0\]\.lifecycle is not allowed/);
  });
});

describe('volume sources (ValidateVolumes)', () => {
  const vol = (v: object) => [{ volume: { name: 'extra', ...v } as any, mountPath: '/extra' }];
  test.each([
    [
      'an absolute item path',
      vol({ secret: { secretName: 's', items: [{ key: 'k', path: '/abs' }] } }),
      /volumes\[0\]\.volume\.secret\.items\[0\]\.path must be a relative path/,
    ],
    [
      'an item path with ..',
      vol({ configMap: { name: 'c', items: [{ key: 'k', path: 'a/../b' }] } }),
      /configMap\.items\[0\]\.path must be a relative path/,
    ],
    ['defaultMode above 0777', vol({ secret: { secretName: 's', defaultMode: 1000 } }), /secret\.defaultMode must be/],
    [
      'an empty claimName',
      vol({ persistentVolumeClaim: { claimName: '' } }),
      /persistentVolumeClaim\.claimName must be a non-empty string/,
    ],
  ])('%s is refused', (_what, volumes, message) => {
    expect(errorOf({ volumes })).toMatch(message);
  });
});

describe("ports the construct's own containers use", () => {
  test('a sidecar port or port name the main container already has is refused (one network namespace)', () => {
    expect(
      errorOf({
        pod: {
          sidecars: [c({ ports: [{ containerPort: 8080 }] }), c({ name: 'other', ports: [{ containerPort: 8080 }] })],
        },
      }),
    ).toMatch(/pod\.sidecars\[1\]\.ports\[0\]\.containerPort must differ from the port container 'extra' listens on/);
    expect(
      errorOf({
        pod: {
          sidecars: [
            c({ ports: [{ containerPort: 9000, name: 'metrics' }] }),
            c({ name: 'other', ports: [{ containerPort: 9001, name: 'metrics' }] }),
          ],
        },
      }),
    ).toMatch(/pod\.sidecars\[1\]\.ports\[0\]\.name must differ from the port names of container 'extra'/);
  });
});
