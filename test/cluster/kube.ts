import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as https from 'https';
import * as path from 'path';
import type { PodSecurityLevel as Level } from '../../src';
import { missingTool } from '../support/missing-tool';

/**
 * The tests' client for the real control plane that Jest's global setup starts (cluster.js): requests
 * with the admin certificate, server-side apply, namespaces under Pod Security, and `kubectl` of the
 * same release for what only kubectl does (the client-side apply and its three-way merge).
 */

interface State {
  readonly version: string;
  readonly apiserverPort: number;
  readonly kubeconfig: string;
}

const RUNS = process.env.CDK8S_GPU_CLUSTER_RUNS;
const VERSIONS: { kubernetes: string[] } = require('./versions.json');

/** The Kubernetes releases whose control planes run, oldest first, e.g. `v1.35.4`. */
export const SERVER_VERSIONS: string[] =
  RUNS === undefined ? [] : VERSIONS.kubernetes.filter(v => fs.existsSync(path.join(RUNS, v, 'state.json')));

/** `v1.35.4` -> `1.35`, the form the guard's `serverVersion` takes. */
export const minorOf = (version: string) => version.replace(/^v/, '').split('.').slice(0, 2).join('.');

/**
 * Runs `body` once per running control plane (each Kubernetes release pinned in versions.json), as a
 * describe block named with the release; without one, a single test that says why, loudly on a
 * developer's machine and failing in CI (as the shell and promtool tests do). `versions` narrows the
 * releases, e.g. to those the guard has rules for.
 */
export function describeCluster(
  name: string,
  body: (cluster: Cluster) => void,
  versions: (version: string) => boolean = () => true,
): void {
  const chosen = SERVER_VERSIONS.filter(versions);
  if (chosen.length === 0) {
    test(`a real API server runs, so that ${name} is judged by it`, () => {
      missingTool(
        `${name}: NOT checked by a real API server (${process.env.CDK8S_GPU_CLUSTER_MISSING ?? (RUNS ? 'no pinned release matches' : 'Jest ran without its global setup')}). ` +
          'Install Go (the control plane is built from Go modules; see docs/contributing.md).',
      );
    });
    return;
  }
  for (const v of chosen) describe(`${name} (Kubernetes ${v})`, () => body(new Cluster(v)));
}

export interface Response {
  readonly status: number;
  readonly body: any;
  /** The server's `Warning` headers (299 "- message"), e.g. Pod Security's "would violate". */
  readonly warnings: string[];
}

/** Socket errors of a kept-alive connection the server closed: the request is sent again. */
const RETRIED = new Set(['ECONNRESET', 'EPIPE']);
/** A webhook call the API server lost in transport on a kept-alive connection (net/http's wording). */
const WEBHOOK_TRANSPORT = /failed calling webhook .*: (write: broken pipe|read: connection reset by peer|EOF)$/;

interface Resource {
  readonly path: string;
  readonly namespaced: boolean;
}

export interface ApplyOptions {
  /** Server-side dry run: validation, admission and webhooks run; nothing is stored. */
  readonly dryRun?: boolean;
  /** @default 'cdk8s-gpu-test' */
  readonly fieldManager?: string;
  /** Take over fields another manager owns (what `kubectl apply --server-side --force-conflicts` does). */
  readonly force?: boolean;
}

/** A Pod Security level as its namespace label spells it: the library's own enum's values. */
export type PodSecurityLevel = `${Level}`;

/**
 * The labels of a namespace that enforces, and warns at, `level` at one version of the standards
 * (`v1.NN`), by default the server's own.
 */
export function podSecurityLabels(level: PodSecurityLevel, version = 'latest'): Record<string, string> {
  return {
    'pod-security.kubernetes.io/enforce': level,
    'pod-security.kubernetes.io/enforce-version': version,
    'pod-security.kubernetes.io/warn': level,
    'pod-security.kubernetes.io/warn-version': version,
  };
}

/** What the server said against an object, each a line: a refusal with its message, and every warning. */
export function problems(r: Response): string[] {
  return [
    ...(r.status >= 300 ? [`refused (${r.status}): ${r.body?.message ?? JSON.stringify(r.body)}`] : []),
    ...r.warnings.map(w => `warning: ${w}`),
  ];
}

/** One running control plane: requests with the admin certificate, and kubectl of its release. */
export class Cluster {
  readonly version: string;
  /** The guard's form of the release, `1.NN`. */
  readonly minor: string;
  private readonly state: State;
  private readonly dir: string;
  private agent?: https.Agent;
  private readonly discovery = new Map<string, Promise<Map<string, Resource>>>();

  constructor(version: string) {
    this.version = version;
    this.minor = minorOf(version);
    this.dir = path.join(RUNS!, version);
    this.state = JSON.parse(fs.readFileSync(path.join(this.dir, 'state.json'), 'utf8'));
  }

