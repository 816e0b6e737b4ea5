/**
 * A pull session: what a run of pulls over one index reads once and keeps (the repositories, the files, parsed
 * modules, builders, shortened docstrings, README blocks, which observed entries still hold).
 */
import * as fs from 'fs';
import type { IndexDb } from '../store/database';
import { allFiles } from '../store/files';
import type { ReadmeBlock } from './readmeExamples';
import type { ParsedModule } from '../parse/types';
import { BuilderIndex } from '../resolve/builders';
import type { ModuleTable } from '../resolve/moduleTable';
import { loadRepoRows, sourcesDirOf } from '../store/sourceText';
import type { RepoRow } from '../store/sourceText';

/** Everything a pull reads from the index, loaded once and shared by a batch of pulls. */
export interface PullSession {
  db: IndexDb;
  table: ModuleTable;
  repos: Map<number, RepoRow>;
  files: Map<number, { path: string; hash: string }>;
  skipped: Map<string, string>;
  parsed: Map<number, ParsedModule>;
  builders: Map<number, BuilderIndex>;
  /** A definition's text (by its hash) with its docstrings cut: the same helpers come back in pull after pull. */
  shortened: Map<string, string>;
  /** The index's own store of sources (an imported index), when it has one: looked for once per session. */
  sources?: string;
  /** Per repository, the Python code blocks of its README (readmeExamples.ts), read once per session. */
  readmes: Map<number, Promise<ReadmeBlock[]>>;
  /** Per repository, whether each observed entry still holds (read once). */
  observed: Map<number, Map<string, boolean>>;
}

export function openPullSession(db: IndexDb, table: ModuleTable): PullSession {
  const files = new Map<number, { path: string; hash: string }>();
  const skipped = new Map<string, string>();
  for (const f of allFiles(db)) {
    files.set(f.id, { path: f.path, hash: f.hash });
    if (f.skipped) skipped.set(`${f.repoId}:${f.module}`, f.skipped);
  }
  const store = sourcesDirOf(db);
  const sources = store && fs.existsSync(store) ? store : undefined;
  return {
    db,
    table,
    repos: loadRepoRows(db),
    files,
    skipped,
    parsed: new Map(),
    builders: new Map(),
    shortened: new Map(),
    sources,
    readmes: new Map(),
    observed: new Map(),
  };
}
