// `npm run package`: the .vsix users install. Installs npm packages when missing, then `vsce package` (which runs
// `vscode:prepublish`, the minified production build). Everything the extension needs is bundled into dist/, so no
// node_modules go into the package (.vscodeignore is an allowlist). Prints the path of the .vsix.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureNodeModules, log, packageVersion, ROOT, run } from './setup.mjs';

export function packageVsix(out = join(ROOT, `nn-rag-${packageVersion()}.vsix`)) {
  ensureNodeModules();
  run(process.execPath, [join(ROOT, 'node_modules', 'eslint', 'bin', 'eslint.js'), 'src'], { cwd: ROOT });
  const vsce = join(ROOT, 'node_modules', '@vscode', 'vsce', 'vsce');
  run(process.execPath, [vsce, 'package', '--no-dependencies', '--skip-license', '--no-rewrite-relative-links', '--out', out]);
  if (!existsSync(out)) throw new Error(`vsce did not write ${out}`);
  log('package', `${out} (${(statSync(out).size / 1024).toFixed(0)} KB)`);
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    packageVsix(process.argv[2]);
  } catch (err) {
    console.error(`[package] ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}