  /** The kubeconfig of this control plane's admin. */
  get kubeconfig(): string {
    return this.state.kubeconfig;
  }

  /**
   * The last `count` lines of one component's log (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
   * jobset, lws, kueue, kwok) that contain `containing`: what a controller said about a test's namespace, for a
   * failure message.
   */
  logLines(component: string, containing: string, count = 20): string[] {
    const file = path.join(this.dir, `${component}.log`);
    if (!fs.existsSync(file)) return [`(no log ${file})`];
    return fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter(line => line.includes(containing))
      .slice(-count);
  }

  /** kubectl of the server's release. */
  get kubectlPath(): string {
    return path.join(RUNS!, '..', 'bin', `kubernetes-${this.version}`, 'kubectl');
  }

  /**
   * One request to the API server; never rejects on an HTTP error status (the status is the answer).
   * A connection the server closed under a kept-alive socket ("socket hang up", ECONNRESET, EPIPE) is tried
   * again, three times at most, each on a new connection of its own (the pool's other kept-alive sockets may have
   * been closed with it, as a loaded server under the whole suite did), leaving the requests in flight on the pool
   * alone; every request the tests send is idempotent (gets, applies, dry runs). So is an answer of 500 saying the
   * server's call to a webhook lost its connection the same way (a broken pipe or a reset, not a refusal: a
   * webhook that is down stays the answer).
   */
  async request(method: string, urlPath: string, body?: unknown, contentType = 'application/json'): Promise<Response> {
    for (let attempt = 1; ; attempt++) {
      try {
        const r = await this.requestOnce(method, urlPath, body, contentType, attempt > 1);
        // The API server's own call to a webhook lost its kept-alive connection (the webhook server closed it): no
        // verdict of the webhook's, tried again as above.
        if (attempt < 4 && r.status === 500 && WEBHOOK_TRANSPORT.test(String(r.body?.message ?? ''))) {
          await new Promise(res => setTimeout(res, 250 * attempt));
          continue;
        }
        return r;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (attempt >= 4 || !(RETRIED.has(code ?? '') || /socket hang up/.test(String(e))))
          throw new Error(`${method} ${urlPath} on ${this.version}, attempt ${attempt}: ${String(e)}`);
        await new Promise(r => setTimeout(r, 250 * attempt));
      }
    }
  }

