import {
  CrdSchema,
  crdErrors,
  crdRulesNotEvaluated,
  expectCrdValid,
  goRegExp,
  isVendoredKind,
  schemaErrors,
  vendoredKinds,
} from '../support/crd-schema';

const GPU_CONTAINER = {
  name: 'trainer',
  image: 'ghcr.io/example/trainer:1.0',
  command: ['torchrun', 'train.py'],
  resources: { limits: { 'nvidia.com/gpu': 8, memory: '64Gi' }, requests: { cpu: '8' } },
};

function podTemplate(extra: Record<string, unknown> = {}) {
  return { metadata: { labels: { app: 'train' } }, spec: { containers: [structuredClone(GPU_CONTAINER)], ...extra } };
}

/** A realistic JobSet: one Indexed replicated Job that fails fast and restarts as a whole. */
function jobSet(): any {
  return {
    apiVersion: 'jobset.x-k8s.io/v1alpha2',
    kind: 'JobSet',
    metadata: { name: 'train', namespace: 'ml', labels: { 'app.kubernetes.io/name': 'train' } },
    spec: {
      failurePolicy: {
        maxRestarts: 3,
        restartStrategy: 'Recreate',
        rules: [{ name: 'no-retry-on-config-error', action: 'FailJobSet', onJobFailureReasons: ['PodFailurePolicy'] }],
      },
      successPolicy: { operator: 'All', targetReplicatedJobs: ['workers'] },
      network: { enableDNSHostnames: true, publishNotReadyAddresses: true },
      replicatedJobs: [
        {
          name: 'workers',
          replicas: 1,
          template: {
            spec: {
              completionMode: 'Indexed',
              parallelism: 2,
              completions: 2,
              backoffLimit: 0,
              template: podTemplate({ restartPolicy: 'Never' }),
            },
          },
        },
      ],
    },
  };
}

/** A realistic LeaderWorkerSet: groups of two pods, recreated together, rolled one group at a time. */
function leaderWorkerSet(): any {
  return {
    apiVersion: 'leaderworkerset.x-k8s.io/v1',
    kind: 'LeaderWorkerSet',
    metadata: { name: 'llm', namespace: 'serving' },
    spec: {
      replicas: 2,
      startupPolicy: 'LeaderReady',
      leaderWorkerTemplate: {
        size: 2,
        restartPolicy: 'RecreateGroupOnPodRestart',
        leaderTemplate: podTemplate(),
        workerTemplate: podTemplate(),
      },
      rolloutStrategy: { type: 'RollingUpdate', rollingUpdateConfiguration: { maxSurge: 1, maxUnavailable: '50%' } },
    },
  };
}

/** A realistic InferencePool, as inference.networking.k8s.io/v1 spells its fields. */
function inferencePool(): any {
  return {
    apiVersion: 'inference.networking.k8s.io/v1',
    kind: 'InferencePool',
    metadata: { name: 'llama', namespace: 'serving' },
    spec: {
      selector: { matchLabels: { app: 'vllm-llama' } },
      targetPorts: [{ number: 8000 }],
      endpointPickerRef: { name: 'llama-epp', port: { number: 9002 }, failureMode: 'FailClose' },
    },
  };
}

function httpRoute(): any {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'llama', namespace: 'serving' },
    spec: {
      parentRefs: [{ name: 'inference-gateway' }],
      hostnames: ['llm.example.com'],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/v1' } }],
          backendRefs: [{ group: 'inference.networking.k8s.io', kind: 'InferencePool', name: 'llama' }],
          timeouts: { request: '300s' },
        },
      ],
    },
  };
}

function prometheusRule(): any {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: 'gpu-alerts', namespace: 'monitoring', labels: { release: 'prometheus' } },
    spec: {
      groups: [
        {
          name: 'gpu',
          interval: '30s',
          rules: [
            {
              alert: 'GpuXidErrors',
              expr: 'increase(DCGM_FI_DEV_XID_ERRORS[5m]) > 0',
              for: '1m',
              labels: { severity: 'critical' },
              annotations: { summary: 'GPU {{ $labels.gpu }} on {{ $labels.Hostname }} reported an XID error.' },
            },
          ],
        },
      ],
    },
  };
}

