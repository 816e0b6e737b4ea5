// `npm run build` checks the Python side too: Ruff (its WebAssembly build from npm) formats python-runner as
// `ruff format` does (a file it would change is a finding; `--write` formats it) and lints it (RULES below, at the
// TypeScript side's width), pyright checks the judge package, and the judge's
// rooms keep to their processes (pythonRooms.mjs). Exits 1 on any finding, printing each as FILE:LINE:COL CODE message.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { pythonFiles, roomProblems } from './pythonRooms.mjs';

const ROOT = join(fileURLToPath(import.meta.url), '..', '..');
const RUNNER = join(ROOT, 'python-runner');
const require = createRequire(import.meta.url);

const { Workspace, PositionEncoding } = require('@astral-sh/ruff-wasm-nodejs');
// the width of .prettierrc's printWidth: one line length for both languages
// pyflakes, pycodestyle errors, bugbear, blind `except`, security (bandit), naming and builtins shadowed; a `# noqa`
// for a rule that is off or does not fire is itself a finding (RUF100). Left off: bugbear's `raise ... from` and loop
// variables in closures (the judge's own style), lambdas bound to names, exception names without "Error" (the wire's
// Failure), and bandit's "subprocess called" (every call passes a list, never a shell).
const RULES = {
  select: ['E4', 'E5', 'E7', 'E9', 'F', 'B', 'BLE', 'S', 'N', 'A', 'RUF100'],
  ignore: ['B904', 'B023', 'B905', 'E731', 'N818', 'S603'],
};
const ruff = new Workspace({ 'line-length': 160, lint: RULES }, PositionEncoding.Utf16);
// tests assert with `assert` where unittest has no method for it
const ruffForTests = new Workspace({ 'line-length': 160, lint: { ...RULES, ignore: [...RULES.ignore, 'S101'] } }, PositionEncoding.Utf16);
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
  for (const d of (file.startsWith(join(RUNNER, 'tests')) ? ruffForTests : ruff).check(text)) {
    findings++;
    console.log(`${relative(ROOT, file)}:${d.start_location.row}:${d.start_location.column} ${d.code ?? ''} ${d.message}`);
  }
}
for (const problem of roomProblems(join(RUNNER, 'nnrag_judge'), ROOT)) {
  findings++;
  console.log(problem);
}
// pyright: the judge's side and the wire in standard mode; the worker's side (torch, untyped) in basic mode
for (const config of ['pyrightconfig.json', 'pyrightconfig.worker.json']) {
  const pyright = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'pyright', 'index.js'), '-p', join(RUNNER, config)], { encoding: 'utf8' });
  if (pyright.status !== 0) {
    findings++;
    process.stdout.write(pyright.stdout);
    process.stderr.write(pyright.stderr);
  }
}
console.log(`[lint:python] ruff, rooms and pyright: ${findings ? `${findings} findings` : 'clean'}`);
process.exit(findings ? 1 : 0);