  private requestOnce(
    method: string,
    urlPath: string,
    body: unknown,
    contentType: string,
    ownConnection: boolean,
  ): Promise<Response> {
    const pki = (f: string) => fs.readFileSync(path.join(this.dir, 'pki', f));
    const tls = () => ({ ca: pki('ca.crt'), cert: pki('admin.crt'), key: pki('admin.key') });
    this.agent ??= new https.Agent({ keepAlive: true, maxSockets: 16, ...tls() });
    // A retry's connection is its own, closed after the answer.
    const agent = ownConnection ? new https.Agent({ keepAlive: false, ...tls() }) : this.agent;
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          port: this.state.apiserverPort,
          method,
          path: urlPath,
          agent,
          headers:
            payload === undefined ? {} : { 'content-type': contentType, 'content-length': Buffer.byteLength(payload) },
          timeout: 60_000,
        },
        res => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: any = text;
            try {
              parsed = JSON.parse(text);
            } catch {
              // plain text (healthz) stays text
            }
            const raw = res.headers.warning;
            const warnings = (Array.isArray(raw) ? raw : raw ? [raw] : []).map(w =>
              w.replace(/^299 - /, '').replace(/^"|"$/g, ''),
            );
            resolve({ status: res.statusCode ?? 0, body: parsed, warnings });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${urlPath}: no answer within 60 s`)));
      req.on('error', reject);
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  /** Closes the keep-alive connections so Jest's worker can exit. */
  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
  }

  /** The REST path of a kind of `apiVersion`, from the server's discovery (CRDs included). */
  async resourceOf(apiVersion: string, kind: string): Promise<Resource> {
    let kinds = this.discovery.get(apiVersion);
    if (!kinds) {
      const prefix = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
      kinds = this.request('GET', prefix).then(r => {
        if (r.status !== 200) throw new Error(`discovery of ${apiVersion}: ${r.status} ${JSON.stringify(r.body)}`);
        const map = new Map<string, Resource>();
        for (const res of r.body.resources as any[])
          if (!res.name.includes('/')) map.set(res.kind, { path: `${prefix}/${res.name}`, namespaced: res.namespaced });
        return map;
      });
      this.discovery.set(apiVersion, kinds);
      // A failed discovery (a CRD not yet served) is asked again next time.
      kinds.catch(() => this.discovery.delete(apiVersion));
    }
    const found = (await kinds).get(kind);
    if (!found) {
      this.discovery.delete(apiVersion);
      throw new Error(`the server serves no ${kind} in ${apiVersion}`);
    }
    return found;
  }

  /** The URL of the collection an object belongs to (its namespace's, for a namespaced kind). */
  async collectionOf(o: any): Promise<string> {
    const r = await this.resourceOf(o.apiVersion, o.kind);
    if (!r.namespaced) return r.path;
    const ns = o.metadata?.namespace;
    if (!ns) throw new Error(`${o.kind}/${o.metadata?.name} needs a namespace`);
    return r.path.replace(/\/([^/]+)$/, `/namespaces/${encodeURIComponent(ns)}/$1`);
  }

  /** The URL of one object. */
  async urlOf(o: any): Promise<string> {
    return `${await this.collectionOf(o)}/${encodeURIComponent(o.metadata.name)}`;
  }

  /**
   * Server-side apply of one object with strict field validation, as `kubectl apply --server-side`
   * sends it (an unknown or duplicate field is an error, not a warning).
   */
  async apply(o: any, options: ApplyOptions = {}): Promise<Response> {
    const query = new URLSearchParams({
      fieldManager: options.fieldManager ?? 'cdk8s-gpu-test',
      fieldValidation: 'Strict',
    });
    if (options.force) query.set('force', 'true');
    if (options.dryRun) query.set('dryRun', 'All');
    return this.request('PATCH', `${await this.urlOf(o)}?${query.toString()}`, o, 'application/apply-patch+yaml');
  }

  /** Creates one object (strict field validation), or only runs the create's checks with `dryRun`. */
  async create(o: any, dryRun = false): Promise<Response> {
    const query = new URLSearchParams({ fieldValidation: 'Strict' });
    if (dryRun) query.set('dryRun', 'All');
    return this.request('POST', `${await this.collectionOf(o)}?${query.toString()}`, o);
  }

  /** The stored object, as `kubectl get -o json` shows it (a live export). */
  async get(o: any): Promise<Response> {
    return this.request('GET', await this.urlOf(o));
  }

  /**
   * A namespace that enforces (and warns at) Pod Security `level`, at the server's own version of the
   * standards unless `version` (`v1.NN`) pins one, with its default service account made (pods are
   * refused until the controller makes it).
   */
  async namespace(
    name: string,
    level: PodSecurityLevel,
    version?: string,
    labels: Record<string, string> = {},
  ): Promise<void> {
    const r = await this.apply({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, labels: { ...podSecurityLabels(level, version), ...labels } },
    });
    if (r.status >= 300) throw new Error(`namespace ${name}: ${r.status} ${JSON.stringify(r.body)}`);
    await waitFor(`the default service account of ${name}`, 60, async () => {
      const sa = await this.request('GET', `/api/v1/namespaces/${name}/serviceaccounts/default`);
      return sa.status === 200 || `${sa.status}`;
    });
  }

  /**
   * Applies CustomResourceDefinitions and waits until each is Established and its kinds are served, so
   * the server itself enforces their schemas and CEL rules on what follows.
   */
  async installCrds(crds: readonly any[]): Promise<void> {
    for (const crd of crds) {
      const r = await this.apply(crd, { force: true });
      if (r.status >= 300) throw new Error(`CRD ${crd.metadata.name}: ${r.status} ${JSON.stringify(r.body)}`);
    }
    for (const crd of crds) {
      const url = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`;
      await waitFor(`CRD ${crd.metadata.name} Established`, 60, async () => {
        const r = await this.request('GET', url);
        const established = r.body?.status?.conditions?.find((c: any) => c.type === 'Established');
        return established?.status === 'True' || JSON.stringify(r.body?.status?.conditions ?? r.status);
      });
      for (const v of crd.spec.versions.filter((x: any) => x.served)) {
        await waitFor(`${crd.spec.names.kind} served in ${crd.spec.group}/${v.name}`, 60, async () => {
          try {
            await this.resourceOf(`${crd.spec.group}/${v.name}`, crd.spec.names.kind);
            return true;
          } catch (e) {
            return String(e);
          }
        });
      }
    }
  }

  /** `kubectl` of the server's release, against this control plane; never throws on a non-zero exit. */
  kubectl(args: string[], input?: string): { status: number; stdout: string; stderr: string } {
    const r = spawnSync(this.kubectlPath, args, {
      input,
      encoding: 'utf8',
      env: { ...process.env, KUBECONFIG: this.state.kubeconfig },
      maxBuffer: 512 * 1024 * 1024,
    });
    if (r.error) throw r.error;
    return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
  }
}

/** Runs `work` over `items` with at most `limit` in flight; results in input order. */
export async function pool<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T, i: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Waits until `check` is true, polling, for at most `seconds`; the error says what was last seen. */
export async function waitFor(what: string, seconds: number, check: () => Promise<true | string>): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const last = await check();
    if (last === true) return;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${seconds} s (last: ${last})`);
    await new Promise(r => setTimeout(r, 200));
  }
}
