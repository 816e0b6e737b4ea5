// `npm run bench`: installs what is missing (npm packages; Debian's torch, torchvision and torchaudio sources
// for the corpus), then runs scripts/bench.ts. Prints JSON; the last line holds every figure.
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { build, ensureNodeModules, ensureSandbox, ensureTorch, log, ROOT, run } from './setup.mjs';

ensureNodeModules();
// the bench times the bundled parse worker: a stale one would measure old code
build({ typecheck: false, bench: true });
ensureTorch({ required: false });
ensureSandbox();
if (!existsSync('/usr/lib/python3/dist-packages/torchaudio') && existsSync('/usr/bin/apt-get') && process.getuid?.() === 0) {
  log('bench', 'installing python3-torchaudio for the corpus');
  run('apt-get', ['install', '-y', '-q', '--no-install-recommends', 'python3-torchaudio'], {
    check: false,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}
const r = run(process.execPath, [join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), join(ROOT, 'scripts', 'bench.ts'), ...process.argv.slice(2)], {
  check: false,
});
process.exit(r.code);
