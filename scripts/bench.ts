/**
 * The performance record: indexes a fixed corpus that builds offline (Debian's torch, torchvision and torchaudio
 * sources, copied to a temporary folder), then measures warm start, one-file change, search and pull latencies,
 * peak memory and database size. Prints JSON; the last line is one object with every figure.
 * Usage: tsx scripts/bench.ts [--corpus DIR...] [--out FILE]
 */
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { performance } from 'perf_hooks';
import { findTarget, listBlockTargets } from '../src/core/blocks/target';
import { IndexDb } from '../src/core/index/database';
import { finishRun, indexSource } from '../src/core/index/indexer';
import { PythonParser } from '../src/core/parse/parser';
import { lazyPool } from '../src/core/parse/pool';
import { openPullSession, pullBlock } from '../src/core/pull';
import { loadModuleTable } from '../src/core/resolve/loadTable';
import { searchBlocks } from '../src/core/search/search';
import { openFolder } from '../src/core/sources/folder';

const ROOT = path.resolve(__dirname, '..');
const ASSETS = {
  treeSitterWasm: path.join(ROOT, 'node_modules/web-tree-sitter/web-tree-sitter.wasm'),
  pythonWasm: path.join(ROOT, 'node_modules/tree-sitter-python/tree-sitter-python.wasm'),
  sqlWasm: path.join(ROOT, 'node_modules/sql.js/dist/sql-wasm.wasm'),
};
const DIST = '/usr/lib/python3/dist-packages';

function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : 0;
}

const r2 = (x: number): number => Math.round(x * 100) / 100;

/** Copies the .py files of a package folder (nothing else) into `dest`. */
async function copyPython(src: string, dest: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  const stack = [''];
  while (stack.length) {
    const rel = stack.pop()!;
    for (const e of await fsp.readdir(path.join(src, rel), { withFileTypes: true })) {
      const r = path.join(rel, e.name);
      if (e.isDirectory() && e.name !== '__pycache__') stack.push(r);
      else if (e.isFile() && e.name.endsWith('.py')) {
        await fsp.mkdir(path.join(dest, rel), { recursive: true });
        await fsp.copyFile(path.join(src, r), path.join(dest, r));
        files++;
        bytes += (await fsp.stat(path.join(src, r))).size;
      }
    }
  }
  return { files, bytes };
}

