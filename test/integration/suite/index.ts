/**
 * Runs inside the VS Code extension host (both runners point `extensionTestsPath` here): mocha over the bundled
 * `*.test.js` next to this file. The outcome also goes to the file `NNRAG_IT_RESULT` names, for runners that cannot
 * read the extension host's exit code.
 */
import { readdirSync, writeFileSync } from 'fs';
import * as path from 'path';
import Mocha from 'mocha';

export function run(): Promise<void> {
  const mode = process.env.NNRAG_IT_MODE ?? 'trusted';
  const mocha = new Mocha({ ui: 'bdd', color: false, timeout: 120_000, grep: new RegExp(`^${mode}\\b.*${process.env.NNRAG_IT_GREP ?? ''}`) });
  for (const f of readdirSync(__dirname)
    .filter((n) => n.endsWith('.test.js'))
    .sort())
    mocha.addFile(path.join(__dirname, f));
  const results: { title: string; state: string; error?: string; ms?: number }[] = [];
  return new Promise((resolve, reject) => {
    const runner = mocha.run((failures) => {
      const out = process.env.NNRAG_IT_RESULT;
      if (out) writeFileSync(out, JSON.stringify({ mode, failures, results }, null, 2));
      if (failures > 0) reject(new Error(`${failures} integration tests failed`));
      else resolve();
    });
    runner.on('pass', (t) => results.push({ title: t.fullTitle(), state: 'passed', ms: t.duration }));
    runner.on('fail', (t, err: Error) => results.push({ title: t.fullTitle(), state: 'failed', error: err.stack ?? err.message }));
    runner.on('pending', (t) => results.push({ title: t.fullTitle(), state: 'pending' }));
  });
}
