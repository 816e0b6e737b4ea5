/** `--mutants`: how often the judge notices a one-line change. */
import { execFileSync, spawnSync } from 'child_process';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { performance } from 'perf_hooks';
import { IndexDb } from '../src/core/store/database';
import { inLanes } from '../src/core/pull/batch';
import { judgeMutants, score } from './mutants';
import { Workspace } from '../src/core/workspace/workspace';
import type { MutantResult } from './mutants';

import { ASSETS, PYTHON, ROOT, RUNNER, r2 } from './common';

/**
 * --mutants: the mutation bench over a batch pull. `--mutants-from DIR --db DB` takes a finished `pull --all` (its
 * report.json); without them, Debian's torchvision is indexed and pulled with validation here. `--python P` judges
 * with P; `--mutant-blocks N` (40) limits the blocks mutated, taken in target order from those judged equivalent.
 */
export async function mutationBench(argv: string[]): Promise<void> {
  const value = (name: string): string | undefined => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
  const python = value('--python') ?? PYTHON;
  const limit = Number(value('--mutant-blocks') ?? 40);
  const work = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-mutants-'));
  const cli = path.join(ROOT, 'dist', 'cli.js');
  let dbFile = value('--db');
  let from = value('--mutants-from');
  if (!dbFile || !from) {
    dbFile = path.join(work, 'index.db');
    from = path.join(work, 'pulled');
    execFileSync(process.execPath, [cli, 'index', '--python-env', python, '--packages', 'torchvision', '--db', dbFile], { stdio: 'inherit' });
    spawnSync(process.execPath, [cli, 'pull', '--all', '--db', dbFile, '--out-dir', from, '--python', python, '--json'], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  }
  const report = JSON.parse(await fsp.readFile(path.join(from, 'report.json'), 'utf8')) as { items: { target: string; tier: string | null; out: string }[] };
  const chosen = report.items
    .filter((i) => i.tier === 'equivalent')
    .sort((a, b) => a.target.localeCompare(b.target))
    .slice(0, limit);
  const { db } = await IndexDb.open(dbFile, { sqlWasm: ASSETS.sqlWasm });
  const ws = Workspace.over(db, ASSETS);
  const session = ws.session();
  const pool = ws.validatorPool(python, RUNNER, Math.max(1, os.cpus().length));
  const results: MutantResult[] = [];
  let judged = 0;
  const t0 = performance.now();
  try {
    await inLanes(chosen.length, pool.size, async (i) => {
      const item = chosen[i];
      const got = await judgeMutants(session, item.out, python, RUNNER, pool, path.join(work, 'judged', String(i + 1)));
      if (!got) return;
      judged++;
      results.push(...got);
      process.stderr.write(`[mutants] ${item.target}: ${got.map((r) => `${r.kind} ${r.outcome}`).join(', ')}\n`);
    });
  } finally {
    await pool.close();
    db.close();
  }
  const seconds = (performance.now() - t0) / 1000;
  console.log(
    JSON.stringify({
      mutation: { python, source: from, blocks_chosen: chosen.length, blocks_judged: judged, seconds: r2(seconds), ...score(results), results },
    }),
  );
  await fsp.rm(work, { recursive: true, force: true });
}
