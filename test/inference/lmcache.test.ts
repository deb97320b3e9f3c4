import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Chart, Size, Testing } from 'cdk8s';
import {
  Disaggregation,
  InferenceGateway,
  KvCacheOffload,
  LmCacheTiers,
  PrefixCacheScoring,
  SglangInferenceService,
  TgiInferenceService,
  VllmInferenceService,
  VllmInferenceServiceProps,
} from '../../src';
import { missingTool } from '../support/missing-tool';
import { quantityBytes, servingOutput } from '../support/synth';
import { expectValidOutput } from '../support/valid-output';

const MODEL = 'Qwen/Qwen2.5-7B-Instruct';
const GIB = 1024 ** 3;
/** The virtualenv `.ci/run` makes with lmcache 0.5.6, whose own parser reads the variables. */
const LMCACHE_PYTHON = path.join(__dirname, '..', '..', '.cache', 'lmcache-venv', 'bin', 'python3');

const bytes = quantityBytes;
const vllm = (props: Partial<VllmInferenceServiceProps> = {}) =>
  servingOutput(c => new VllmInferenceService(c, 'llm', { name: 'llm', modelId: MODEL, ...props }));
const tiered = (tiers: LmCacheTiers, props: Partial<VllmInferenceServiceProps> = {}) =>
  vllm({ kvCacheOffload: KvCacheOffload.lmcache(tiers), ...props });
const lmcacheEnv = (main: any): Record<string, string> =>
  Object.fromEntries(main.env.filter((e: any) => e.name.startsWith('LMCACHE_')).map((e: any) => [e.name, e.value]));

/** What LMCache 0.5.6's own parser makes of the variables (`LMCacheEngineConfig.from_env()`, then `validate()`). */
function parsedByLmcache(env: Record<string, string>): Record<string, unknown> | undefined {
  if (!fs.existsSync(LMCACHE_PYTHON)) {
    missingTool(`LMCache's parser did NOT read the tier's variables: ${LMCACHE_PYTHON} is missing. Run .ci/run.`);
    return undefined;
  }
  const code = [
    'import json',
    'from lmcache.v1.config import LMCacheEngineConfig',
    'c = LMCacheEngineConfig.from_env()',
    'c.validate()',
    'print(json.dumps({k: getattr(c, k) for k in ("local_cpu", "max_local_cpu_size", "local_disk", "max_local_disk_size", "enable_kv_events")}))',
  ].join('\n');
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LMCACHE_')));
  const run = spawnSync(LMCACHE_PYTHON, ['-c', code], { env: { ...clean, ...env }, encoding: 'utf8', timeout: 60_000 });
  if (run.status !== 0) throw new Error(`LMCache's parser failed (${run.status}): ${run.stderr}`);
  // Its log lines go to stdout too; the answer is the last line.
  return JSON.parse(run.stdout.trim().split('\n').pop()!);
}

