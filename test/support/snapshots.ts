import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { App } from 'cdk8s';

/** Synthesizes the example apps exactly as `cdk8s synth` does, into a fresh directory. */
export function synthApps(build: (app: App) => void): { dir: string; files: Record<string, string> } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cdk8s-gpu-apps-'));
  const app = new App({ outdir: dir });
  build(app);
  app.synth();
  const files: Record<string, string> = {};
  for (const f of fs.readdirSync(dir).sort()) files[f] = fs.readFileSync(path.join(dir, f), 'utf8');
  return { dir, files };
}

export function readDir(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  if (!fs.existsSync(dir)) return files;
  for (const f of fs
    .readdirSync(dir)
    .filter(f => f.endsWith('.yaml'))
    .sort())
    files[f] = fs.readFileSync(path.join(dir, f), 'utf8');
  return files;
}

/** A compact line diff: each changed hunk with two lines of context, `-` committed, `+` synthesized. */
export function lineDiff(expected: string, actual: string, context = 2): string {
  const a = expected.split('\n');
  const b = actual.split('\n');
  // LCS table; the files are small enough (a few hundred lines) for O(n*m).
  const n = a.length;
  const m = b.length;
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const ops: Array<[' ' | '-' | '+', string, number]> = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      ops.push([' ', a[i], i + 1]);
      i++;
      j++;
    } else if (i < n && (j >= m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      ops.push(['-', a[i], i + 1]);
      i++;
    } else {
      ops.push(['+', b[j], i + 1]);
      j++;
    }
  }
  const keep = new Set<number>();
  ops.forEach((op, k) => {
    if (op[0] !== ' ') for (let c = k - context; c <= k + context; c++) keep.add(c);
  });
  const out: string[] = [];
  let last = -2;
  ops.forEach((op, k) => {
    if (!keep.has(k)) return;
    if (k !== last + 1) out.push(`@@ line ${op[2]} @@`);
    out.push(`${op[0]} ${op[1]}`);
    last = k;
  });
  return out.join('\n');
}
