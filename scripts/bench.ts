/**
 * The performance record (the scenarios other than the record itself live in bench/: children.ts, mcpLatency.ts,
 * nativeRun.ts, mutationRun.ts, observeRun.ts, revalidate.ts; what they share in bench/common.ts): indexes a fixed
 * corpus that builds offline (Debian's torch, torchvision and torchaudio sources, copied to a temporary folder), then
 * measures the parse-only floor (and above it the walk and analysis floors), the cold index and its first search
 * result, warm start, one changed file (searchable, and saved), search and pull latencies over every block,
 * validation time per block, peak memory and database size; then, in a child process of its own (its own peak
 * memory), a synthetic corpus ten times the size (ten forks of the corpus) to show how cost grows.
 * The floors and the cold index run in rounds (`--rounds`, default 3): their figures are the medians.
 * Prints JSON; the last line is one object with every figure, compared with the previous run kept in the repository.
 * With --pool-speedup, also `nn-rag pull --all` with validation over torchvision, with the pool of warm interpreters
 * and with one interpreter per block (about twenty minutes).
 * With --index-only, only the floors and the cold index (about a minute): prints their figures and stores nothing.
 * Usage: tsx scripts/bench.ts [--corpus DIR...] [--out FILE] [--no-validate] [--no-synthetic] [--scale N] [--rounds N] [--pool-speedup]
 *        [--small-files N] [--shards N [--shard-blocks B]] [--search-scale N,M]
 *        tsx scripts/bench.ts --search-scale-only [--search-scale N,M] [--search-served GxB]   (search over synthetic
 *        corpora of N and M blocks, 20,000 and 200,000 unless told: index, first answer, p50 / p95 through nn-rag mcp;
 *        --search-served 5x200000: a team's million blocks in G groups of B, each served by nn-rag serve and merged
 *        by one client, about ten minutes)
 *        tsx scripts/bench.ts --native [--python P]   (pull --build-native: the build, and the cached second pull)
 *        tsx scripts/bench.ts --index-only [--corpus DIR...] [--rounds N]
 *        tsx scripts/bench.ts --observe-only [--observe-repo DIR | --observe-blocks N] [--python P]   (the catalog alone)
 *        tsx scripts/bench.ts --revalidate REPORT --db DB --python P [--sample N] [--warm] [--cache DIR]   (validate FILE against the pull)
 *        tsx scripts/bench.ts --synthetic-child CORPUS_DIR N   (the child: prints one JSON line)
 */
