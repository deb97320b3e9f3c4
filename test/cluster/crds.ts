import * as fs from 'fs';
import * as path from 'path';

const CRDS = path.join(__dirname, '..', '..', 'src', 'validation', 'crds');

/** The CustomResourceDefinitions the library vendors (src/validation/crds/sources.json), whole. */
export function vendoredCrds(): any[] {
  const sources: Array<{ file: string }> = JSON.parse(fs.readFileSync(path.join(CRDS, 'sources.json'), 'utf8'));
  return sources.map(s => JSON.parse(fs.readFileSync(path.join(CRDS, s.file), 'utf8')));
}