function serviceMonitor(): any {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { name: 'vllm', namespace: 'serving' },
    spec: {
      selector: { matchLabels: { app: 'vllm-llama' } },
      namespaceSelector: { matchNames: ['serving'] },
      endpoints: [{ port: 'metrics', path: '/metrics', interval: '15s', scrapeTimeout: '10s' }],
    },
  };
}

function scaledObject(): any {
  return {
    apiVersion: 'keda.sh/v1alpha1',
    kind: 'ScaledObject',
    metadata: { name: 'llama', namespace: 'serving' },
    spec: {
      scaleTargetRef: { apiVersion: 'leaderworkerset.x-k8s.io/v1', kind: 'LeaderWorkerSet', name: 'llm' },
      minReplicaCount: 1,
      maxReplicaCount: 4,
      cooldownPeriod: 300,
      fallback: { failureThreshold: 3, replicas: 2, behavior: 'currentReplicasIfHigher' },
      triggers: [
        {
          type: 'prometheus',
          metadata: {
            serverAddress: 'http://prometheus.monitoring:9090',
            query: 'sum(vllm:num_requests_waiting{model_name="llama"})',
            threshold: '10',
          },
          authenticationRef: { name: 'prometheus-auth' },
        },
      ],
    },
  };
}

/** The smallest valid object of every vendored kind. */
const MINIMAL: Record<string, any> = {
  'jobset.x-k8s.io/v1alpha2/JobSet': {
    spec: { replicatedJobs: [{ name: 'w', template: { spec: { template: podTemplate() } } }] },
  },
  'leaderworkerset.x-k8s.io/v1/LeaderWorkerSet': {
    spec: { leaderWorkerTemplate: { workerTemplate: podTemplate() } },
  },
  'inference.networking.k8s.io/v1/InferencePool': {
    spec: { selector: { matchLabels: { app: 'a' } }, targetPorts: [{ number: 8000 }] },
  },
  'llm-d.ai/v1alpha2/InferenceObjective': { spec: { poolRef: { name: 'llama' }, priority: 10 } },
  'llm-d.ai/v1alpha2/InferenceModelRewrite': {
    spec: {
      poolRef: { name: 'llama' },
      rules: [{ matches: [{ model: { value: 'llama' } }], targets: [{ modelRewrite: 'llama-3.1-8b', weight: 1 }] }],
    },
  },
  'gateway.networking.k8s.io/v1/HTTPRoute': { spec: {} },
  'gateway.networking.k8s.io/v1beta1/HTTPRoute': { spec: {} },
  'monitoring.coreos.com/v1/PrometheusRule': { spec: {} },
  'monitoring.coreos.com/v1/ServiceMonitor': { spec: { selector: {}, endpoints: [] } },
  'keda.sh/v1alpha1/ScaledObject': {
    spec: { scaleTargetRef: { name: 'd' }, triggers: [{ type: 'cpu', metadata: { value: '60' } }] },
  },
  'keda.sh/v1alpha1/TriggerAuthentication': {
    spec: { secretTargetRef: [{ parameter: 'bearerToken', name: 'prom', key: 'token' }] },
  },
};

function minimal(gvk: string): any {
  const slash = gvk.lastIndexOf('/');
  return { apiVersion: gvk.slice(0, slash), kind: gvk.slice(slash + 1), metadata: { name: 'x' }, ...MINIMAL[gvk] };
}