describe('KvCacheOffload.lmcache(): LMCache tiers in the vLLM process', () => {
  test('the CPU tier: the in-process connector, the size split over the ranks, pinned memory added to the pod', () => {
    const base = vllm({ gpusPerReplica: 4 });
    const out = tiered({ cpu: Size.gibibytes(30) }, { gpusPerReplica: 4 });
    const at = out.main.args.indexOf('--kv-transfer-config');
    expect(JSON.parse(out.main.args[at + 1])).toEqual({ kv_connector: 'LMCacheConnectorV1', kv_role: 'kv_both' });
    // Each of the 4 ranks pins its own pool of 7.5 GiB: 30 GiB in all, in the process's memory, not /dev/shm.
    expect(lmcacheEnv(out.main)).toEqual({
      LMCACHE_LOCAL_CPU: 'true',
      LMCACHE_MAX_LOCAL_CPU_SIZE: '7.5',
      LMCACHE_ENABLE_KV_EVENTS: 'false',
    });
    for (const side of ['requests', 'limits'] as const)
      expect(bytes(out.main.resources[side].memory) - bytes(base.main.resources[side].memory)).toBe(30 * GIB);
    const shm = (t: any) => t.spec.volumes.find((v: any) => v.emptyDir?.medium === 'Memory').emptyDir.sizeLimit;
    expect(shm(out.template)).toBe(shm(base.template));
    expect(out.template.spec.volumes.map((v: any) => v.name)).not.toContain('lmcache');
    expect(out.main.lifecycle.postStart).toBeUndefined();
    expectValidOutput(out.objects);
  });

  test("a disk tier on the node's disk: an emptyDir with room over the tier, requested as ephemeral storage", () => {
    const out = tiered({ cpu: Size.gibibytes(40), disk: Size.gibibytes(200) }, { gpusPerReplica: 2 });
    expect(lmcacheEnv(out.main)).toMatchObject({
      LMCACHE_MAX_LOCAL_CPU_SIZE: '20',
      LMCACHE_LOCAL_DISK: '/var/cache/lmcache',
      LMCACHE_MAX_LOCAL_DISK_SIZE: '100',
    });
    const volume = out.template.spec.volumes.find((v: any) => v.name === 'lmcache');
    expect(volume).toEqual({ name: 'lmcache', emptyDir: { sizeLimit: '210Gi' } });
    expect(out.main.volumeMounts).toContainEqual({ name: 'lmcache', mountPath: '/var/cache/lmcache' });
    expect(out.main.resources.requests['ephemeral-storage']).toBe('210Gi');
    // Only requested: a limit would count the logs and the writable layer too.
    expect(out.main.resources.limits['ephemeral-storage']).toBeUndefined();
    expect(out.main.lifecycle.postStart.exec.command.slice(-1)).toEqual(['/var/cache/lmcache']);
    // The drain's preStop stays beside it.
    expect(out.main.lifecycle.preStop).toBeDefined();
    expectValidOutput(out.objects);
  });

  test('a disk tier on a storage class: a generic ephemeral volume per pod, and no node disk requested', () => {
    const out = tiered({ cpu: Size.gibibytes(16), disk: Size.gibibytes(100), diskStorageClass: 'local-nvme' });
    expect(out.template.spec.volumes.find((v: any) => v.name === 'lmcache')).toEqual({
      name: 'lmcache',
      ephemeral: {
        volumeClaimTemplate: {
          spec: {
            accessModes: ['ReadWriteOnce'],
            storageClassName: 'local-nvme',
            resources: { requests: { storage: '105Gi' } },
          },
        },
      },
    });
    expect(out.main.resources.requests['ephemeral-storage']).toBeUndefined();
    expectValidOutput(out.objects);
  });

  test("LMCache's own parser reads the tiers the construct sized (lmcache 0.5.6)", () => {
    const out = tiered({ cpu: Size.gibibytes(30), disk: Size.gibibytes(100) }, { gpusPerReplica: 4 });
    const parsed = parsedByLmcache(lmcacheEnv(out.main));
    if (parsed === undefined) return;
    expect(parsed).toEqual({
      local_cpu: true,
      max_local_cpu_size: 7.5,
      local_disk: '/var/cache/lmcache',
      max_local_disk_size: 25,
      enable_kv_events: false,
    });
    // LMCache's GiB (local_cpu_backend.py int(size * 1024**3)) times the ranks is what the pod was given.
    const base = vllm({ gpusPerReplica: 4 });
    expect(bytes(out.main.resources.limits.memory) - bytes(base.main.resources.limits.memory)).toBe(
      (parsed.max_local_cpu_size as number) * GIB * 4,
    );
  });

  test("LMCache's own events stay off beside a gateway, which then scores approximately by default", () => {
    const synth = (scoring?: PrefixCacheScoring) => {
      const chart = new Chart(Testing.app(), 'c', { namespace: 'serving' });
      const svc = new VllmInferenceService(chart, 'llm', {
        name: 'llm',
        modelId: MODEL,
        kvCacheOffload: KvCacheOffload.lmcache({ cpu: Size.gibibytes(32) }),
      });
      new InferenceGateway(chart, 'gw', {
        name: 'llm',
        services: [svc],
        gateway: { name: 'edge' },
        ...(scoring ? { prefixCacheScoring: scoring } : {}),
      });
      const objects = Testing.synth(chart);
      const epp = objects.find(o => o.kind === 'Deployment' && o.metadata.name === 'llm-epp').spec.template.spec
        .containers[0];
      return {
        objects,
        main: objects.find(o => o.kind === 'StatefulSet').spec.template.spec.containers[0],
        config: epp.args[epp.args.indexOf('--config-text') + 1] as string,
      };
    };
    // The picker would never see LMCache's chunks (their events are off), so the tier is no reason to listen.
    const byDefault = synth();
    expect(byDefault.config).not.toMatch(/precise-prefix-cache-producer/);
    expect(byDefault.main.args).not.toContain('--kv-events-config');
    // Asked for, precise scoring hears vLLM's GPU blocks; LMCache's events, which would drop those batches, stay off.
    const precise = synth(PrefixCacheScoring.PRECISE);
    expect(precise.config).toMatch(/precise-prefix-cache-producer/);
    expect(precise.main.args).toContain('--kv-events-config');
    expect(lmcacheEnv(precise.main).LMCACHE_ENABLE_KV_EVENTS).toBe('false');
    expectValidOutput(precise.objects);
  });

  test('the postStart hook empties the disk directory, leaving what a link points at', () => {
    const out = tiered({ cpu: Size.gibibytes(8), disk: Size.gibibytes(20) });
    const command: string[] = out.main.lifecycle.postStart.exec.command;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lmcache-disk-'));
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'lmcache-outside-'));
    try {
      fs.writeFileSync(path.join(dir, 'model@2@0@abc@bfloat16.pt'), 'x');
      fs.writeFileSync(path.join(dir, '.hidden'), 'x');
      fs.mkdirSync(path.join(dir, 'sub', 'deeper'), { recursive: true });
      fs.writeFileSync(path.join(dir, 'sub', 'deeper', 'f'), 'x');
      fs.writeFileSync(path.join(outside, 'kept'), 'x');
      fs.symlinkSync(outside, path.join(dir, 'link'));
      const run = spawnSync('python3', [...command.slice(1, -1), dir], { encoding: 'utf8', timeout: 30_000 });
      expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
      expect(fs.readdirSync(dir)).toEqual([]);
      expect(fs.readdirSync(outside)).toEqual(['kept']);
      // An empty directory (the first start) is no failure either: a failing hook kills the container.
      expect(spawnSync('python3', [...command.slice(1, -1), dir]).status).toBe(0);
      // A directory the container's user cannot write fails the hook, where LMCache would lose its writes silently.
      // The hook runs as a user without rights to it (nobody, through setpriv, when the tests run as root).
      fs.chmodSync(dir, 0o555);
      // The system's python3: a user's shim (pyenv under /root) is not for nobody to run.
      const python = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
      const asUser =
        process.getuid?.() === 0
          ? ['setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', python, ...command.slice(1, -1), dir]]
          : [python, [...command.slice(1, -1), dir]];
      const refused = spawnSync(asUser[0] as string, asUser[1] as string[], { encoding: 'utf8', timeout: 30_000 });
      fs.chmodSync(dir, 0o755);
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toMatch(/PermissionError/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      fs.rmSync(outside, { recursive: true, force: true });
    }
  });

  test.each<[string, () => unknown, RegExp]>([
    [
      'SGLang',
      () =>
        servingOutput(
          c =>
            new SglangInferenceService(c, 'llm', {
              name: 'llm',
              modelId: MODEL,
              kvCacheOffload: KvCacheOffload.lmcache({ cpu: Size.gibibytes(8) }),
            }),
        ),
      /^SglangInferenceService 'llm': kvCacheOffload needs vLLM: SGLang's LMCache integration .* \(got "KvCacheOffload\.lmcache\(\)"\)/,
    ],
    [
      'TGI',
      () =>
        servingOutput(
          c =>
            new TgiInferenceService(c, 'llm', {
              name: 'llm',
              modelId: MODEL,
              kvCacheOffload: KvCacheOffload.lmcache({ cpu: Size.gibibytes(8) }),
            }),
        ),
      /^TgiInferenceService 'llm': kvCacheOffload needs vLLM or SGLang/,
    ],
    [
      'a storage class without a disk tier',
      () => tiered({ cpu: Size.gibibytes(8), diskStorageClass: 'local-nvme' }),
      /kvCacheOffload\.diskStorageClass needs a disk tier \(disk\) \(got "local-nvme"\)/,
    ],
    [
      'a storage class that is no DNS subdomain',
      () => tiered({ cpu: Size.gibibytes(8), disk: Size.gibibytes(8), diskStorageClass: 'Local_NVMe' }),
      /kvCacheOffload\.diskStorageClass must be a DNS-1123 subdomain/,
    ],
    [
      'a zero disk tier',
      () => tiered({ cpu: Size.gibibytes(8), disk: Size.gibibytes(0) }),
      /kvCacheOffload\.disk must be/,
    ],
    [
      'a disk tier without the CPU pool it stages through (from plain JavaScript)',
      () => tiered({ disk: Size.gibibytes(8) } as LmCacheTiers),
      /kvCacheOffload\.cpu must be a Size, e\.g\. Size\.gibibytes\(16\) \(got undefined\)/,
    ],
    [
      'a CPU share below 1 GiB a rank',
      () => tiered({ cpu: Size.gibibytes(3) }, { gpusPerReplica: 4 }),
      /kvCacheOffload\.cpu must give each tensor-parallel rank at least 1 GiB \(4 ranks\): LMCache's pools are per rank .* \(got "3Gi"\)/,
    ],
    [
      'a disk share below 1 GiB a rank',
      () => tiered({ cpu: Size.gibibytes(8), disk: Size.mebibytes(1500) }, { gpusPerReplica: 2 }),
      /kvCacheOffload\.disk must give each tensor-parallel rank at least 1 GiB \(2 ranks\)/,
    ],
    [
      'LoRA adapters, whose blocks LMCache would mix up',
      () =>
        tiered(
          { cpu: Size.gibibytes(8) },
          { loraAdapters: [{ name: 'sql', modelId: 'org/sql-lora', revision: 'v1' }] },
        ),
      /kvCacheOffload must not be KvCacheOffload\.lmcache\(\) with loraAdapters: LMCache 0\.5\.6 keys its chunks by their tokens alone/,
    ],
    [
      'a remote tier nothing sizes or admits',
      () => tiered({ cpu: Size.gibibytes(8) }, { env: { LMCACHE_REMOTE_URL: 'lm://cache:65432' } }),
      /env\.LMCACHE_REMOTE_URL must be left out with kvCacheOffload: it would add, replace or move tiers .* \(got "lm:\/\/cache:65432"\)/,
    ],
    [
      "the events switch, which would drop the picker's batches",
      () => tiered({ cpu: Size.gibibytes(8) }, { env: { LMCACHE_ENABLE_KV_EVENTS: 'true' } }),
      /env\.LMCACHE_ENABLE_KV_EVENTS is set by the construct; set kvCacheOffload instead/,
    ],
    [
      'a tier key the construct does not know',
      () => tiered({ cpu: Size.gibibytes(8), ssd: Size.gibibytes(8) } as LmCacheTiers),
      /kvCacheOffload.*ssd/,
    ],
    [
      'a memory that cannot hold the pinned pools beside /dev/shm',
      () => tiered({ cpu: Size.gibibytes(32) }, { memory: Size.gibibytes(32) }),
      /memory must hold the KV-cache offload tier \(kvCacheOffload, vLLM 0\.31\.0 .*lmcache_connector\.py; LMCache 0\.5\.6 .*\), 32Gi of pinned host memory/,
    ],
    [
      'a size the construct sets, in env',
      () => tiered({ cpu: Size.gibibytes(8) }, { env: { LMCACHE_MAX_LOCAL_CPU_SIZE: '64' } }),
      /env\.LMCACHE_MAX_LOCAL_CPU_SIZE is set by the construct; set kvCacheOffload instead/,
    ],
    [
      'a config file, which brings settings of its own',
      () => tiered({ cpu: Size.gibibytes(8) }, { env: { LMCACHE_CONFIG_FILE: '/etc/lmcache.yaml' } }),
      /env\.LMCACHE_CONFIG_FILE must be left out with kvCacheOffload: it would add, replace or move tiers the construct sizes .* \(got "\/etc\/lmcache\.yaml"\)/,
    ],
    [
      'hugepages, which the pod does not request',
      () => tiered({ cpu: Size.gibibytes(8) }, { env: { LMCACHE_LOCAL_CPU_USE_HUGEPAGES: 'true' } }),
      /env\.LMCACHE_LOCAL_CPU_USE_HUGEPAGES must be left out with kvCacheOffload/,
    ],
    [
      'the connector named again in extraArgs',
      () =>
        tiered(
          { cpu: Size.gibibytes(8) },
          { extraArgs: ['--kv-transfer-config', '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}'] },
        ),
      /extraArgs must not set --kv-transfer-config with kvCacheOffload: the tier's connector takes it/,
    ],
    [
      'a multi-node group',
      () => tiered({ cpu: Size.gibibytes(8) }, { gpusPerReplica: 4, nodes: 2 }),
      /kvCacheOffload needs a single-node replica \(nodes 1\)/,
    ],
    [
      'disaggregation, whose transfer takes the one connector',
      () => tiered({ cpu: Size.gibibytes(8) }, { disaggregation: Disaggregation.nixl() }),
      /kvCacheOffload must be left out with disaggregation: vLLM takes one connector in --kv-transfer-config/,
    ],
  ])('refused: %s', (_, make, message) => {
    expect(make).toThrow(message);
  });
});
