import { spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { kubeletExpand } from '../../src/common/kubelet-expansion';
import { scriptPath } from '../../src/common/runtime-scripts';
import { hubDownloadScript } from '../../src/inference/engine';
import { EngineCase, synthEngine } from '../inference/support';
import { HubFile, StandInHub } from './stand-in-hub';
import { missingTool } from './missing-tool';

/**
 * The real huggingface_hub releases the download is tested under, each in a virtualenv that
 * `.ci/run` creates from the package index under .cache/hub-venvs/<version>. 1.33 and 2.0 are
 * what the mirror holds; the default images carry older ones (see docs/serving.md).
 */
export const HUB_VERSIONS = ['1.33.0', '2.0.0'];
export const venvPython = (v: string) => path.join(__dirname, '..', '..', '.cache', 'hub-venvs', v, 'bin', 'python3');
export const hubInstalled = (v: string) => fs.existsSync(venvPython(v));

/** Says loudly (and fails in CI) that a huggingface_hub virtualenv is missing. */
export function missingVenvTest(v: string): void {
  test(`huggingface_hub ${v} is installed in .cache/hub-venvs, so that the download runs under it`, () => {
    const message = `!!! The model download was NOT run under huggingface_hub ${v}: ${venvPython(v)} is missing. Run .ci/run (it creates the virtualenvs from the package index).`;
    missingTool(message);
  });
}

const REPO = 'org/model';

/** A small repository like a real one: sharded and consolidated safetensors, .bin, Meta's original/. */
export function repository(extra: Record<string, HubFile> = {}): Record<string, HubFile> {
  const text = (s: string): HubFile => ({ content: Buffer.from(s), lfs: false });
  const blob = (n: number, seed: number): HubFile => ({
    content: Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff)),
    lfs: true,
  });
  return {
    '.gitattributes': text('*.safetensors filter=lfs\n'),
    'README.md': text('# model\n'),
    'config.json': text('{"architectures":["LlamaForCausalLM"]}'),
    'generation_config.json': text('{"temperature":0.6}'),
    'tokenizer.json': text('{"model":{"type":"BPE"}}'),
    'tokenizer_config.json': text('{"chat_template":"{{ messages }}"}'),
    'special_tokens_map.json': text('{"eos_token":"</s>"}'),
    'chat_template.jinja': text('{{ messages }}'),
    'model.safetensors.index.json': text(
      JSON.stringify({
        weight_map: { a: 'model-00001-of-00002.safetensors', b: 'model-00002-of-00002.safetensors' },
      }),
    ),
    'model-00001-of-00002.safetensors': blob(300_000, 1),
    'model-00002-of-00002.safetensors': blob(200_000, 2),
    'consolidated.safetensors': blob(500_000, 3),
    'pytorch_model.bin': blob(50_000, 4),
    'original/consolidated.00.pth': blob(50_000, 5),
    ...extra,
  };
}

export async function standInHub(files = repository()): Promise<StandInHub> {
  const hub = new StandInHub(REPO, files);
  await hub.start();
  return hub;
}

/** Per test: a fresh stand-in hub and scratch cache (handed to `set`), stopped and removed after it. */
export function hubPerTest(set: (hub: StandInHub, data: string) => void): void {
  let hub: StandInHub;
  let data: string;
  beforeEach(async () => {
    hub = await standInHub();
    data = scratch();
    set(hub, data);
  });
  afterEach(async () => {
    await hub.stop();
    fs.rmSync(data, { recursive: true, force: true });
  });
}

export interface Run {
  readonly status: number | null;
  readonly output: string;
}

/** A scratch HF_HOME: the cache volume. */
let shipped: string | undefined;
/** The download script as its ConfigMap ships it, in a file (what the pod's read-only mount holds). */
function shippedScript(): string {
  if (!shipped) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hub-download-script-'));
    process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
    shipped = path.join(dir, 'hub-download.py');
    fs.writeFileSync(shipped, hubDownloadScript().content, { mode: 0o444 });
  }
  return shipped;
}

/**
 * A download command as the pod runs it (`python3 <mounted script> ...`), with the script run from a
 * file holding what its ConfigMap ships.
 */
export function localDownload(argv: string[]): string[] {
  expect(argv[0]).toBe('python3');
  expect(argv[1]).toBe(scriptPath(hubDownloadScript()));
  return [argv[0], shippedScript(), ...argv.slice(2)];
}

export const scratch = () => fs.mkdtempSync(path.join(os.tmpdir(), 'hub-download-'));

/**
 * Runs the init container's command as synthesized (after the kubelet's `$(VAR)` expansion of it,
 * with its env) under a real huggingface_hub, the cache volume at `data`, the hub at `hub`.
 */
export function runDownload(
  e: EngineCase,
  version: string,
  data: string,
  hub: StandInHub | string,
  opts: {
    /** The model as the download receives it (the construct refuses vLLM's `repo:QUANT` form for now). */
    model?: string;
    revision?: string;
    env?: Record<string, string>;
    filler?: string;
    killAfterMs?: number;
  } = {},
): Promise<Run> {
  const { init } = synthEngine(e, { modelId: REPO, ...(opts.revision ? { revision: opts.revision } : {}) });
  expect(init.command[0]).toBe('python3');
  expect(init.command[3]).toBe(REPO);
  return runContainer(version, init, data, hub, {
    ...opts,
    command: opts.model ? (argv: string[]) => [...argv.slice(0, 3), opts.model!, ...argv.slice(4)] : undefined,
  });
}

