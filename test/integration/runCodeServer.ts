/**
 * The offline runner of the integration suite: the same mocha suite `runTest.ts` gives to @vscode/test-electron,
 * run in code-server 4.139.1 twice (a trusted workspace, then an untrusted one), then the UI walk. Reads the
 * harness paths from NNRAG_HARNESS (scripts/testIntegration.mjs installs and passes them). Exit code 0 when all pass.
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from 'fs';
import * as path from 'path';
import { CodeServer, launchBrowser } from './codeServer';
import type { Harness } from './codeServer';
import { makeWorkspace, ROOT } from './workspace';
import { keepLog, uiWalk, vsixWalk } from '../e2e/uiWalk';

interface SuiteResult {
  mode: string;
  failures: number;
  results: { title: string; state: string; error?: string; ms?: number }[];
}

const python = process.env.NNRAG_TEST_PYTHON || '/usr/bin/python3';
const big = ['/usr/lib/python3/dist-packages/torch'].find((p) => existsSync(p));

async function runSuite(h: Harness, mode: 'trusted' | 'untrusted'): Promise<SuiteResult> {
  const ws = makeWorkspace(python, { preview: false });
  const resultFile = path.join(ws.root, 'result.json');
  const cs = await CodeServer.start(h, {
    trust: mode === 'trusted',
    // Restricted Mode ignores the workspace's value of restricted settings: an untrusted folder gets them from the user
    settings: mode === 'untrusted' ? { 'nnrag.repositories': [{ location: ws.fixture, name: 'tinyblocks' }] } : {},
    env: {
      NNRAG_IT_MODE: mode,
      NNRAG_IT_RESULT: resultFile,
      NNRAG_IT_FIXTURE: ws.fixture,
      NNRAG_IT_PYTHON: python,
      ...(big ? { NNRAG_IT_BIG: big } : {}),
    },
  });
  const { browser, page } = await launchBrowser(h);
  let exitCode: number | undefined;
  try {
    await page.exposeFunction('codeAutomationExit', (code: never) => {
      exitCode = Number(code);
    });
    await page.goto(cs.url(ws.folder, ROOT, path.join(ROOT, 'out', 'integration', 'suite', 'index.js')), { waitUntil: 'domcontentloaded' });
    const t0 = Date.now();
    // the payload is silently ignored without the smoke-test driver: never wait without a limit
    while (!existsSync(resultFile) && exitCode === undefined) {
      if (Date.now() - t0 > 15 * 60_000) throw new Error(`the ${mode} suite gave no result in 15 minutes\n${cs.output().slice(-4000)}`);
      await page.waitForTimeout(500);
    }
    await page.waitForTimeout(300);
    if (!existsSync(resultFile)) throw new Error(`the ${mode} suite ended with code ${exitCode} and no result file\n${cs.output().slice(-4000)}`);
    return JSON.parse(readFileSync(resultFile, 'utf8')) as SuiteResult;
  } finally {
    await browser.close().catch(() => undefined);
    // the extension's log channel of the run, kept under test-results/ for whoever reads a failure
    mkdirSync(path.join(ROOT, 'test-results'), { recursive: true });
    keepLog(cs.home, path.join(ROOT, 'test-results', `integration-${mode}.log`));
    await cs.stop();
    rmSync(ws.root, { recursive: true, force: true });
  }
}

async function main(): Promise<number> {
  const h = JSON.parse(process.env.NNRAG_HARNESS ?? 'null') as Harness | null;
  if (!h) throw new Error('NNRAG_HARNESS is not set: run `npm run test:integration`');
  let passed = 0;
  let failed = 0;
  const only = process.argv.find((a) => a.startsWith('--mode='))?.slice(7);
  for (const mode of (['trusted', 'untrusted'] as const).filter((m) => !only || m === only)) {
    const r = await runSuite(h, mode);
    for (const t of r.results) {
      console.log(
        `[integration] ${t.state === 'passed' ? 'ok  ' : t.state === 'pending' ? 'skip' : 'FAIL'} ${t.title}${t.ms !== undefined ? ` (${t.ms} ms)` : ''}`,
      );
      if (t.error) console.log(t.error.replace(/^/gm, '    '));
    }
    passed += r.results.filter((t) => t.state === 'passed').length;
    failed += r.results.filter((t) => t.state === 'failed').length;
    if (r.results.length === 0) failed++;
  }
  const walks = [];
  if (!process.argv.includes('--no-walk')) walks.push(await uiWalk(h, python));
  // `--vsix FILE`: the packaged extension, installed the way users install it
  const vsix = process.argv[process.argv.indexOf('--vsix') + 1];
  if (process.argv.includes('--vsix') && vsix) walks.push(await vsixWalk(h, python, vsix));
  for (const walk of walks) {
    for (const s of walk.steps)
      console.log(
        `[ui-walk] ${s.ok ? 'ok  ' : 'FAIL'} ${s.name}${s.error ? `: ${s.error}` : ''}${s.note ? ` (${s.note})` : ''}${s.screenshot ? ` -> ${path.relative(ROOT, s.screenshot)}` : ''}`,
      );
    passed += walk.steps.filter((s) => s.ok).length;
    failed += walk.steps.filter((s) => !s.ok).length;
  }
  console.log(`integration: ${passed} passed, ${failed} failed`);
  return failed === 0 && passed > 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`[integration] ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    console.log('integration: 0 passed, 1 failed');
    process.exit(1);
  },
);
