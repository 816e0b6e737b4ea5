/** What the bench's scenarios share: where the corpus and the judge are, timing and percentiles, the cold index. */
import { execFileSync } from 'child_process';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { performance } from 'perf_hooks';
import { IndexDb } from '../src/core/store/database';
// eslint-disable-next-line no-restricted-imports -- the bench times one source's indexing alone (live updates, floors)
import { finishRun, indexSource } from '../src/core/index/indexer';
import { indexSources } from '../src/core/index/indexSources';
import type { FloorInput } from './floorWorker';
import { searchBlocks } from '../src/core/search/search';
import { openFolder } from '../src/core/sources/folder';

export const ROOT = path.resolve(__dirname, '..');
export const ASSETS = {
  treeSitterWasm: path.join(ROOT, 'node_modules/web-tree-sitter/web-tree-sitter.wasm'),
  pythonWasm: path.join(ROOT, 'node_modules/tree-sitter-python/tree-sitter-python.wasm'),
  sqlWasm: path.join(ROOT, 'node_modules/sql.js/dist/sql-wasm.wasm'),
};
export const DIST = '/usr/lib/python3/dist-packages';
export const RUNNER = path.join(ROOT, 'python-runner', 'judge.py');
export const PYTHON = '/usr/bin/python3';

export function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : 0;
}

export const r2 = (x: number): number => Math.round(x * 100) / 100;

/** Copies the .py files of a package folder (nothing else) into `dest`. */
export async function copyPython(src: string, dest: string): Promise<{ files: number; bytes: number }> {
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

export interface Timing {
  wall_ms: number;
  cpu_ms: number;
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export async function timed<T>(fn: () => Promise<T> | T): Promise<{ value: T; wall_ms: number; cpu_ms: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await fn();
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { value, wall_ms: r2(wall), cpu_ms: r2((c.user + c.system) / 1000) };
}

/** A parse worker: the bundle's when built (npm run bench builds first), else the TypeScript one. */
export function workerScript(bundled: string, source: string): Promise<string> {
  return fsp
    .stat(path.join(ROOT, 'dist', bundled))
    .then(() => path.join(ROOT, 'dist', bundled))
    .catch(() => path.join(ROOT, source));
}

/** A request for one of the floors (bench/floorWorker.ts). */
export function floorInput(file: string, floor: 'parse' | 'walk'): FloorInput {
  return { file, floor };
}

/** Every file of every root, absolute. */
export async function listAll(roots: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const root of roots) {
    const src = await openFolder({ location: root });
    const { files } = await src.list();
    for (const f of files) out.push(src.localPath!(f));
  }
  return out;
}

/** Cold index of `roots` (named `names`) into `dbFile`, as the language server runs it; polls a search meanwhile. */
export async function coldIndex(
  dbFile: string,
  roots: string[],
  names: (string | undefined)[],
  indexOptions: Parameters<typeof indexSource>[2],
  release: () => Promise<void>,
  /** A query the corpus answers: polled until it finds something (the first search result's time). */
  firstQuery = 'conv',
): Promise<{ wall_ms: number; cpu_ms: number; firstResultMs: number }> {
  let firstResultMs: number | undefined;
  const coldStart = performance.now();
  const cold = await timed(async () => {
    const { db } = await IndexDb.open(dbFile, { sqlWasm: ASSETS.sqlWasm });
    const polling = setInterval(() => {
      if (firstResultMs !== undefined) return;
      if (searchBlocks(db, { text: firstQuery, limit: 1 }).length) firstResultMs = performance.now() - coldStart;
    }, 20);
    // the indexing loop of `nn-rag index` and the server, with the server's rediscovery while files land
    const folders = roots.map((location, i) => ({ location, name: names[i], kind: 'folder' as const }));
    await indexSources(db, folders, { open: { cacheDir: os.tmpdir() }, index: () => indexOptions, rediscover: true });
    clearInterval(polling);
    // the parse workers end before the finish, as they do there
    await release();
    finishRun(db);
    firstResultMs ??= performance.now() - coldStart;
    await db.save();
    db.close();
  });
  return { wall_ms: cold.wall_ms, cpu_ms: cold.cpu_ms, firstResultMs: firstResultMs ?? 0 };
}

export function hasTorch(): boolean {
  try {
    execFileSync(PYTHON, ['-c', 'import torch'], { stdio: 'ignore', timeout: 60_000 });
    return true;
  } catch {
    return false;
  }
}