/**
 * Runs a synthesized container's command (after the kubelet's `$(VAR)` expansion of it, with its
 * literal env, HF_TOKEN set) under a real huggingface_hub, the cache volume `/data` at `data`, the
 * hub at `hub`, in its own process group (killed whole after `killAfterMs`, as the kubelet kills a
 * container).
 */
export function runContainer(
  version: string,
  container: { command: string[]; env?: Array<{ name: string; value?: string }> },
  data: string,
  hub: StandInHub | string,
  opts: {
    env?: Record<string, string>;
    filler?: string;
    killAfterMs?: number;
    command?: (argv: string[]) => string[];
  } = {},
): Promise<Run> {
  const podEnv: Record<string, string> = {};
  for (const v of container.env ?? []) if (v.value !== undefined) podEnv[v.name] = kubeletExpand(v.value, podEnv);
  for (const [k, v] of Object.entries(podEnv)) podEnv[k] = v.replace(/^\/data(?=\/|$)/, data);
  podEnv.HF_TOKEN = 'hf_secret_token';
  let argv: string[] = container.command.map((a: string) => kubeletExpand(a, podEnv).replace(/^\/data(?=\/|$)/, data));
  if (opts.command) argv = opts.command(argv);
  argv = localDownload(argv);
  const env = {
    PATH: process.env.PATH!,
    ...podEnv,
    HOSTNAME: opts.filler ?? 'replica-0',
    HF_ENDPOINT: typeof hub === 'string' ? hub : hub.endpoint,
    HF_HUB_DISABLE_TELEMETRY: '1',
    HF_HUB_DISABLE_PROGRESS_BARS: '1',
    HF_HUB_ETAG_TIMEOUT: '5',
    HF_HUB_DOWNLOAD_TIMEOUT: '5',
    // The stall window starts at the fetch's spawn, so it includes the child's import of huggingface_hub (seconds
    // on a loaded machine); the trickle test sets its own.
    DOWNLOAD_STALL_SECONDS: '10',
    DOWNLOAD_STALL_BYTES: '4096',
    DOWNLOAD_LOCK_STALE_SECONDS: '3',
    DOWNLOAD_ATTEMPTS: '3',
    DOWNLOAD_BACKOFF_SECONDS: '0.1',
    ...opts.env,
  };
  return new Promise(resolve => {
    // Its own process group, killed whole as the kubelet kills a container's processes.
    const child = spawn(venvPython(version), argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    child.stdout.on('data', d => (output += d));
    child.stderr.on('data', d => (output += d));
    const timer = opts.killAfterMs
      ? setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), opts.killAfterMs)
      : undefined;
    child.on('close', status => {
      if (timer) clearTimeout(timer);
      resolve({ status, output });
    });
  });
}

/** The hub cache of a scratch HF_HOME, as the engines read it. */
export function cacheOf(data: string) {
  const repoDir = path.join(data, 'hub', 'models--org--model');
  const ref = (name = 'main') => {
    try {
      return fs.readFileSync(path.join(repoDir, 'refs', name), 'utf8').trim();
    } catch {
      return undefined;
    }
  };
  const snapshotFiles = (sha: string) => {
    const root = path.join(repoDir, 'snapshots', sha);
    const out: string[] = [];
    const walk = (d: string) => {
      for (const ent of fs.existsSync(d) ? fs.readdirSync(d, { withFileTypes: true }) : []) {
        const p = path.join(d, ent.name);
        if (ent.isDirectory()) walk(p);
        else out.push(path.relative(root, p));
      }
    };
    walk(root);
    return out.sort();
  };
  return { repoDir, ref, snapshotFiles };
}

/**
 * Opens files as an engine does at start: the real huggingface_hub with HF_HUB_OFFLINE=1 and no
 * revision (refs/main), as vLLM's and SGLang's transformers calls and TGI's router (hf-hub's cache
 * reads refs/main then snapshots/) do. Returns each file's bytes as base64, or null.
 */
export function openOffline(version: string, data: string, files: string[]): Promise<Record<string, string | null>> {
  const script = `
import base64, json, sys
from huggingface_hub import hf_hub_download
out = {}
for f in json.loads(sys.argv[1]):
    try:
        out[f] = base64.b64encode(open(hf_hub_download("${REPO}", f), "rb").read()).decode()
    except Exception as e:
        out[f] = None
print(json.dumps(out))
`;
  return new Promise((resolve, reject) => {
    const child = spawn(venvPython(version), ['-c', script, JSON.stringify(files)], {
      env: { PATH: process.env.PATH!, HF_HOME: data, HF_HUB_OFFLINE: '1', HF_HUB_DISABLE_TELEMETRY: '1' },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', d => (out += d));
    child.stderr.on('data', d => (err += d));
    child.on('close', code => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(err))));
  });
}