import { execFileSync, spawnSync } from 'child_process';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { performance } from 'perf_hooks';
import { listBlockTargets } from '../src/core/store/target';
import { IndexDb } from '../src/core/store/database';
// eslint-disable-next-line no-restricted-imports -- the bench times one source's indexing alone (live updates, floors)
import { finishRun, indexSource } from '../src/core/index/indexer';
import { PythonParser } from '../src/core/parse/parser';
import { lazyPool } from '../src/core/analysis/parsePool';
import { warmUpParser } from '../src/core/analysis/warmUp';
import { linesOf } from '../src/core/emit/why';
import { searchBlocks } from '../src/core/search/search';
import { openFolder } from '../src/core/sources/folder';
import { IndexService } from '../src/core/service/indexService';
import { EDITOR_BUILDER_BUDGET_S } from '../src/shared/protocol';
import { mergeRecords } from '../bench/records';
import { Workspace } from '../src/core/workspace/workspace';
import type { BenchRecord } from '../bench/records';
import {
  ASSETS,
  DIST,
  PYTHON,
  ROOT,
  RUNNER,
  coldIndex,
  copyPython,
  floorInput,
  hasTorch,
  listAll,
  median,
  percentile,
  r2,
  timed,
  workerScript,
} from '../bench/common';
import type { Timing } from '../bench/common';
import { mergeChild, smallFilesChild, syntheticChild } from '../bench/children';
import { mcpLatency } from '../bench/mcpLatency';
import { searchAtScale } from '../bench/searchScale';
import { searchServedAtScale } from '../bench/searchServed';
import { mutationBench } from '../bench/mutationRun';
import { nativeBench } from '../bench/nativeRun';
import { observeBench } from '../bench/observeRun';
import { revalidateBench } from '../bench/revalidate';

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv[0] === '--small-files-child') {
    await smallFilesChild(Number(argv[1]));
    return;
  }
  if (argv[0] === '--merge-child') {
    await mergeChild(argv[1]);
    return;
  }
  if (argv[0] === '--synthetic-child') {
    await syntheticChild(argv[1], Number(argv[2]));
    return;
  }
  if (argv.includes('--mutants')) {
    await mutationBench(argv);
    return;
  }
  if (argv.includes('--observe-only')) {
    const work = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-bench-'));
    console.log(JSON.stringify(await observeBench(work, argv)));
    await fsp.rm(work, { recursive: true, force: true });
    return;
  }
  if (argv.includes('--native')) {
    await nativeBench(argv);
    return;
  }
  if (argv.includes('--search-scale-only')) {
    const work = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-bench-'));
    console.log(JSON.stringify({ ...(await searchScales(work, argv)), ...(await searchServed(work, argv)) }));
    await fsp.rm(work, { recursive: true, force: true });
    return;
  }
  if (argv.includes('--revalidate')) {
    console.log(JSON.stringify(await revalidateBench(argv)));
    return;
  }
  const scale = argv.includes('--scale') ? Number(argv[argv.indexOf('--scale') + 1]) : 10;
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
  // parsing on every core as `nn-rag index` and the language server do: workers, and small files in this thread
  const pool = lazyPool(await workerScript('parseWorker.js', 'src/core/analysis/worker.ts'), ASSETS, parser);
  // the floors: parsing alone in one worker per core (at most four), nothing in this thread
  const floorPool = lazyPool(await workerScript('benchFloorWorker.js', 'bench/floorWorker.ts'), ASSETS, parser, Math.min(4, os.cpus().length));
  const indexOptions = { parser, parse: pool.parse, concurrency: pool.inFlight, hereMaxBytes: pool.hereMaxBytes };
  const all = await listAll(roots);
  // The floors and the cold index, in rounds: this machine's speed moves between runs and within one (a floor alone
  // measured 1.6 s to 3.8 s), so each figure is the median of its rounds and the ratio the median of each round's own
  // (its range is printed too). The last round's index is the one the rest of the bench uses.
  const rounds = argv.includes('--rounds') ? Math.max(1, Math.floor(Number(argv[argv.indexOf('--rounds') + 1])) || 1) : 3;
  const runs: { floor: Timing; walk: Timing; analysis: Timing; cold: Timing & { firstResultMs: number } }[] = [];
  for (let round = 0; round < rounds; round++) {
    await floorPool.parse({ bytes: new Uint8Array(0) }); // workers (re)started before any clock runs
    // the floor: every file read and parsed on every core, nothing else (what web-tree-sitter costs)
    // (neither keeps what the workers answer: 170 MB of outcomes held to the end of the bench made every later figure
    // pay for marking them, pulls 1.5x slower)
    const floor = await timed(async () => void (await Promise.all(all.map((file) => floorPool.parse(floorInput(file, 'parse'))))));
    // the same, and every node's type, field and offsets read with the cursor, nothing built: what any analysis that
    // reads the whole tree through web-tree-sitter pays before it does anything (from WebAssembly too: bench/README.md)
    const walk = await timed(async () => void (await Promise.all(all.map((file) => floorPool.parse(floorInput(file, 'walk'))))));
    // the same with the facts extracted and encoded, nothing stored
    const analysis = await timed(async () => void (await Promise.all(all.map((file) => floorPool.parse({ file })))));
    await floorPool.close();
    await pool.parse({ bytes: new Uint8Array(0) });
    // the cold index, as the language server runs it: blocks rediscovered after half a second, then at doubling
    // intervals, and a search polled meanwhile
    // (the time of its first result is what a user waits for)
    const last = round === rounds - 1;
    const roundDb = last ? dbFile : path.join(work, `round${round}.db`);
    const cold = await coldIndex(
      roundDb,
      roots,
      roots.map(() => undefined),
      indexOptions,
      pool.close,
    );
    if (!last) for (const f of [roundDb, `${roundDb}.saved`, `${roundDb}.units`]) await fsp.rm(f, { recursive: true, force: true });
    runs.push({ floor, walk, analysis, cold });
    console.error(
      `[bench] round ${round + 1}/${rounds}: floor ${r2(floor.wall_ms / 1000)} s, cold index ${r2(cold.wall_ms / 1000)} s (${r2(cold.wall_ms / floor.wall_ms)}x)`,
    );
  }
  const middle = (pick: (r: (typeof runs)[number]) => Timing): Timing => ({
    wall_ms: median(runs.map((r) => pick(r).wall_ms)),
    cpu_ms: median(runs.map((r) => pick(r).cpu_ms)),
  });
  const floor = middle((r) => r.floor);
  const walkFloor = middle((r) => r.walk);
  const analysis = middle((r) => r.analysis);
  const cold = { ...middle((r) => r.cold), firstResultMs: median(runs.map((r) => r.cold.firstResultMs)) };
  const coldRatios = runs.map((r) => r.cold.wall_ms / r.floor.wall_ms);
  const indexFigures = {
    files,
    parse_floor_s: r2(floor.wall_ms / 1000),
    parse_floor_cpu_s: r2(floor.cpu_ms / 1000),
    parse_floor_files_per_s: r2(files / (floor.wall_ms / 1000)),
    walk_floor_s: r2(walkFloor.wall_ms / 1000),
    walk_floor_cpu_s: r2(walkFloor.cpu_ms / 1000),
    analysis_floor_s: r2(analysis.wall_ms / 1000),
    analysis_floor_cpu_s: r2(analysis.cpu_ms / 1000),
    cold_index_s: r2(cold.wall_ms / 1000),
    cold_index_cpu_s: r2(cold.cpu_ms / 1000),
    files_per_s: r2(files / (cold.wall_ms / 1000)),
    cold_vs_parse_floor: r2(median(coldRatios)),
    cold_vs_parse_floor_min: r2(Math.min(...coldRatios)),
    cold_vs_parse_floor_max: r2(Math.max(...coldRatios)),
    bench_rounds: rounds,
    first_search_result_s: r2(cold.firstResultMs / 1000),
  };
  if (argv.includes('--index-only')) {
    await pool.close();
    await fsp.rm(work, { recursive: true, force: true });
    console.log(JSON.stringify(indexFigures));
    return;
  }

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
  if (warm.value.changed) throw new Error(`the warm start found ${warm.value.changed} changes`);
  const live = warm.value.db;

  // one changed file, as a live update does it (the watcher names the file): re-index it, then it must be searchable
  const tvRoot = roots.find((r) => r.endsWith('torchvision')) ?? roots[0];
  const victim = path.join(tvRoot, 'ops', 'misc.py');
  const victimRel = path.relative(tvRoot, victim).split(path.sep).join('/');
  const liveMs: number[] = [];
  const liveFinishMs: number[] = [];
  // as the server does: once it watches folders it warms the parser of its thread (full runs parse in workers), and
  // when edits pause, it runs the light finish (rediscovery, duplicate groups, a bounded full-text merge)
  await warmUpParser(parser);
  for (let i = 0; i < 20; i++) {
    if (i) liveFinishMs.push(finishRun(live, {}, { light: true }).seconds * 1000);
    await fsp.appendFile(victim, `\n\nclass BenchLiveBlock${i}(torch.nn.Module):\n    pass\n`);
    const t0 = performance.now();
    // the server parses a live update's few files in its own thread (no worker to start)
    await indexSource(live, await openFolder({ location: tvRoot }), { parser, only: [victimRel] });
    if (searchBlocks(live, { text: `BenchLiveBlock${i}` })[0]?.name !== `BenchLiveBlock${i}`) throw new Error('the live update is not searchable');
    liveMs.push(performance.now() - t0);
  }
  // one changed file, as a re-index does it: the whole folder looked at, the full finish (rediscovery, duplicate
  // groups, full-text merge, compaction) and the save
  await fsp.appendFile(victim, '\n\nclass BenchFreshlyAddedBlock(torch.nn.Module):\n    pass\n');
  const change = await timed(async () => {
    const r = await indexSource(live, await openFolder({ location: tvRoot }), indexOptions);
    finishRun(live);
    const hit = searchBlocks(live, { text: 'BenchFreshlyAddedBlock' })[0];
    if (hit?.name !== 'BenchFreshlyAddedBlock') throw new Error('the changed file is not searchable');
    await live.save();
    return r.computed;
  });

  // search: exact names, prefixes, words
  const names = live.all('SELECT DISTINCT name FROM classes WHERE is_block = 1 ORDER BY name').map((r) => String(r.name));
  const queries = {
    exact: names.filter((_, i) => i % Math.max(1, Math.floor(names.length / 40)) === 0).slice(0, 40),
    prefix: names
      .filter((_, i) => i % Math.max(1, Math.floor(names.length / 20)) === 1)
      .slice(0, 20)
      .map((n) => n.slice(0, Math.max(3, Math.floor(n.length / 2)))),
    words: [
      'residual block',
      'attention',
      'multi head attention',
      'squeeze excitation',
      'conv bn relu',
      'positional embedding',
      'layer norm',
      'feature pyramid',
      'inverted residual',
      'transformer encoder',
      'roi align',
      'dropout',
      'upsample',
    ],
  };
  const searchMs: Record<keyof typeof queries, number[]> = { exact: [], prefix: [], words: [] };
  for (let round = 0; round < 3; round++) {
    for (const kind of Object.keys(queries) as (keyof typeof queries)[]) {
      for (const q of queries[kind]) {
        const t0 = performance.now();
        searchBlocks(live, { text: q, limit: 20 });
        searchMs[kind].push(performance.now() - t0);
      }
    }
  }
  const allSearch = [...searchMs.exact, ...searchMs.prefix, ...searchMs.words];
  // search quality on the labeled set (bench/search-queries.json; ../shared/search-bench/searchbench.py scores the same
  // set through the CLI): success@1, recall@5, MRR@10, and the latency of these queries
  const labeled = JSON.parse(await fsp.readFile(path.join(ROOT, 'bench', 'search-queries.json'), 'utf8')) as { q: string; any: string[] }[];
  let s1 = 0;
  let r5 = 0;
  let mrr = 0;
  const labeledMs: number[] = [];
  for (let round = 0; round < 3; round++) {
    for (const item of labeled) {
      const t0 = performance.now();
      const hits = searchBlocks(live, { text: item.q, limit: 10 });
      labeledMs.push(performance.now() - t0);
      if (round) continue;
      const rank = hits.findIndex((h) => item.any.includes(h.name) || item.any.includes(h.qualname)) + 1;
      if (rank === 1) s1++;
      if (rank >= 1 && rank <= 5) r5++;
      if (rank >= 1) mrr += 1 / rank;
    }
  }
  const n = Math.max(1, labeled.length);
  const searchQuality = {
    search_labeled_queries: labeled.length,
    search_success_at_1: Math.round((1000 * s1) / n) / 1000,
    search_recall_at_5: Math.round((1000 * r5) / n) / 1000,
    search_mrr_at_10: Math.round((1000 * mrr) / n) / 1000,
    search_labeled_p95_ms: r2(percentile(labeledMs, 95)),
  };

  // pull: every block of the index, in memory, no validation, through one module table and session (as the server
  // keeps them while the index does not change); what loading them costs the first pull is reported on its own
  const tableT0 = performance.now();
  const ws = Workspace.over(live, ASSETS, { runner: RUNNER });
  ws.session();
  const pullSessionMs = performance.now() - tableT0;
  const targets = listBlockTargets(live);
  const pullMs: number[] = [];
  let pullErrors = 0;
  /** Per corpus (repository), the lines of every pulled file. */
  const pulledLines = new Map<string, { lines?: number }[]>();
  for (const t of targets) {
    const t0 = performance.now();
    try {
      const r = await ws.pull(t, { validate: false });
      const repo = t.split(':')[0];
      pulledLines.set(repo, [...(pulledLines.get(repo) ?? []), { lines: r.sizes?.total }]);
    } catch {
      pullErrors++;
    }
    pullMs.push(performance.now() - t0);
  }
  const pullLines: Record<string, number> = {};
  for (const [repo, items] of [...pulledLines].sort()) {
    const f = linesOf(items);
    if (!f) continue;
    pullLines[`pull_lines_median_${repo}`] = f.median;
    pullLines[`pull_lines_p90_${repo}`] = f.p90;
    pullLines[`pull_lines_max_${repo}`] = f.max;
  }

  // validation: a sample of torchvision's blocks (every k-th) through the pool of warm interpreters
  let validation: Record<string, number> = {};
  if (!argv.includes('--no-validate') && hasTorch()) {
    const tv = listBlockTargets(live, 'torchvision');
    const sample = tv.filter((_, i) => i % Math.max(1, Math.floor(tv.length / 16)) === 0).slice(0, 16);
    const jobs = os.cpus().length;
    const outDir = path.join(work, 'pulled');
    let passed = 0;
    const v = await timed(async () => {
      const items = await ws.batch(sample, { validate: true, python: PYTHON }, { outDir, jobs, pooled: true });
      passed = items.filter((r) => r.status === 'validated').length;
    });
    validation = {
      validation_blocks: sample.length,
      validation_passed: passed,
      validation_jobs: jobs,
      validation_wall_s: r2(v.wall_ms / 1000),
      validation_per_block_s: r2(v.wall_ms / 1000 / Math.max(1, sample.length)),
    };

    // pull-to-validated as the editor's language server does it: one pull at a time through the index service's warm
    // validator (started by the first pull, which is reported on its own), for 21 torchvision blocks
    const service = new IndexService(
      { ...ASSETS, storageDir: work, cacheDir: path.join(work, 'cache'), maxFileKb: 2048, repositories: [] },
      { log: () => undefined, status: () => undefined, failed: () => undefined, changed: () => undefined },
    );
    const editorSample = tv.filter((_, i) => i % Math.max(1, Math.floor(tv.length / 21)) === 0).slice(0, 21);
    const editorMs: number[] = [];
    let editorValidated = 0;
    // (this index, with the service's warm validator, as the service's own workspace() wires it)
    const editor = Workspace.over(live, ASSETS, {
      runner: RUNNER,
      parser,
      warm: (python, memoryMb, roots) => service.warmValidator(python, RUNNER, memoryMb, roots),
    });
    try {
      for (const [i, t] of editorSample.entries()) {
        const ref = editor.target(t);
        const t0 = performance.now();
        const r = await editor.pull(
          ref,
          { validate: true, python: PYTHON, memoryMb: 4096, builderBudgetSeconds: EDITOR_BUILDER_BUDGET_S, allowWeakSandbox: true },
          { out: path.join(outDir, 'editor', `${ref.name}_${i}.py`), manifest: false },
        );
        editorMs.push(performance.now() - t0);
        if (r.status === 'validated') editorValidated++;
      }
    } finally {
      await service.dispose();
    }
    const after = editorMs.slice(1);
    Object.assign(validation, {
      editor_pull_blocks: after.length,
      editor_pull_validated: editorValidated,
      editor_pull_first_s: r2((editorMs[0] ?? 0) / 1000),
      editor_pull_p50_s: r2(percentile(after, 50) / 1000),
      editor_pull_p95_s: r2(percentile(after, 95) / 1000),
    });
  } else {
    console.error('[bench] validation not measured (--no-validate, or no torch in /usr/bin/python3)');
  }

  const stat = await fsp.stat(dbFile);
  const peakRss = r2(process.resourceUsage().maxRSS / 1024);
  live.close();

  // the MCP server as a code assistant meets it: the SDK's client over stdio, the bundled CLI
  const mcp = await mcpLatency(
    dbFile,
    labeled.map((l) => l.q),
  );
  await pool.close();

  const mergeRun = spawnSync(process.execPath, [...process.execArgv, __filename, '--merge-child', path.join(work, 'corpus')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const merge: Record<string, number> = JSON.parse(mergeRun.stdout.trim().split('\n').pop() || '{}');

  // the synthetic corpus, `scale` times the size, in a child process (its own peak memory)
  let synthetic: Record<string, number> = {};
  if (!argv.includes('--no-synthetic') && scale > 1) {
    const child = spawnSync(process.execPath, [...process.execArgv, __filename, '--synthetic-child', path.join(work, 'corpus'), String(scale)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const line = child.stdout.trim().split('\n').pop() ?? '';
    if (child.status !== 0 || !line.startsWith('{')) throw new Error(`the synthetic corpus run failed (exit ${child.status})`);
    const s = JSON.parse(line) as { files: number; cold_index_s: number; cold_index_cpu_s: number; peak_rss_mb: number; db_bytes: number };
    synthetic = {
      synthetic_scale: scale,
      synthetic_files: s.files,
      synthetic_cold_index_s: s.cold_index_s,
      synthetic_cold_index_cpu_s: s.cold_index_cpu_s,
      synthetic_files_per_s: r2(s.files / s.cold_index_s),
      // cost per file at scale over cost per file of the corpus: 1 is linear growth
      synthetic_cost_growth: r2(s.cold_index_s / s.files / (cold.wall_ms / 1000 / files)),
      synthetic_peak_rss_mb: s.peak_rss_mb,
      synthetic_db_bytes: s.db_bytes,
    };
  }
  // many small files (--small-files N; 20,000 unless told, 0 for none), in a child process of its own
  const smallCount = argv.includes('--small-files') ? Number(argv[argv.indexOf('--small-files') + 1]) : 20_000;
  let smallFiles: Record<string, number> = {};
  if (smallCount > 0) {
    const child = spawnSync(process.execPath, [...process.execArgv, __filename, '--small-files-child', String(smallCount)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const line = child.stdout.trim().split('\n').pop() ?? '';
    if (child.status !== 0 || !line.startsWith('{')) throw new Error(`the small-files run failed (exit ${child.status})`);
    const s = JSON.parse(line) as { files: number; cold_index_s: number; peak_rss_mb: number };
    smallFiles = { small_files: s.files, small_files_cold_index_s: s.cold_index_s, small_files_peak_rss_mb: s.peak_rss_mb };
  }
  // `nn-rag pull --all` with validation over torchvision: a pool of warm interpreters (one per core) against one
  // fresh interpreter per block, one block at a time (--pool-speedup: about twenty minutes here)
  let poolSpeedup: Record<string, number> = {};
  const tvCorpus = roots.find((r) => path.basename(r) === 'torchvision');
  if (argv.includes('--pool-speedup') && tvCorpus && hasTorch()) {
    const cli = path.join(ROOT, 'dist', 'cli.js');
    const tvDb = path.join(work, 'tv.db');
    execFileSync(process.execPath, [cli, 'index', tvCorpus, '--db', tvDb], { stdio: 'ignore' });
    const batch = (label: string, extra: string[]): { wall_s: number; attempted: number; validated: number } => {
      const t0 = performance.now();
      const r = spawnSync(process.execPath, [cli, 'pull', '--all', '--db', tvDb, '--out-dir', path.join(work, label), '--python', PYTHON, '--json', ...extra], {
        encoding: 'utf8',
        maxBuffer: 1 << 26,
      });
      const wall = performance.now() - t0;
      let summary: { attempted: number; validated: number };
      try {
        summary = JSON.parse(r.stdout) as { attempted: number; validated: number };
      } catch {
        throw new Error(`pull --all ${extra.join(' ')} gave no summary (exit ${r.status}): ${r.stderr.slice(-500)}`);
      }
      return { wall_s: wall / 1000, attempted: summary.attempted, validated: summary.validated };
    };
    const pooled = batch('pool', []);
    const single = batch('single', ['--no-pool', '--jobs', '1']);
    poolSpeedup = {
      pool_blocks: pooled.attempted,
      pool_validated: pooled.validated,
      single_validated: single.validated,
      pool_wall_s: r2(pooled.wall_s),
      single_wall_s: r2(single.wall_s),
      pool_speedup: r2(single.wall_s / pooled.wall_s),
    };
  }
  // shards (--shards N, default 4; 0 for none, with --shard-blocks B, 40): the same B torchvision blocks validated by
  // one `pull --all` and by N shards run one after the other, then merged: what splitting costs (each shard opens the
  // index and starts its validators) and what the merge takes
  let shardFigures: Record<string, number> = {};
  const shardCount = argv.includes('--shards') ? Number(argv[argv.indexOf('--shards') + 1]) : 0;
  if (shardCount > 0 && tvCorpus && hasTorch()) {
    const cli = path.join(ROOT, 'dist', 'cli.js');
    const shardDb = path.join(work, 'shards.db');
    execFileSync(process.execPath, [cli, 'index', tvCorpus, '--db', shardDb], { stdio: 'ignore' });
    const count = argv.includes('--shard-blocks') ? Number(argv[argv.indexOf('--shard-blocks') + 1]) : 40;
    const all = JSON.parse(
      execFileSync(process.execPath, [cli, 'search', '', '--db', shardDb, '--limit', '1000', '--all-copies', '--json'], {
        encoding: 'utf8',
        maxBuffer: 1 << 26,
      }),
    ) as { target: string }[];
    const list = path.join(work, 'shard-targets.json');
    await fsp.writeFile(
      list,
      JSON.stringify(
        all
          .map((h) => h.target)
          .sort()
          .slice(0, count),
      ),
    );
    const run = (label: string, extra: string[]): number => {
      const t0 = performance.now();
      const r = spawnSync(
        process.execPath,
        [cli, 'pull', '--all', '--from', list, '--db', shardDb, '--out-dir', path.join(work, label), '--python', PYTHON, '--json', ...extra],
        { encoding: 'utf8', maxBuffer: 1 << 26 },
      );
      if (r.status !== 0 && r.status !== 1) throw new Error(`pull --all ${extra.join(' ')} failed (exit ${r.status}): ${r.stderr.slice(-500)}`);
      return (performance.now() - t0) / 1000;
    };
    // the index split the same way: every corpus in one run, then N index shards and their merge
    const timed = (args: string[]): number => {
      const t0 = performance.now();
      execFileSync(process.execPath, [cli, ...args], { stdio: 'ignore' });
      return (performance.now() - t0) / 1000;
    };
    const indexOne = timed(['index', ...present, '--db', path.join(work, 'index-one.db')]);
    let indexShards = 0;
    const shardDbs = Array.from({ length: shardCount }, (_, k) => path.join(work, `index-shard-${k + 1}.db`));
    shardDbs.forEach((db, k) => (indexShards += timed(['index', ...present, '--db', db, '--shard', `${k + 1}/${shardCount}`])));
    const indexMerge = timed(['merge', ...shardDbs, '--db', path.join(work, 'index-merged.db')]);
    const one = run('one', []);
    let shards = 0;
    for (let k = 1; k <= shardCount; k++) shards += run('shards', ['--shard', `${k}/${shardCount}`]);
    const reports = Array.from({ length: shardCount }, (_, k) => path.join(work, 'shards', `report.shard-${k + 1}-of-${shardCount}.json`));
    const t0 = performance.now();
    execFileSync(process.execPath, [cli, 'report', '--merge', ...reports, '--out', path.join(work, 'merged.json'), '--db', shardDb], { stdio: 'ignore' });
    const merge = (performance.now() - t0) / 1000;
    shardFigures = {
      shard_blocks: count,
      shards: shardCount,
      shard_one_run_s: r2(one),
      shard_runs_total_s: r2(shards),
      // what N shards cost beyond one run, per shard (opening the index, starting validators)
      shard_overhead_per_shard_s: r2((shards - one) / shardCount),
      shard_merge_s: r2(merge),
      index_corpora: present.length,
      index_one_run_s: r2(indexOne),
      index_shards_total_s: r2(indexShards),
      index_merge_s: r2(indexMerge),
    };
  }
  // the catalog of observed calls: a repository's tests run under the observer, cold and again with nothing changed
  const observeFigures = !argv.includes('--no-validate') && hasTorch() ? await observeBench(work, argv) : {};
  // search at a team's size: synthetic corpora of 20,000 and 200,000 blocks (--search-scale N,M; 0 for none)
  const searchScaleFigures = { ...(await searchScales(work, argv)), ...(await searchServed(work, argv)) };
  await fsp.rm(work, { recursive: true, force: true });

  const result = {
    corpus: present.map((p) => path.basename(p)),
    source_bytes: sourceBytes,
    parse_workers: pool.size,
    // (the floors: one worker per core, nothing in this thread)
    floor_workers: floorPool.size,
    ...indexFigures,
    warm_noop_ms: warm.wall_ms,
    warm_noop_cpu_ms: warm.cpu_ms,
    one_file_searchable_p50_ms: r2(percentile(liveMs, 50)),
    one_file_searchable_p95_ms: r2(percentile(liveMs, 95)),
    one_file_change_ms: change.wall_ms,
    one_file_change_cpu_ms: change.cpu_ms,
    live_finish_p50_ms: r2(percentile(liveFinishMs, 50)),
    search_queries: allSearch.length,
    ...searchQuality,
    search_p50_ms: r2(percentile(allSearch, 50)),
    search_p95_ms: r2(percentile(allSearch, 95)),
    search_exact_p95_ms: r2(percentile(searchMs.exact, 95)),
    search_prefix_p95_ms: r2(percentile(searchMs.prefix, 95)),
    search_words_p95_ms: r2(percentile(searchMs.words, 95)),
    pull_blocks: targets.length,
    pull_errors: pullErrors,
    pull_p50_ms: r2(percentile(pullMs, 50)),
    pull_p95_ms: r2(percentile(pullMs, 95)),
    pull_session_ms: r2(pullSessionMs),
    pull_max_ms: r2(Math.max(0, ...pullMs)),
    ...pullLines,
    ...validation,
    blocks: targets.length,
    peak_rss_mb: peakRss,
    db_bytes: stat.size,
    db_ratio: r2(stat.size / sourceBytes),
    ...merge,
    ...mcp,
    ...synthetic,
    ...smallFiles,
    ...poolSpeedup,
    ...shardFigures,
    ...observeFigures,
    ...searchScaleFigures,
    node: process.version,
    cpus: os.cpus().length,
  };

  const outFile = argv.includes('--out') ? argv[argv.indexOf('--out') + 1] : path.join(ROOT, 'bench', 'results.json');
  let previous: BenchRecord | undefined;
  try {
    previous = JSON.parse(await fsp.readFile(outFile, 'utf8')) as BenchRecord;
  } catch {
    previous = undefined;
  }
  // every figure against the last record; scenarios this run skipped keep their last figures and dates
  const { record, worse, carried } = mergeRecords(previous, result, new Date().toISOString().slice(0, 10));
  if (previous) {
    const ratio: Record<string, number> = {};
    for (const [k, v] of Object.entries(result)) {
      const last = previous[k];
      if (typeof v === 'number' && typeof last === 'number' && last !== 0) ratio[k] = r2(v / last);
    }
    console.log(JSON.stringify({ compared_to_previous: ratio }));
  }
  if (worse.length) {
    console.log(JSON.stringify({ worse_than_last_by_over_20_percent: worse }));
    for (const w of worse) console.error(`[bench] WORSE: ${w.figure} ${w.last} -> ${w.now} (x${w.ratio}; last measured ${w.last_measured_on})`);
  }
  if (Object.keys(carried).length)
    console.error(
      `[bench] not measured this run, kept from before: ${Object.entries(carried)
        .map(([k, d]) => `${k} (${d})`)
        .join(', ')}`,
    );
  await fsp.mkdir(path.dirname(outFile), { recursive: true });
  await fsp.writeFile(outFile, `${JSON.stringify(record, null, 2)}\n`);
  console.log(JSON.stringify(result));
}

main().catch((err: unknown) => {
  console.error(`[bench] ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});

/** A team's index served (`--search-served GxB`: G groups of B blocks), when asked. */
async function searchServed(work: string, argv: string[]): Promise<Record<string, number>> {
  if (!argv.includes('--search-served')) return {};
  const told = argv[argv.indexOf('--search-served') + 1] ?? '';
  const m = /^(\d+)x(\d+)$/.exec(told);
  if (!m) throw new Error(`--search-served takes GROUPSxBLOCKS (5x200000), not '${told}'`);
  console.error(`[bench] a team's ${Number(m[1]) * Number(m[2])} synthetic blocks served in ${m[1]} groups`);
  return searchServedAtScale(work, Number(m[1]), Number(m[2]));
}

/** The sizes `--search-scale N,M` names (20,000 and 200,000 unless told; 0 for none), each measured in turn. */
async function searchScales(work: string, argv: string[]): Promise<Record<string, number>> {
  const told = argv.includes('--search-scale') ? argv[argv.indexOf('--search-scale') + 1] : '20000,200000';
  const sizes = told
    .split(',')
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);
  let figures: Record<string, number> = {};
  for (const n of sizes) {
    console.error(`[bench] search at ${n} synthetic blocks`);
    figures = { ...figures, ...(await searchAtScale(work, n)) };
  }
  return figures;
}
