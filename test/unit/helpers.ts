/** Shared test helpers: asset paths from node_modules, temporary folders, small fixture trees. */
import { execFileSync } from 'child_process';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { runCli } from '../../src/cli/cli';
import type { CliAssets } from '../../src/cli/cli';
import { IndexDb } from '../../src/core/store/database';
import { finishRun, indexSource } from '../../src/core/index/indexer';
import type { IndexRunStats } from '../../src/core/index/indexer';
import { PythonParser } from '../../src/core/parse/parser';
import { pullBlock } from '../../src/core/pull/pull';
import { openPullSession } from '../../src/core/pull/session';
import type { PullOptions, PullReport } from '../../src/core/pull/types';
import { loadModuleTable } from '../../src/core/resolve/loadTable';
import { findTarget } from '../../src/core/store/target';
import { openFolder } from '../../src/core/sources/folder';
import type { SourceConfig } from '../../src/core/sources/types';
import type { ClosureContext } from '../../src/core/resolve/closure';

export const ROOT = path.resolve(__dirname, '..', '..');

export const ASSETS: CliAssets = {
  treeSitterWasm: path.join(ROOT, 'node_modules/web-tree-sitter/web-tree-sitter.wasm'),
  pythonWasm: path.join(ROOT, 'node_modules/tree-sitter-python/tree-sitter-python.wasm'),
  sqlWasm: path.join(ROOT, 'node_modules/sql.js/dist/sql-wasm.wasm'),
  runner: path.join(ROOT, 'python-runner/judge.py'),
};

let parserPromise: Promise<PythonParser> | undefined;
export function parser(): Promise<PythonParser> {
  parserPromise ??= PythonParser.create(ASSETS);
  return parserPromise;
}

export async function tmpdir(prefix = 'nnrag-test-'): Promise<string> {
  return fsp.mkdtemp(path.join(os.tmpdir(), prefix));
}

/** Writes `files` (relative path -> text or bytes) under `root`. */
export async function writeTree(root: string, files: Record<string, string | Uint8Array>): Promise<void> {
  for (const [rel, content] of Object.entries(files)) {
    const p = path.join(root, rel);
    await fsp.mkdir(path.dirname(p), { recursive: true });
    await fsp.writeFile(p, content);
  }
}

export async function memoryDb(): Promise<IndexDb> {
  return (await IndexDb.open(undefined, { sqlWasm: ASSETS.sqlWasm })).db;
}

/** Indexes a folder into `db` and runs discovery, as `nn-rag index` does. */
export async function indexFolder(db: IndexDb, dir: string, config: Partial<SourceConfig> = {}): Promise<IndexRunStats> {
  const source = await openFolder({ location: dir, ...config });
  const stats = await indexSource(db, source, { parser: await parser() });
  finishRun(db);
  return stats;
}

export const PYTHON_WITH_TORCH = '/usr/bin/python3';

/** Whether PYTHON_WITH_TORCH imports torch (tests that validate are skipped without it). */
export function hasTorch(): boolean {
  try {
    execFileSync(PYTHON_WITH_TORCH, ['-c', 'import torch'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** `files` written to a folder and indexed in memory, with the context the closure is computed in over them (each
 * repository's own code inlined). */
export async function closureContextOf(files: Record<string, string>, prefix: string): Promise<{ db: IndexDb; ctx: ClosureContext }> {
  const dir = await tmpdir(prefix);
  await writeTree(dir, files);
  const db = await memoryDb();
  await indexFolder(db, dir);
  const p = await parser();
  const ctx: ClosureContext = {
    table: loadModuleTable(db),
    parse: async (rec) => {
      const row = db.all('SELECT path FROM files WHERE id = ?', [rec.fileId])[0];
      const outcome = p.parse(await fsp.readFile(path.join(dir, String(row.path))), Number.MAX_SAFE_INTEGER);
      if (!outcome.ok) throw new Error(outcome.detail);
      return outcome;
    },
    inlines: (rec, rootRepo) => rec.repoId === rootRepo,
    skippedReason: () => undefined,
  };
  return { db, ctx };
}

/** Indexes `files`, pulls `target` with validation by the interpreter that has torch. */
export async function pullValidated(files: Record<string, string>, target: string, extra: Partial<PullOptions> = {}): Promise<PullReport> {
  const dir = await tmpdir();
  await writeTree(dir, files);
  const db = await memoryDb();
  await indexFolder(db, dir);
  return pullBlock(openPullSession(db, loadModuleTable(db)), findTarget(db, target), {
    parser: await parser(),
    out: path.join(dir, 'out', 'pulled.py'),
    python: PYTHON_WITH_TORCH,
    runner: ASSETS.runner,
    validate: true,
    timeoutMs: 100_000,
    ...extra,
  });
}

/** Runs the command line in this process; returns its exit code and what it printed. */
export async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, { assets: ASSETS, out: (t) => (out += t), err: (t) => (err += t), tty: false, env: {} });
  return { code, out, err };
}

/** A LICENSE file as a repository ships it: the SPDX text of `id` under a copyright line of its own. */
export function licenseFile(id: string): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const spdx = require('spdx-license-list/full') as Record<string, { licenseText: string }>;
  return `Copyright (c) 2024 Someone\n\n${spdx[id].licenseText}\n`;
}