describe('vendored CRDs', () => {
  test('every served kind has a minimal example here, and it is valid', () => {
    const served = vendoredKinds()
      .map(k => `${k.group}/${k.version}/${k.kind}`)
      .sort();
    expect(Object.keys(MINIMAL).sort()).toEqual(served);
    for (const gvk of served) expect([gvk, crdErrors(minimal(gvk))]).toEqual([gvk, []]);
  });

  test('each records its upstream release', () => {
    for (const k of vendoredKinds()) {
      expect(k.source.repo).toMatch(/^[\w-]+\/[\w-]+$/);
      expect(k.source.tag).toMatch(/^v\d+\.\d+\.\d+$/);
      expect(k.source.commit).toMatch(/^[0-9a-f]{40}$/);
    }
  });

  test('every pattern in them translates from Go RE2', () => {
    const patterns: string[] = [];
    const visit = (s: CrdSchema | undefined): void => {
      if (!s) return;
      if (s.pattern) patterns.push(s.pattern);
      Object.values(s.properties ?? {}).forEach(visit);
      visit(s.items);
      if (typeof s.additionalProperties === 'object') visit(s.additionalProperties);
      [...(s.anyOf ?? []), ...(s.oneOf ?? []), ...(s.allOf ?? [])].forEach(visit);
    };
    vendoredKinds().forEach(k => visit(k.schema));
    expect(patterns.length).toBeGreaterThan(100);
    for (const p of patterns) expect(() => goRegExp(p)).not.toThrow();
  });

  test('isVendoredKind knows the served versions only', () => {
    expect(isVendoredKind('jobset.x-k8s.io/v1alpha2', 'JobSet')).toBe(true);
    expect(isVendoredKind('jobset.x-k8s.io/v1alpha1', 'JobSet')).toBe(false);
    expect(isVendoredKind('inference.networking.k8s.io/v1', 'InferencePool')).toBe(true);
    expect(isVendoredKind('inference.networking.x-k8s.io/v1alpha2', 'InferencePool')).toBe(false);
    // GIE's group of the objectives is no longer emitted, so no longer vendored: llm-d.ai serves them.
    expect(isVendoredKind('llm-d.ai/v1alpha2', 'InferenceObjective')).toBe(true);
    expect(isVendoredKind('inference.networking.x-k8s.io/v1alpha2', 'InferenceObjective')).toBe(false);
    expect(isVendoredKind('apps/v1', 'Deployment')).toBe(false);
  });
});

