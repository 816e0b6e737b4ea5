/** `--revalidate`: validate FILE against the pull. */
import { spawnSync } from 'child_process';
import { readFileSync } from 'fs';
import * as path from 'path';
import { performance } from 'perf_hooks';

import { IndexDb } from '../src/core/store/database';
import { DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S } from '../src/core/validate/limits';
import { Workspace } from '../src/core/workspace/workspace';
import { ASSETS, ROOT, RUNNER } from './common';

interface Revalidated {
  checked: number;
  same: number;
  /** `warm`: through one warm judge, as the editor validates; else `nn-rag validate FILE`, a process each. */
  how: 'cli' | 'warm';
  seconds: { p50: number; p90: number; max: number };
  differing: { target: string; pull: string; again: string }[];
}

/**
 * `nn-rag validate FILE` on the unedited files a `pull --all` wrote (all, or a seeded sample of N): the tier and
 * equivalence each gives against what its pull gave. What the editor's Validate and Update rely on. `--warm`: the
 * editor's way instead, every file through one warm judge of the workspace (`Workspace.validatePulled`); `--cache DIR`:
 * the cache the pull kept the originals' runs in (as `nn-rag --cache`).
 */
export async function revalidateBench(argv: string[]): Promise<Revalidated> {
  const value = (flag: string): string | undefined => (argv.includes(flag) ? argv[argv.indexOf(flag) + 1] : undefined);
  const reportFile = value('--revalidate')!;
  const db = value('--db')!;
  const python = value('--python') ?? 'python3';
  const report = JSON.parse(readFileSync(reportFile, 'utf8')) as {
    items: { target: string; out?: string; tier: string | null; equivalence?: string; status: string }[];
  };
  let items = report.items.filter((i) => i.out && (i.status === 'validated' || i.status === 'failed'));
  const sample = value('--sample');
  if (sample) {
    // a seeded shuffle (the same sample every run)
    let seed = 47;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    items = items
      .map((i) => ({ i, k: rand() }))
      .sort((a, b) => a.k - b.k)
      .slice(0, Number(sample))
      .map((x) => x.i);
  }
  const cache = value('--cache');
  const warm = argv.includes('--warm');
  type Again = { tier?: string | null; equivalence?: { status?: string } };
  let validate: (file: string) => Promise<Again>;
  let close = async (): Promise<void> => undefined;
  if (warm) {
    const { db: index } = await IndexDb.open(db, { sqlWasm: ASSETS.sqlWasm });
    const ws = Workspace.over(index, ASSETS, { runner: RUNNER, ...(cache ? { cacheDir: path.resolve(cache) } : {}) });
    const pool = ws.validatorPool(python, RUNNER, 1);
    validate = async (file) =>
      (await ws.validatePulled(file, readFileSync(file, 'utf8'), { python, pool, timeoutMs: DEFAULT_TIMEOUT_S * 1000, memoryMb: DEFAULT_MEMORY_MB })).report;
    close = async () => {
      await pool.close();
      index.close();
    };
  } else {
    validate = async (file) => {
      const r = spawnSync(
        process.execPath,
        [path.join(ROOT, 'dist', 'cli.js'), 'validate', file, '--db', db, '--python', python, '--json', ...(cache ? ['--cache', cache] : [])],
        { encoding: 'utf8', maxBuffer: 64 << 20 },
      );
      try {
        return JSON.parse(r.stdout) as Again;
      } catch {
        return { tier: `no answer: ${r.stderr.slice(0, 200)}` };
      }
    };
  }
  const differing: { target: string; pull: string; again: string }[] = [];
  const seconds: number[] = [];
  try {
    for (const item of items) {
      const t0 = performance.now();
      const again = await validate(item.out!);
      seconds.push((performance.now() - t0) / 1000);
      const pull = `${item.tier ?? 'none'}/${item.equivalence ?? '-'}`;
      const now = `${again.tier ?? 'none'}/${again.equivalence?.status ?? '-'}`;
      if (pull !== now) differing.push({ target: item.target, pull, again: now });
    }
  } finally {
    await close();
  }
  seconds.sort((a, b) => a - b);
  const at = (q: number): number => Math.round((seconds[Math.min(seconds.length - 1, Math.floor(seconds.length * q))] ?? 0) * 100) / 100;
  return {
    checked: items.length,
    same: items.length - differing.length,
    how: warm ? 'warm' : 'cli',
    seconds: { p50: at(0.5), p90: at(0.9), max: at(1) },
    differing,
  };
}
