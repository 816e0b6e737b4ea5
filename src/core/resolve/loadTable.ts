/** Builds the in-memory module table from the index: one JSON parse per module, no query per name. */
import type { IndexDb } from '../store/database';
import { decodeFacts, decodeSlim, interner, slimFacts, usesOf } from '../store/factsCodec';
import type { ModuleFacts } from '../parse/types';
import { ModuleTable } from './moduleTable';
import type { ModuleRecord, RepoRecord } from './moduleTable';

export function loadRepos(db: IndexDb): RepoRecord[] {
  return db.all('SELECT id, name, priority FROM repos').map((r) => ({ id: Number(r.id), name: String(r.name), priority: Number(r.priority) }));
}

export interface LoadOptions {
  /**
   * Keep only what resolving module-level names needs (top-level imports, what each unit binds, `__all__`): a
   * fraction of the memory, for discovery over a large index, read from each file's slim facts. Pulls need the full
   * facts.
   */
  slim?: boolean;
  /** With `slim`: sees each module's names with the number of its units that use each. */
  onUses?: (uses: [string, number][]) => void;
}

export function loadModuleTable(db: IndexDb, options: LoadOptions = {}): ModuleTable {
  const repos = loadRepos(db);
  const names = new Map(repos.map((r) => [r.id, r.name]));
  const records: ModuleRecord[] = [];
  // row by row: the decoded facts of one file at a time, never every file's blob and facts at once
  const columns = options.slim ? 'slim, CASE WHEN slim IS NULL THEN facts END AS facts' : 'facts';
  const intern = interner();
  db.each(`SELECT id, repo_id, path, module, is_package, ${columns} FROM files WHERE status = 'parsed'`, [], (r) => {
    let facts: ModuleFacts;
    if (options.slim) {
      // a row from before slim facts were kept: from its full facts
      const slim = r.slim instanceof Uint8Array ? decodeSlim(r.slim, intern) : undefined;
      const full = slim ? undefined : decodeFacts(r.facts);
      options.onUses?.(slim?.uses ?? usesOf(full!));
      facts = slim?.facts ?? slimFacts(full!, intern);
    } else {
      facts = decodeFacts(r.facts);
    }
    records.push({
      repoId: Number(r.repo_id),
      repo: names.get(Number(r.repo_id)) ?? '?',
      module: String(r.module),
      isPackage: Number(r.is_package) === 1,
      path: String(r.path),
      fileId: Number(r.id),
      facts,
    });
  });
  return new ModuleTable(records, repos);
}
