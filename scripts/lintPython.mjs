// `npm run build` checks the Python side too: Ruff (its WebAssembly build from npm) formats python-runner as
// `ruff format` does (a file it would change is a finding; `--write` formats it) and lints it (pyflakes, pycodestyle
// errors, long lines, bugbear, at the TypeScript side's width), and pyright checks the judge package. Exits 1 on any
// finding, printing each as FILE:LINE:COL CODE message.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
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
// the width of .prettierrc's printWidth: one line length for both languages
const ruff = new Workspace(
  { 'line-length': 160, lint: { select: ['E4', 'E5', 'E7', 'E9', 'F', 'B'], ignore: ['B904', 'B023', 'B905', 'E731'] } },
  PositionEncoding.Utf16,
);
const write = process.argv.includes('--write');
let findings = 0;
for (const file of pythonFiles(RUNNER)) {
  let text = readFileSync(file, 'utf8');
  const formatted = ruff.format(text);
  if (formatted !== text) {
    if (write) writeFileSync(file, (text = formatted));
    else {
      findings++;
      console.log(`${relative(ROOT, file)}:1:1 format: not formatted as ruff format formats it (npm run format)`);
    }
  }
  for (const d of ruff.check(text)) {
    findings++;
    console.log(`${relative(ROOT, file)}:${d.start_location.row}:${d.start_location.column} ${d.code ?? ''} ${d.message}`);
  }
}
const pyright = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'pyright', 'index.js'), '-p', join(RUNNER, 'pyrightconfig.json')], {
  encoding: 'utf8',
});
if (pyright.status !== 0) {
  findings++;
  process.stdout.write(pyright.stdout);
  process.stderr.write(pyright.stderr);
}
console.log(`[lint:python] ruff and pyright: ${findings ? `${findings} findings` : 'clean'}`);
process.exit(findings ? 1 : 0);
