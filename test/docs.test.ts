import * as fs from 'fs';
import * as path from 'path';
import { API_DOCS, renderApiDocs } from '../scripts/api-docs';

const committed = fs.readFileSync(API_DOCS, 'utf8');

describe('API reference', () => {
  test('docs/API.md is generated from the current doc comments (regenerate with `npm run docs`)', () => {
    expect(committed).toBe(renderApiDocs());
  });

  test('documents every runtime export', () => {
    const api = require(path.join(__dirname, '..', 'lib', 'index.js'));
    const missing = Object.keys(api).filter(name => !committed.includes(`\n### ${name}\n`));
    expect(missing).toEqual([]);
  });
});
