import * as crypto from 'crypto';
import * as http from 'http';
import { AddressInfo } from 'net';

/**
 * A stand-in Hugging Face Hub on 127.0.0.1 with the endpoints the real huggingface_hub calls to
 * download a model, and faults to inject:
 * - `GET /api/models/{repo}[/revision/{rev}]` (HfApi.model_info; `?blobs=true` with files_metadata):
 *   the commit sha and every file's size, git blob id and LFS sha256.
 * - `HEAD|GET /{repo}/resolve/{rev}/{file}` (hf_hub_download): X-Repo-Commit, ETag (git blob id),
 *   X-Linked-Etag and X-Linked-Size for LFS files (huggingface_hub constants.py
 *   HUGGINGFACE_HEADER_X_*), and `Range: bytes=N-` answered with 206.
 */
export interface HubFile {
  readonly content: Buffer;
  /** Stored in LFS (weights): the hub then gives a sha256 and X-Linked-Etag. */
  readonly lfs: boolean;
}

export type Fault =
  | { kind: 'status'; status: number; times: number }
  /** Sends part of the body, then closes the connection. */
  | { kind: 'truncate'; times: number }
  /** Sends the whole body with one byte changed. */
  | { kind: 'corrupt'; times: number }
  /** One byte every `everyMs`. */
  | { kind: 'trickle'; everyMs: number; times: number }
  /** Answers a Range request with 200 and the whole body (a proxy that ignores Range). */
  | { kind: 'ignoreRange'; times: number };

export interface RequestRecord {
  readonly method: string;
  readonly path: string;
  readonly range?: string;
}

export const sha256 = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');
export const gitBlobId = (b: Buffer) =>
  crypto
    .createHash('sha1')
    .update(Buffer.concat([Buffer.from(`blob ${b.length}\0`), b]))
    .digest('hex');

export class StandInHub {
  readonly requests: RequestRecord[] = [];
  /** Faults by target: `info` (the model_info call) or a file name; each spends one `times` per request. */
  readonly faults = new Map<string, Fault[]>();
  private server?: http.Server;

  constructor(
    readonly repo: string,
    readonly files: Record<string, HubFile>,
    readonly sha = crypto.randomBytes(20).toString('hex'),
  ) {}

  get endpoint(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  fault(target: string, f: Fault): void {
    this.faults.set(target, [...(this.faults.get(target) ?? []), f]);
  }

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => this.handle(req, res));
    this.server.keepAliveTimeout = 100;
    await new Promise<void>(r => this.server!.listen(0, '127.0.0.1', r));
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>(r => this.server!.close(() => r()));
  }

  private take(target: string): Fault | undefined {
    const list = this.faults.get(target) ?? [];
    const f = list.find(x => x.times > 0);
    if (f) (f as { times: number }).times--;
    return f;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url!, 'http://x');
    const p = decodeURIComponent(url.pathname);
    this.requests.push({ method: req.method!, path: p, ...(req.headers.range ? { range: req.headers.range } : {}) });
    const info = `/api/models/${this.repo}`;
    if (p === info || p.startsWith(`${info}/revision/`)) {
      const f = this.take('info');
      if (f?.kind === 'status') return this.status(res, f.status);
      const rev = p === info ? 'main' : p.slice(`${info}/revision/`.length);
      if (rev !== 'main' && rev !== this.sha) return this.status(res, 404, 'RevisionNotFound');
      return this.json(res, {
        id: this.repo,
        sha: this.sha,
        siblings: Object.entries(this.files).map(([name, f]) => ({
          rfilename: name,
          size: f.content.length,
          blobId: gitBlobId(f.content),
          ...(f.lfs ? { lfs: { size: f.content.length, sha256: sha256(f.content), pointerSize: 134 } } : {}),
        })),
      });
    }
    const resolve = new RegExp(`^/${this.repo}/resolve/([^/]+)/(.+)$`).exec(p);
    if (!resolve) return this.status(res, 404, 'RepoNotFound');
    const [, rev, name] = resolve;
    const file = this.files[name];
    if ((rev !== 'main' && rev !== this.sha) || !file) return this.status(res, 404, 'EntryNotFound');
    const headers: http.OutgoingHttpHeaders = {
      'X-Repo-Commit': this.sha,
      ETag: `"${gitBlobId(file.content)}"`,
      'Accept-Ranges': 'bytes',
      'Content-Type': 'application/octet-stream',
    };
    if (file.lfs) {
      headers['X-Linked-Etag'] = `"${sha256(file.content)}"`;
      headers['X-Linked-Size'] = String(file.content.length);
    }
    if (req.method === 'HEAD') {
      res.writeHead(200, { ...headers, 'Content-Length': file.content.length });
      return void res.end();
    }
    const f = this.take(name);
    if (f?.kind === 'status') return this.status(res, f.status);
    let body = file.content;
    let code = 200;
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    if (range && f?.kind !== 'ignoreRange') {
      const start = Number(range[1]);
      if (start >= body.length) {
        res.writeHead(416, { 'Content-Range': `bytes */${body.length}` });
        return void res.end();
      }
      headers['Content-Range'] = `bytes ${start}-${body.length - 1}/${body.length}`;
      body = body.subarray(start);
      code = 206;
    }
    if (f?.kind === 'corrupt') {
      body = Buffer.from(body);
      body[body.length >> 1] ^= 0xff;
    }
    res.writeHead(code, { ...headers, 'Content-Length': body.length });
    if (f?.kind === 'truncate') {
      res.write(body.subarray(0, body.length >> 1));
      setTimeout(() => res.destroy(), 50);
      return;
    }
    if (f?.kind === 'trickle') {
      let i = 0;
      const tick = setInterval(() => {
        if (res.destroyed || i >= body.length) {
          clearInterval(tick);
          return void res.end();
        }
        res.write(body.subarray(i, ++i));
      }, f.everyMs);
      res.on('close', () => clearInterval(tick));
      return;
    }
    res.end(body);
  }

  private status(res: http.ServerResponse, status: number, code?: string): void {
    res.writeHead(status, { 'Content-Type': 'application/json', ...(code ? { 'X-Error-Code': code } : {}) });
    res.end(JSON.stringify({ error: `stand-in hub: ${status}` }));
  }

  private json(res: http.ServerResponse, body: unknown): void {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  }
}