describe('realistic objects pass', () => {
  test.each([
    ['JobSet', jobSet],
    ['LeaderWorkerSet', leaderWorkerSet],
    ['InferencePool', inferencePool],
    ['HTTPRoute', httpRoute],
    ['PrometheusRule', prometheusRule],
    ['ServiceMonitor', serviceMonitor],
    ['ScaledObject', scaledObject],
  ])('%s', (_kind, make) => {
    expect(crdErrors(make())).toEqual([]);
  });

  test('expectCrdValid accepts them together and throws with every error', () => {
    expect(() => expectCrdValid([jobSet(), leaderWorkerSet(), inferencePool(), httpRoute()])).not.toThrow();
    const bad = jobSet();
    bad.spec.suspend = 'no';
    expect(() => expectCrdValid([bad, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' } }])).toThrow(
      /spec\.suspend must be a boolean \(got "no"\)[\s\S]*Deployment\/d: no CRD serving apps\/v1 Deployment/,
    );
  });
});

describe('field errors name the object and the path', () => {
  test('a wrong type', () => {
    const obj = jobSet();
    obj.spec.replicatedJobs[0].template.spec.parallelism = '2';
    expect(crdErrors(obj)).toEqual([
      'JobSet/train: spec.replicatedJobs[0].template.spec.parallelism must be an integer (got "2")',
    ]);
  });

  test('an integer where a number is not whole, and a number out of its int32 format', () => {
    const obj = leaderWorkerSet();
    obj.spec.replicas = 1.5;
    obj.spec.leaderWorkerTemplate.size = 2 ** 31;
    // Errors come in the order of the object's fields.
    expect(crdErrors(obj)).toEqual([
      'LeaderWorkerSet/llm: spec.replicas must be an integer (got 1.5)',
      'LeaderWorkerSet/llm: spec.leaderWorkerTemplate.size must fit in a 32-bit integer (got 2147483648)',
    ]);
  });

  test('an unknown field, as strict field validation reports it', () => {
    const obj = inferencePool();
    // The v1alpha2 name of the field: v1 renamed it to targetPorts.
    obj.spec.targetPortNumber = 8000;
    expect(crdErrors(obj)).toEqual([
      'InferencePool/llama: spec.targetPortNumber is not a field of the schema (unknown field "targetPortNumber")',
    ]);
  });

  test('a missing required field', () => {
    const obj = scaledObject();
    delete obj.spec.fallback.failureThreshold;
    delete obj.spec.triggers[0].type;
    expect(crdErrors(obj)).toEqual([
      'ScaledObject/llama: spec.fallback.failureThreshold is required',
      'ScaledObject/llama: spec.triggers[0].type is required',
    ]);
  });

  test('a required field with a default is not missing: the server defaults it first', () => {
    const obj = leaderWorkerSet();
    delete obj.spec.rolloutStrategy.type;
    expect(crdErrors(obj)).toEqual([]);
  });

  test('a value outside its enum', () => {
    const obj = leaderWorkerSet();
    obj.spec.leaderWorkerTemplate.restartPolicy = 'RecreateGroup';
    expect(crdErrors(obj)).toEqual([
      'LeaderWorkerSet/llm: spec.leaderWorkerTemplate.restartPolicy must be one of "Default", ' +
        '"RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "None" (got "RecreateGroup")',
    ]);
  });

  test('int-or-string takes an integer or a string, nothing else', () => {
    const obj = leaderWorkerSet();
    obj.spec.rolloutStrategy.rollingUpdateConfiguration = { maxSurge: '25%', maxUnavailable: 0 };
    expect(crdErrors(obj)).toEqual([]);
    obj.spec.rolloutStrategy.rollingUpdateConfiguration = { maxSurge: true, maxUnavailable: 0.5 };
    expect(crdErrors(obj)).toEqual([
      'LeaderWorkerSet/llm: spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge must be an integer or a string ' +
        '(got true)',
      'LeaderWorkerSet/llm: spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable must be an integer or a ' +
        'string (got 0.5)',
    ]);
  });

  test('an int-or-string with a pattern: a resource quantity in a pod template', () => {
    const obj = jobSet();
    obj.spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.limits.memory = '64 GiB';
    const [error] = crdErrors(obj);
    expect(error).toMatch(/^JobSet\/train: spec\.replicatedJobs\[0\]\.template\.spec\.template\.spec\.containers\[0\]/);
    expect(error).toContain('.resources.limits.memory must match the pattern ^(\\+|-)?');
    expect(error).toContain('(got "64 GiB")');
  });

  test('a pattern: a Prometheus duration, and a Go (?i) pattern', () => {
    const obj = prometheusRule();
    obj.spec.groups[0].rules[0].for = '1 minute';
    obj.spec.groups[0].partial_response_strategy = 'WARN';
    expect(crdErrors(obj)).toEqual([
      'PrometheusRule/gpu-alerts: spec.groups[0].rules[0].for must match the pattern ' +
        '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$ ' +
        '(got "1 minute")',
    ]);
    obj.spec.groups[0].partial_response_strategy = 'retry';
    expect(crdErrors(obj)).toContain(
      'PrometheusRule/gpu-alerts: spec.groups[0].partial_response_strategy must match ' +
        'the pattern ^(?i)(abort|warn)?$ (got "retry")',
    );
  });

  test('a map of strings refuses a number: KEDA trigger metadata', () => {
    const obj = scaledObject();
    obj.spec.triggers[0].metadata.threshold = 10;
    expect(crdErrors(obj)).toEqual([
      'ScaledObject/llama: spec.triggers[0].metadata.threshold must be a string (got 10)',
    ]);
  });

  test('bounds, lengths and counts', () => {
    const pool = inferencePool();
    pool.spec.targetPorts = [];
    pool.spec.endpointPickerRef.port.number = 70000;
    pool.spec.selector.matchLabels = { app: 'x'.repeat(64) };
    expect(crdErrors(pool)).toEqual([
      'InferencePool/llama: spec.selector.matchLabels.app must be at most 63 characters long (got 64 characters)',
      'InferencePool/llama: spec.targetPorts must have at least 1 item (got 0)',
      'InferencePool/llama: spec.endpointPickerRef.port.number must be at most 65535 (got 70000)',
    ]);
  });

  test('a list of type map refuses two items with the same key', () => {
    const obj = jobSet();
    obj.spec.replicatedJobs.push(obj.spec.replicatedJobs[0]);
    expect(crdErrors(obj)).toEqual([
      'JobSet/train: spec.replicatedJobs[1] has the same key (name="workers") as spec.replicatedJobs[0]: ' +
        'spec.replicatedJobs is a list of type map',
    ]);
  });

  test('a list of type set refuses a duplicate', () => {
    const obj = serviceMonitor();
    obj.spec.scrapeProtocols = ['PrometheusProto', 'PrometheusProto'];
    expect(crdErrors(obj)).toEqual([
      'ServiceMonitor/vllm: spec.scrapeProtocols[1] duplicates spec.scrapeProtocols[0] ("PrometheusProto"): ' +
        'spec.scrapeProtocols must not hold an item twice',
    ]);
  });

  test('a null where the schema is not nullable', () => {
    const obj = httpRoute();
    obj.spec.hostnames = null;
    expect(crdErrors(obj)).toEqual([
      'HTTPRoute/llama: spec.hostnames is null, which its schema does not allow (leave the field out instead)',
    ]);
  });

  test('an unknown top-level field', () => {
    expect(crdErrors({ ...serviceMonitor(), data: {} })).toEqual([
      'ServiceMonitor/vllm: data is not a field of the schema (unknown field "data")',
    ]);
  });
});

describe('CEL rules are not evaluated, only listed', () => {
  test('the rules of the fields an object sets', () => {
    expect(crdRulesNotEvaluated(inferencePool())).toEqual([
      'InferencePool/llama: spec.targetPorts: port number must be unique',
      "InferencePool/llama: spec.endpointPickerRef: port is required when kind is 'Service' or unspecified " +
        "(defaults to 'Service')",
    ]);
    // The rule holds, or not, without changing crdErrors: the server is the judge of it.
    const pool = inferencePool();
    delete pool.spec.endpointPickerRef.port;
    expect(crdErrors(pool)).toEqual([]);
    expect(crdRulesNotEvaluated(scaledObject())).toEqual([
      'ScaledObject/llama: spec: minReplicaCount must be less than or equal to maxReplicaCount',
    ]);
  });
});

describe('metadata', () => {
  test('a name must be a DNS subdomain', () => {
    const obj = httpRoute();
    obj.metadata.name = 'Llama_Route';
    expect(crdErrors(obj)).toEqual([
      'HTTPRoute/Llama_Route: metadata.name must be a DNS-1123 subdomain (lower-case alphanumerics, "-" and ".", ' +
        'at most 253 characters) (got "Llama_Route")',
    ]);
  });

  test('LeaderWorkerSet and JobSet names must be DNS-1035 labels, as their webhooks require', () => {
    const lws = leaderWorkerSet();
    lws.metadata.name = 'llama.v2';
    expect(crdErrors(lws)).toEqual([expect.stringContaining('metadata.name must be a DNS-1035 label')]);
    const js = jobSet();
    js.metadata.name = '7b-train';
    expect(crdErrors(js)).toEqual([expect.stringContaining('metadata.name must be a DNS-1035 label')]);
    // The same names are fine for a kind without that rule.
    const route = httpRoute();
    route.metadata.name = 'llama.v2';
    expect(crdErrors(route)).toEqual([]);
  });

  test('labels, annotations and unknown ObjectMeta fields', () => {
    const obj = prometheusRule();
    obj.metadata.labels = { release: 'prometheus stack', 'bad key!': 'x' };
    obj.metadata.annotations = { 'example.com/threshold': 3 };
    obj.metadata.label = { a: 'b' };
    obj.metadata.namespace = 'Monitoring';
    expect(crdErrors(obj)).toEqual([
      'PrometheusRule/gpu-alerts: metadata.label is not a field of ObjectMeta (unknown field)',
      'PrometheusRule/gpu-alerts: metadata.namespace must be a DNS-1123 label (got "Monitoring")',
      'PrometheusRule/gpu-alerts: metadata.labels.release must be a label value: at most 63 alphanumerics, "-", "_" ' +
        'or "." starting and ending with an alphanumeric (got "prometheus stack")',
      'PrometheusRule/gpu-alerts: metadata.labels has the key "bad key!", which is not a qualified name',
      'PrometheusRule/gpu-alerts: metadata.annotations.example.com/threshold must be a string (got 3)',
    ]);
  });

  test('a name is required unless generateName is given', () => {
    const obj = serviceMonitor();
    obj.metadata = { generateName: 'vllm-' };
    expect(crdErrors(obj)).toEqual([]);
    obj.metadata = {};
    expect(crdErrors(obj)).toEqual(['ServiceMonitor/?: metadata.name is required']);
  });
});

describe('kinds that are not vendored', () => {
  test('an unserved version names the served ones and the release', () => {
    expect(crdErrors({ apiVersion: 'jobset.x-k8s.io/v1alpha1', kind: 'JobSet', metadata: { name: 'j' } })).toEqual([
      'JobSet/j: jobset.x-k8s.io/v1alpha1 JobSet is not served by the vendored CRD ' +
        '(kubernetes-sigs/jobset v0.12.0 serves jobset.x-k8s.io/v1alpha2).',
    ]);
  });

  test('an unknown kind, and something that is not an object', () => {
    expect(crdErrors({ apiVersion: 'kueue.x-k8s.io/v1beta1', kind: 'LocalQueue', metadata: { name: 'q' } })).toEqual([
      'LocalQueue/q: no CRD serving kueue.x-k8s.io/v1beta1 LocalQueue is vendored ' +
        '(src/validation/crds/README.md lists those that are).',
    ]);
    expect(crdErrors('kind: JobSet')).toEqual([
      'The object is not a Kubernetes object (an object with apiVersion and kind).',
    ]);
  });
});

describe('schema keywords the vendored CRDs do not use yet', () => {
  test('x-kubernetes-preserve-unknown-fields keeps unknown fields but still checks the declared ones', () => {
    const schema: CrdSchema = {
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
      properties: { replicas: { type: 'integer' } },
    };
    expect(schemaErrors({ replicas: 2, anything: { nested: [1, 'a'] } }, schema)).toEqual([]);
    expect(schemaErrors({ replicas: '2' }, schema)).toEqual(['replicas must be an integer (got "2")']);
    expect(
      schemaErrors({ replicas: 2, extra: 1 }, { type: 'object', properties: { replicas: { type: 'integer' } } }),
    ).toEqual(['extra is not a field of the schema (unknown field "extra")']);
  });

  test('additionalProperties: true allows anything, false or absent nothing undeclared', () => {
    expect(schemaErrors({ a: 1 }, { type: 'object', additionalProperties: true })).toEqual([]);
    expect(schemaErrors({ a: 1 }, { type: 'object' })).toEqual(['a is not a field of the schema (unknown field "a")']);
  });

  test('nullable allows null', () => {
    expect(
      schemaErrors({ a: null }, { type: 'object', properties: { a: { type: 'string', nullable: true } } }),
    ).toEqual([]);
  });

  test('anyOf, oneOf, allOf and not as structural schemas use them', () => {
    const props = { a: { type: 'string' as const }, b: { type: 'string' as const } };
    const oneOf: CrdSchema = { type: 'object', properties: props, oneOf: [{ required: ['a'] }, { required: ['b'] }] };
    expect(schemaErrors({ a: 'x' }, oneOf)).toEqual([]);
    expect(schemaErrors({ a: 'x', b: 'y' }, oneOf)).toEqual([
      "the object must match exactly one of the schema's oneOf alternatives (matches 2)",
    ]);
    const anyOf: CrdSchema = { type: 'object', properties: props, anyOf: [{ required: ['a'] }, { required: ['b'] }] };
    expect(schemaErrors({}, anyOf)).toEqual([
      "the object must match at least one of the schema's anyOf alternatives (a is required | b is required)",
    ]);
    const allOf: CrdSchema = { type: 'string', allOf: [{ minLength: 2 }, { pattern: '^a' }] };
    expect(schemaErrors('b', allOf)).toEqual([
      'the object must be at least 2 characters long (got "b")',
      'the object must match the pattern ^a (got "b")',
    ]);
    expect(schemaErrors('a', { type: 'string', not: { enum: ['a'] } })).toEqual([
      'the object must not match the schema\'s "not" alternative (got "a")',
    ]);
  });

  test('maxProperties, uniqueItems, date-time and int64', () => {
    const oneAtMost: CrdSchema = { type: 'object', maxProperties: 1, additionalProperties: { type: 'string' } };
    expect(schemaErrors({ a: '1', b: '2' }, oneAtMost)).toEqual(['the object must have at most 1 field (got 2)']);
    expect(schemaErrors([1, 1], { type: 'array', uniqueItems: true, items: { type: 'integer' } })).toEqual([
      '[1] duplicates [0] (1): the object must not hold an item twice',
    ]);
    expect(schemaErrors('2026-12-03T10:00:00Z', { type: 'string', format: 'date-time' })).toEqual([]);
    expect(schemaErrors('yesterday', { type: 'string', format: 'date-time' })).toEqual([
      'the object must be an RFC 3339 date-time such as 2026-01-02T15:04:05Z (got "yesterday")',
    ]);
    expect(schemaErrors(2 ** 63, { type: 'integer', format: 'int64' })).toEqual([
      'the object must fit in a 64-bit integer (got 9223372036854776000)',
    ]);
  });

  test('a Go regexp feature that is not translated is refused, not guessed', () => {
    expect(() => goRegExp('^[[:alpha:]]+$')).toThrow('does not translate');
    expect(goRegExp('^(?i)abc$').test('ABC')).toBe(true);
  });
});
