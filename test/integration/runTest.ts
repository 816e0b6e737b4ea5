/**
 * The same integration suite under @vscode/test-electron, for machines that can download VS Code (these machines
 * cannot: `npm test` uses runCodeServer.ts). Run: `npx tsx test/integration/runTest.ts` after
 * `node esbuild.config.mjs --tests`. Runs the trusted suite (trust disabled), then the untrusted one.
 */
import { readFileSync, rmSync } from 'fs';
import * as path from 'path';
import { runTests } from '@vscode/test-electron';
import { makeWorkspace, ROOT } from './workspace';

async function main(): Promise<void> {
  const python = process.env.NNRAG_TEST_PYTHON || '/usr/bin/python3';
  let failed = 0;
  for (const mode of ['trusted', 'untrusted'] as const) {
    const ws = makeWorkspace(python, { preview: false });
    const result = path.join(ws.root, 'result.json');
    try {
      await runTests({
        extensionDevelopmentPath: ROOT,
        extensionTestsPath: path.join(ROOT, 'out', 'integration', 'suite', 'index.js'),
        launchArgs: [ws.folder, '--disable-extensions', ...(mode === 'trusted' ? ['--disable-workspace-trust'] : [])],
        extensionTestsEnv: { NNRAG_IT_MODE: mode, NNRAG_IT_RESULT: result, NNRAG_IT_FIXTURE: ws.fixture, NNRAG_IT_PYTHON: python },
      });
    } catch (err) {
      failed++;
      console.error(`[integration] ${mode}: ${err instanceof Error ? err.message : String(err)}`);
      try {
        console.error(readFileSync(result, 'utf8'));
      } catch {
        // no result file: VS Code did not start
      }
    } finally {
      rmSync(ws.root, { recursive: true, force: true });
    }
  }
  process.exit(failed ? 1 : 0);
}

void main();
