// `npm run demo`: installs what is missing, builds, indexes the default corpus (the shipped example repository,
// plus the interpreter's torchvision when installed), searches, pulls and validates a block, says where it is.
// Works offline.
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { build, ensureNodeModules, ensureSandbox, ensureTorch, log, ROOT, run } from './setup.mjs';

const cli = (...args) => run(process.execPath, [join(ROOT, 'dist', 'cli.js'), ...args], { check: false });
const out = join(ROOT, 'demo-output');
const db = join(out, 'index.db');

try {
  ensureNodeModules();
  const python = ensureTorch({ required: false });
  ensureSandbox();
  build({ typecheck: false });
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });

  log('demo', 'indexing the example repository examples/tinyblocks');
  if (cli('index', join(ROOT, 'examples', 'tinyblocks'), '--db', db).code !== 0) throw new Error('indexing failed');
  const tv = python ? run(python, ['-c', 'import torchvision'], { check: false, capture: true }).code === 0 : false;
  if (tv) {
    log('demo', `indexing the installed torchvision of ${python} (no clone: read in place)`);
    if (cli('index', '--python-env', python, '--packages', 'torchvision', '--db', db).code !== 0) throw new Error('indexing torchvision failed');
  }
  cli('stats', '--db', db);

  log('demo', "searching for 'residual block'");
  cli('search', 'residual block', '--db', db, '--limit', '5');

  const file = join(out, 'residual_block.py');
  log('demo', 'pulling tinyblocks.blocks.ResidualBlock into one dependency-closed file');
  const pull = cli(
    'pull',
    'tinyblocks:tinyblocks.blocks.ResidualBlock',
    '--db',
    db,
    '--out',
    file,
    ...(python ? ['--python', python] : ['--no-validate']),
    '--requirements',
  );
  if (!existsSync(file)) throw new Error('the pull wrote no file');
  if (tv) {
    const basic = join(out, 'basic_block.py');
    log('demo', 'pulling torchvision.models.resnet.BasicBlock from the installed torchvision');
    cli('pull', 'torchvision:torchvision.models.resnet.BasicBlock', '--db', db, '--out', basic, '--python', python);
  }
  log('demo', `done: the pulled block is ${file}${python ? '' : ' (not validated: no Python with torch here)'}`);
  log('demo', `index: ${db}; try: node dist/cli.js search attention --db ${db}`);
  process.exit(pull.code === 0 ? 0 : 1);
} catch (err) {
  console.error(`[demo] ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
