// Installs what a fresh machine lacks (npm packages, Debian's torch) and builds. Plain Node, no dependencies:
// `npm test`, `npm run demo` and `npm run bench` call it before anything else.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const TORCH_PYTHON = process.env.NNRAG_TEST_PYTHON || '/usr/bin/python3';

export function log(area, message) {
  console.log(`[${area}] ${message}`);
}

/** Runs a command, streaming its output; returns its exit code (throws when `check` and it failed). */
export function run(cmd, args, { check = true, cwd = ROOT, env = process.env, capture = false } = {}) {
  const res = spawnSync(cmd, args, { cwd, env, stdio: capture ? ['ignore', 'pipe', 'pipe'] : 'inherit', encoding: 'utf8' });
  if (res.error) {
    if (check) throw new Error(`${cmd}: ${res.error.message}`);
    return { code: 127, stdout: '', stderr: res.error.message };
  }
  if (check && res.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${res.status}`);
  return { code: res.status ?? 1, stdout: res.stdout ?? '', stderr: res.stderr ?? '' };
}

/** npm packages: installed from the lock file when node_modules is missing or older than the lock. */
export function ensureNodeModules() {
  const marker = join(ROOT, 'node_modules', '.package-lock.json');
  const lock = join(ROOT, 'package-lock.json');
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs && existsSync(join(ROOT, 'node_modules', 'esbuild'))) return;
  log('setup', 'installing npm packages (npm ci)');
  run('npm', ['ci', '--no-audit', '--no-fund']);
}

function hasTorch(python) {
  return run(python, ['-c', 'import torch, torchvision'], { check: false, capture: true }).code === 0;
}

/** Installs Debian packages with apt-get when we are root (or have password-less sudo); returns whether it tried. */
export function aptInstall(packages, why) {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!existsSync('/usr/bin/apt-get') || !(isRoot || existsSync('/usr/bin/sudo'))) return false;
  const pre = isRoot ? [] : ['sudo', '-n'];
  log('setup', `installing ${packages.join(', ')} from Debian (${why})`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const cmd = (args) => (pre.length ? run(pre[0], [...pre.slice(1), ...args], { env, check: false }) : run(args[0], args.slice(1), { env, check: false }));
  if (cmd(['apt-get', 'install', '-y', '-q', '--no-install-recommends', ...packages]).code !== 0) {
    // the package lists may be missing or stale on a fresh machine
    cmd(['apt-get', 'update', '-q']);
    cmd(['apt-get', 'install', '-y', '-q', '--no-install-recommends', ...packages]);
  }
  return true;
}

/** Debian's python3-torch and python3-torchvision (torch 1.13 for /usr/bin/python3), installed when missing. */
export function ensureTorch({ required = true } = {}) {
  if (hasTorch(TORCH_PYTHON)) return TORCH_PYTHON;
  aptInstall(['python3-torch', 'python3-torchvision'], 'about 2 minutes');
  if (hasTorch(TORCH_PYTHON)) return TORCH_PYTHON;
  const message = `${TORCH_PYTHON} has no torch; install it (on Debian: apt-get install python3-torch python3-torchvision) or set NNRAG_TEST_PYTHON`;
  if (required) throw new Error(message);
  log('setup', message);
  return undefined;
}

/** Debian's bubblewrap: the sandbox validation runs blocks in (without it, reports say "weaker sandbox"). */
export function ensureSandbox() {
  if (process.platform !== 'linux' || run('bwrap', ['--version'], { check: false, capture: true }).code === 0) return;
  aptInstall(['bubblewrap'], 'the validation sandbox');
  if (run('bwrap', ['--version'], { check: false, capture: true }).code !== 0)
    log('setup', 'bubblewrap is not installed: validation will run in a weaker sandbox (apt-get install bubblewrap)');
}

/** Debian's Slurm and MUNGE, for the one-node cluster the Slurm test starts (it says why it is skipped without them). */
export function ensureSlurm() {
  const have = () => ['/usr/sbin/slurmctld', '/usr/sbin/slurmd', '/usr/sbin/munged', '/usr/bin/sbatch'].every((f) => existsSync(f));
  if (process.platform !== 'linux' || have()) return;
  aptInstall(['slurm-wlm', 'munge'], 'a one-node Slurm cluster for the shard test');
  if (!have()) log('setup', 'Slurm is not installed (apt-get install slurm-wlm munge needs root): the Slurm test is skipped');
}

/** What `--build-native` compiles with for Debian's torch: g++, ninja, Python's and torch's headers (libtorch-dev,
 * pybind11-dev); its test says why it is skipped without them. */
export function ensureNativeBuild() {
  const have = () => ['/usr/bin/g++', '/usr/bin/ninja', '/usr/include/torch/extension.h', '/usr/include/pybind11/pybind11.h'].every((f) => existsSync(f));
  if (process.platform !== 'linux' || have()) return;
  aptInstall(['g++', 'ninja-build', 'python3-dev', 'libtorch-dev', 'pybind11-dev'], 'a C++ toolchain for the --build-native test');
  if (!have())
    log(
      'setup',
      'g++, ninja or the torch headers are missing (apt-get install g++ ninja-build python3-dev libtorch-dev pybind11-dev needs root): the --build-native test is skipped',
    );
}

/** The TypeScript the formatter keeps (prettier, `.prettierrc.json`). */
export const FORMATTED = ['src/**/*.ts', 'test/**/*.ts', 'scripts/**/*.ts', 'bench/**/*.ts'];

/** Layer check (ESLint, over src, scripts and bench), the format check, type check and bundles. */
export function build({ typecheck = true, tests = false, bench = false } = {}) {
  run(process.execPath, [join(ROOT, 'node_modules', 'eslint', 'bin', 'eslint.js'), 'src', 'scripts', 'bench'], { cwd: ROOT });
  run(process.execPath, [join(ROOT, 'node_modules', 'prettier', 'bin', 'prettier.cjs'), '--check', '--log-level', 'warn', ...FORMATTED], { cwd: ROOT });
  run(process.execPath, [join(ROOT, 'scripts', 'lintPython.mjs')], { cwd: ROOT });
  if (typecheck) {
    log('build', 'type-checking (tsc --noEmit)');
    run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', ROOT, '--noEmit']);
  }
  run(process.execPath, [join(ROOT, 'esbuild.config.mjs'), ...(tests ? ['--tests'] : []), ...(bench ? ['--bench'] : [])]);
}

export function packageVersion() {
  return JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
}
