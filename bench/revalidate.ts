/** `--revalidate`: validate FILE against the pull. */
import { spawnSync } from 'child_process';
import { readFileSync } from 'fs';
import * as path from 'path';
import { performance } from 'perf_hooks';

import { ROOT } from './common';

/**
 * `nn-rag validate FILE` on the unedited files a `pull --all` wrote (all, or a seeded sample of N): the tier and
 * equivalence each gives against what its pull gave. What the editor's Validate and Update rely on.
 */
export function revalidateBench(argv: string[]): {
  checked: number;
  same: number;
  seconds: { p50: number; max: number };
  differing: { target: string; pull: string; again: string }[];
} {
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
  const differing: { target: string; pull: string; again: string }[] = [];
  const seconds: number[] = [];
  for (const item of items) {
    const t0 = performance.now();
    const r = spawnSync(process.execPath, [path.join(ROOT, 'dist', 'cli.js'), 'validate', item.out!, '--db', db, '--python', python, '--json'], {
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    });
    seconds.push((performance.now() - t0) / 1000);
    let again: { tier?: string | null; equivalence?: { status?: string } } = {};
    try {
      again = JSON.parse(r.stdout) as typeof again;
    } catch {
      again = { tier: `no answer: ${r.stderr.slice(0, 200)}` };
    }
    const pull = `${item.tier ?? 'none'}/${item.equivalence ?? '-'}`;
    const now = `${again.tier ?? 'none'}/${again.equivalence?.status ?? '-'}`;
    if (pull !== now) differing.push({ target: item.target, pull, again: now });
  }
  seconds.sort((a, b) => a - b);
  return {
    checked: items.length,
    same: items.length - differing.length,
    seconds: { p50: Math.round((seconds[Math.floor(seconds.length / 2)] ?? 0) * 100) / 100, max: Math.round((seconds[seconds.length - 1] ?? 0) * 100) / 100 },
    differing,
  };
}
