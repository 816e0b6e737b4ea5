/** The bench's child processes: the synthetic corpus, many small files, and merged shards, each with its own peak memory. */
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { performance } from 'perf_hooks';
import { PythonParser } from '../src/core/parse/parser';
import { lazyPool } from '../src/core/analysis/parsePool';
import { merge3 } from '../src/core/emit/merge';

import { ASSETS, coldIndex, copyPython, listAll, r2, workerScript } from './common';

/** The synthetic corpus, in a process of its own: `scale` forks of the corpus under `corpusDir`, indexed cold. */
export async function syntheticChild(corpusDir: string, scale: number): Promise<void> {
  const work = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-bench-synth-'));
  try {
    const packages = (await fsp.readdir(corpusDir)).sort();
    const roots: string[] = [];
    const names: string[] = [];
    let bytes = 0;
    for (let k = 0; k < scale; k++) {
      for (const p of packages) {
        const dest = path.join(work, `fork${k}`, p);
        bytes += (await copyPython(path.join(corpusDir, p), dest)).bytes;
        roots.push(dest);
        names.push(`${p}-fork${k}`);
      }
    }
    const files = (await listAll(roots)).length;
    const parser = await PythonParser.create(ASSETS);
    const pool = lazyPool(await workerScript('parseWorker.js', 'src/core/analysis/worker.ts'), ASSETS, parser);
    const cold = await coldIndex(
      path.join(work, 'index.db'),
      roots,
      names,
      { parser, parse: pool.parse, concurrency: pool.inFlight, hereMaxBytes: pool.hereMaxBytes },
      pool.close,
    );
    await pool.close();
    const db = (await fsp.stat(path.join(work, 'index.db'))).size;
    console.log(
      JSON.stringify({
        files,
        source_bytes: bytes,
        cold_index_s: r2(cold.wall_ms / 1000),
        cold_index_cpu_s: r2(cold.cpu_ms / 1000),
        peak_rss_mb: r2(process.resourceUsage().maxRSS / 1024),
        db_bytes: db,
      }),
    );
  } finally {
    await fsp.rm(work, { recursive: true, force: true });
  }
}

/** `count` small generated files (one block each, near copies of one another), indexed cold in a process of its own:
 * what many small files cost (duplicate grouping, rediscovery, the save) apart from what large ones cost. */
export async function smallFilesChild(count: number): Promise<void> {
  const work = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-bench-small-'));
  try {
    const root = path.join(work, 'small');
    for (let i = 0; i < count; i++) {
      const dir = path.join(root, 'pkg', `m${Math.floor(i / 1000)}`);
      if (i % 1000 === 0) {
        await fsp.mkdir(dir, { recursive: true });
        await fsp.writeFile(path.join(dir, '__init__.py'), '');
      }
      await fsp.writeFile(
        path.join(dir, `f${i}.py`),
        `from torch import nn\n\n\nclass Block${i}(nn.Module):\n    """Small block ${i}."""\n\n    def __init__(self, channels=16, hidden=${(i % 7) + 8}):\n        super().__init__()\n        self.conv = nn.Conv2d(channels, hidden, 3, padding=1)\n        self.norm = nn.BatchNorm2d(hidden)\n        self.proj = nn.Conv2d(hidden, channels, 1)\n\n    def forward(self, x):\n        return x + self.proj(self.norm(self.conv(x)).relu())\n`,
      );
    }
    const parser = await PythonParser.create(ASSETS);
    const pool = lazyPool(await workerScript('parseWorker.js', 'src/core/analysis/worker.ts'), ASSETS, parser);
    // (the generated blocks say "small block"; a query they never answer was searched every 20 ms for the whole run)
    const cold = await coldIndex(
      path.join(work, 'index.db'),
      [root],
      ['small'],
      { parser, parse: pool.parse, concurrency: pool.inFlight, hereMaxBytes: pool.hereMaxBytes },
      pool.close,
      'small block',
    );
    await pool.close();
    console.log(JSON.stringify({ files: count, cold_index_s: r2(cold.wall_ms / 1000), peak_rss_mb: r2(process.resourceUsage().maxRSS / 1024) }));
  } finally {
    await fsp.rm(work, { recursive: true, force: true });
  }
}

/**
 * `nn-rag update`'s three-way merge on a 23,000-line file made of the corpus's own lines, one edit on each side
 * (near the top in yours, near the end upstream), in a child process so its peak memory is its own.
 */
export async function mergeChild(corpusDir: string): Promise<void> {
  const files = (await listAll([corpusDir])).filter((f) => f.endsWith('.py'));
  const lines: string[] = [];
  for (const f of files) {
    if (lines.length >= 23_000) break;
    lines.push(...(await fsp.readFile(f, 'utf8')).split('\n'));
  }
  const base = lines.slice(0, 23_000);
  const ours = base.slice();
  ours.splice(500, 1, '    # an edit of yours');
  const theirs = base.slice();
  theirs.splice(21_000, 1, '    # an edit upstream');
  const rssBefore = process.resourceUsage().maxRSS / 1024;
  const t0 = performance.now();
  const merged = merge3(base.join('\n'), ours.join('\n'), theirs.join('\n'));
  const ms = performance.now() - t0;
  if (merged.conflicts !== 0 || !merged.text.includes('an edit of yours') || !merged.text.includes('an edit upstream'))
    throw new Error('the merge lost an edit');
  console.log(
    JSON.stringify({
      update_merge_lines: base.length,
      update_merge_ms: Math.round(ms * 10) / 10,
      update_merge_peak_mb_added: Math.round(process.resourceUsage().maxRSS / 1024 - rssBefore),
    }),
  );
}
