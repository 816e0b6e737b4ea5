// `npm run build` checks the Python side too: Ruff (its WebAssembly build from npm: pyflakes, pycodestyle errors,
// bugbear, with the project's line length) over python-runner, and pyright over the judge package. Exits 1 on any
// finding, printing each as FILE:LINE:COL CODE message.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = join(fileURLToPath(import.meta.url), '..', '..');
const RUNNER = join(ROOT, 'python-runner');
const require = createRequire(import.meta.url);

function pythonFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (name === '__pycache__') continue;
    if (statSync(p).isDirectory()) out.push(...pythonFiles(p));
    else if (name.endsWith('.py')) out.push(p);
  }
  return out.sort();
}

const { Workspace, PositionEncoding } = require('@astral-sh/ruff-wasm-nodejs');
const ruff = new Workspace({ 'line-length': 140, lint: { select: ['E4', 'E7', 'E9', 'F', 'B'], ignore: ['B904', 'B023', 'B905', 'E731'] } }, PositionEncoding.Utf16);
let findings = 0;
for (const file of pythonFiles(RUNNER)) {
  for (const d of ruff.check(readFileSync(file, 'utf8'))) {
    findings++;
    console.log(`${relative(ROOT, file)}:${d.start_location.row}:${d.start_location.column} ${d.code ?? ''} ${d.message}`);
  }
}
const pyright = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'pyright', 'index.js'), '-p', join(RUNNER, 'pyrightconfig.json')], { encoding: 'utf8' });
if (pyright.status !== 0) {
  findings++;
  process.stdout.write(pyright.stdout);
  process.stderr.write(pyright.stderr);
}
console.log(`[lint:python] ruff and pyright: ${findings ? `${findings} findings` : 'clean'}`);
process.exit(findings ? 1 : 0);
