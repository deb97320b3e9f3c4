#!/usr/bin/env node
// Copies every non-TypeScript file under src/ (sidecar scripts, API definitions) to the same place
// under lib/, so the compiled package finds them next to the code that reads them. Markdown notes
// beside vendored data (their sources) are for maintainers, not read at run time.
const fs = require('fs');
const path = require('path');

const src = path.join(__dirname, '..', 'src');
const lib = path.join(__dirname, '..', 'lib');

function copy(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const from = path.join(dir, entry.name);
    if (entry.isDirectory()) copy(from);
    else if (!entry.name.endsWith('.ts') && !entry.name.endsWith('.md')) {
      const to = path.join(lib, path.relative(src, from));
      fs.mkdirSync(path.dirname(to), { recursive: true });
      fs.copyFileSync(from, to);
    }
  }
}
copy(src);