async function timed<T>(fn: () => Promise<T> | T): Promise<{ value: T; wall_ms: number; cpu_ms: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await fn();
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { value, wall_ms: r2(wall), cpu_ms: r2((c.user + c.system) / 1000) };
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const corpora = argv.includes('--corpus')
    ? argv.filter((_, i) => argv[i - 1] === '--corpus')
    : ['torch', 'torchvision', 'torchaudio'].map((p) => path.join(DIST, p));
  const present: string[] = [];
  for (const c of corpora) {
    try {
      await fsp.access(c);
      present.push(c);
    } catch {
      console.error(`[bench] ${c} is missing: not in the corpus`);
    }
  }
  if (!present.length) throw new Error('no corpus: install python3-torch python3-torchvision python3-torchaudio');

  const work = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-bench-'));
  let files = 0;
  let sourceBytes = 0;
  const roots: string[] = [];
  for (const c of present) {
    const dest = path.join(work, 'corpus', path.basename(c));
    const n = await copyPython(c, dest);
    files += n.files;
    sourceBytes += n.bytes;
    roots.push(dest);
  }
  const dbFile = path.join(work, 'index.db');
  const parser = await PythonParser.create(ASSETS);
  // parsing on every core, as `nn-rag index` does (the bundle's worker when built, else the TypeScript one)
  const workerScript = (await fsp.stat(path.join(ROOT, 'dist', 'parseWorker.js')).catch(() => undefined))
    ? path.join(ROOT, 'dist', 'parseWorker.js')
    : path.join(ROOT, 'src', 'core', 'parse', 'worker.ts');
  const pool = lazyPool(workerScript, ASSETS, parser);
  const indexOptions = { parser, parse: pool.parse, concurrency: pool.size * 2 };

  // the floor: every file read and parsed into facts on every core, nothing stored
  const floor = await timed(async () => {
    const jobs: Promise<unknown>[] = [];
    for (const root of roots) {
      const src = await openFolder({ location: root });
      const { files: list } = await src.list();
      for (const f of list) jobs.push(src.read(f).then((bytes) => pool.parse({ bytes })));
    }
    await Promise.all(jobs);
  });

  // the cold index, as the language server runs it: blocks rediscovered every second, and a search polled meanwhile
  // (the time of its first result is what a user waits for)
  let firstResultMs: number | undefined;
  const coldStart = performance.now();
  let polling: NodeJS.Timeout | undefined;
  const cold = await timed(async () => {
    const { db } = await IndexDb.open(dbFile, { sqlWasm: ASSETS.sqlWasm });
    polling = setInterval(() => {
      if (firstResultMs === undefined && searchBlocks(db, { text: 'conv', limit: 1 }).length) firstResultMs = performance.now() - coldStart;
    }, 20);
    for (const root of roots) await indexSource(db, await openFolder({ location: root }), { ...indexOptions, discoverEveryMs: 1000 });
    clearInterval(polling);
    finishRun(db);
    firstResultMs ??= performance.now() - coldStart;
    await db.save();
    return db;
  });
  const db = cold.value;
  db.close();

  const warm = await timed(async () => {
    const { db: again } = await IndexDb.open(dbFile, { sqlWasm: ASSETS.sqlWasm });
    let changed = 0;
    for (const root of roots) {
      const r = await indexSource(again, await openFolder({ location: root }), indexOptions);
      changed += r.changed;
    }
    if (changed) finishRun(again);
    await again.save();
    return { db: again, changed };
  });
  const live = warm.value.db;

  // one changed file, as a live update does it: re-index its source lightly, then it must be searchable
  const victim = path.join(roots.find((r) => r.endsWith('torchvision')) ?? roots[0], 'ops', 'misc.py');
  await fsp.appendFile(victim, '\n\nclass BenchLiveBlock(torch.nn.Module):\n    pass\n');
  const searchable = await timed(async () => {
    await indexSource(live, await openFolder({ location: path.dirname(path.dirname(victim)) }), indexOptions);
    finishRun(live, {}, { light: true });
    if (searchBlocks(live, { text: 'BenchLiveBlock' })[0]?.name !== 'BenchLiveBlock') throw new Error('the live update is not searchable');
  });
  // one changed file, as a re-index does it: the full finish (full-text merge, compaction) and the save
  await fsp.appendFile(victim, '\n\nclass BenchFreshlyAddedBlock(torch.nn.Module):\n    pass\n');
  const change = await timed(async () => {
    const r = await indexSource(live, await openFolder({ location: path.dirname(path.dirname(victim)) }), indexOptions);
    finishRun(live);
    const hit = searchBlocks(live, { text: 'BenchFreshlyAddedBlock' })[0];
    if (hit?.name !== 'BenchFreshlyAddedBlock') throw new Error('the changed file is not searchable');
    await live.save();
    return r.computed;
  });

  const names = live.all('SELECT DISTINCT name FROM classes WHERE is_block = 1 ORDER BY name').map((r) => String(r.name));
  const queries = [
    ...names.filter((_, i) => i % Math.max(1, Math.floor(names.length / 40)) === 0).slice(0, 40),
    ...names.slice(0, 20).map((n) => n.slice(0, Math.max(3, Math.floor(n.length / 2)))),
    'residual block', 'attention', 'multi head attention', 'squeeze excitation', 'conv bn relu', 'positional embedding',
    'layer norm', 'feature pyramid', 'inverted residual', 'transformer encoder', 'roi align', 'dropout', 'upsample',
  ];
  const searchMs: number[] = [];
  for (let round = 0; round < 3; round++) {
    for (const q of queries) {
      const t0 = performance.now();
      searchBlocks(live, { text: q, limit: 20 });
      searchMs.push(performance.now() - t0);
    }
  }

  const table = loadModuleTable(live);
  const session = openPullSession(live, table);
  const targets = listBlockTargets(live, 'torchvision');
  const pullMs: number[] = [];
  let pullErrors = 0;
  for (const t of targets) {
    const t0 = performance.now();
    try {
      await pullBlock(session, findTarget(live, t), { parser, validate: false });
    } catch {
      pullErrors++;
    }
    pullMs.push(performance.now() - t0);
  }

  const stat = await fsp.stat(dbFile);
  const result = {
    corpus: present.map((p) => path.basename(p)),
    files,
    source_bytes: sourceBytes,
    parse_workers: pool.size,
    parse_floor_s: r2(floor.wall_ms / 1000),
    parse_floor_files_per_s: r2(files / (floor.wall_ms / 1000)),
    cold_index_s: r2(cold.wall_ms / 1000),
    cold_index_cpu_s: r2(cold.cpu_ms / 1000),
    files_per_s: r2(files / (cold.wall_ms / 1000)),
    first_search_result_s: r2((firstResultMs ?? 0) / 1000),
    warm_noop_ms: warm.wall_ms,
    warm_noop_cpu_ms: warm.cpu_ms,
    one_file_searchable_ms: searchable.wall_ms,
    one_file_change_ms: change.wall_ms,
    one_file_change_cpu_ms: change.cpu_ms,
    search_queries: searchMs.length,
    search_p50_ms: r2(percentile(searchMs, 50)),
    search_p95_ms: r2(percentile(searchMs, 95)),
    pull_blocks: targets.length,
    pull_errors: pullErrors,
    pull_p50_ms: r2(percentile(pullMs, 50)),
    pull_p95_ms: r2(percentile(pullMs, 95)),
    pull_max_ms: r2(Math.max(0, ...pullMs)),
    blocks: Number(live.get('SELECT count(*) AS n FROM classes WHERE is_block = 1')?.n ?? 0),
    peak_rss_mb: r2(process.resourceUsage().maxRSS / 1024),
    db_bytes: stat.size,
    db_ratio: r2(stat.size / sourceBytes),
    node: process.version,
    cpus: os.cpus().length,
  };
  live.close();
  await pool.close();
  await fsp.rm(work, { recursive: true, force: true });

  const outFile = argv.includes('--out') ? argv[argv.indexOf('--out') + 1] : path.join(ROOT, 'bench', 'results.json');
  let previous: Record<string, number> | undefined;
  try {
    previous = JSON.parse(await fsp.readFile(outFile, 'utf8'));
  } catch {
    previous = undefined;
  }
  if (previous) {
    const ratio: Record<string, number> = {};
    for (const [k, v] of Object.entries(result)) {
      if (typeof v === 'number' && typeof previous[k] === 'number' && previous[k] !== 0) ratio[k] = r2(v / previous[k]);
    }
    console.log(JSON.stringify({ compared_to_previous: ratio }));
  }
  await fsp.mkdir(path.dirname(outFile), { recursive: true });
  await fsp.writeFile(outFile, `${JSON.stringify(result, null, 2)}\n`);
  console.log(JSON.stringify(result));
}

main().catch((err: unknown) => {
  console.error(`[bench] ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
