import * as fs from 'fs';
import * as path from 'path';

let counter = 0;

/**
 * Writes a projected volume the way the kubelet's AtomicWriter does
 * (kubernetes/kubernetes pkg/volume/util/atomic_writer.go):
 * 1. the payload goes into a new hidden timestamped directory `..<timestamp>`;
 * 2. a symlink `..data_tmp` to it is created and renamed over `..data` (atomic);
 * 3. each visible name is a symlink `<key> -> ..data/<key>`, created once;
 * 4. the previous timestamped directory is removed.
 * A file's inode never changes in place: readers only ever see a renamed symlink.
 */
export function atomicWrite(dir: string, payload: Record<string, string>): void {
  fs.mkdirSync(dir, { recursive: true });
  const dataLink = path.join(dir, '..data');
  const previous = fs.existsSync(dataLink) ? fs.readlinkSync(dataLink) : undefined;
  const stamp = `..${new Date().toISOString().replace(/[-:.TZ]/g, '_')}${process.pid}_${counter++}`;
  const tsDir = path.join(dir, stamp);
  fs.mkdirSync(tsDir);
  for (const [key, value] of Object.entries(payload)) fs.writeFileSync(path.join(tsDir, key), value, { mode: 0o440 });
  const tmpLink = path.join(dir, '..data_tmp');
  fs.symlinkSync(stamp, tmpLink);
  fs.renameSync(tmpLink, dataLink);
  for (const key of Object.keys(payload)) {
    const visible = path.join(dir, key);
    if (!fs.existsSync(visible)) fs.symlinkSync(path.join('..data', key), visible);
  }
  if (previous) fs.rmSync(path.join(dir, previous), { recursive: true, force: true });
}
