// `npm run test:integration`: the real-VS-Code suite and the UI walk alone. Installs what they need (npm packages,
// Debian's torch and chromium, Node 24 and code-server in .vscode-test/), builds with the test bundles, then runs
// test/integration/runCodeServer.ts. `npm test` calls `integration()` too. Last line: "integration: N passed, N failed".
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, ensureNodeModules, ensureSandbox, ensureTorch, log, ROOT, run } from './setup.mjs';
import { packageVsix } from './package.mjs';
import { ensureVsCodeHarness } from './vscodeHarness.mjs';

/**
 * Packages the .vsix (a production build), rebuilds for development with the test bundles, then runs the suite,
 * the UI walk and the installed-.vsix check. Returns { passed, failed, code } (a setup failure counts as one failure).
 */
export function integration({ extraArgs = [] } = {}) {
  let harness;
  const tmp = mkdtempSync(join(tmpdir(), 'nnrag-vsix-'));
  try {
    harness = ensureVsCodeHarness();
    const vsix = packageVsix(join(tmp, 'nn-rag.vsix'));
    build({ typecheck: false, tests: true });
    extraArgs = [...extraArgs, '--vsix', vsix];
  } catch (err) {
    log('integration', `cannot set up: ${err instanceof Error ? err.message : String(err)}`);
    rmSync(tmp, { recursive: true, force: true });
    return { passed: 0, failed: 1, code: 1 };
  }
  const tsx = join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');
  const r = run(process.execPath, [tsx, join(ROOT, 'test', 'integration', 'runCodeServer.ts'), ...extraArgs], {
    check: false,
    capture: true,
    env: { ...process.env, NNRAG_HARNESS: JSON.stringify(harness) },
  });
  rmSync(tmp, { recursive: true, force: true });
  process.stdout.write(r.stdout);
  process.stderr.write(r.stderr);
  const m = /integration: (\d+) passed, (\d+) failed/.exec(r.stdout);
  return { passed: Number(m?.[1] ?? 0), failed: Number(m?.[2] ?? 1), code: r.code };
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    ensureNodeModules();
    ensureTorch();
    ensureSandbox();
    const r = integration({ extraArgs: process.argv.slice(2) });
    process.exit(r.code === 0 && r.failed === 0 ? 0 : 1);
  } catch (err) {
    console.error(`[integration] ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}
