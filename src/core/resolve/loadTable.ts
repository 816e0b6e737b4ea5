/** Builds the in-memory module table from the index: one JSON parse per module, no query per name. */
import type { IndexDb } from '../index/database';
import { decodeFacts } from '../index/factsCodec';
import type { ModuleFacts } from '../parse/types';
import { ModuleTable } from './moduleTable';
import type { ModuleRecord, RepoRecord } from './moduleTable';

export function loadRepos(db: IndexDb): RepoRecord[] {
  return db.all('SELECT id, name, priority FROM repos').map((r) => ({ id: Number(r.id), name: String(r.name), priority: Number(r.priority) }));
}

export interface LoadOptions {
  /**
   * Keep only what resolving module-level names needs (top-level imports, what each unit binds, `__all__`): a
   * fraction of the memory, for discovery over a large index. Pulls need the full facts.
   */
  slim?: boolean;
  /** Sees each module's full facts once, as they are read (before slimming). */
  onFacts?: (facts: ModuleFacts) => void;
}

export function loadModuleTable(db: IndexDb, options: LoadOptions = {}): ModuleTable {
  const repos = loadRepos(db);
  const names = new Map(repos.map((r) => [r.id, r.name]));
  const records: ModuleRecord[] = [];
  // row by row: the decoded facts of one file at a time, never every file's blob and facts at once
  db.each("SELECT id, repo_id, path, module, is_package, facts FROM files WHERE status = 'parsed'", [], (r) => {
    const facts = decodeFacts(r.facts);
    options.onFacts?.(facts);
    records.push({
      repoId: Number(r.repo_id),
      repo: names.get(Number(r.repo_id)) ?? '?',
      module: String(r.module),
      isPackage: Number(r.is_package) === 1,
      path: String(r.path),
      fileId: Number(r.id),
      facts: options.slim ? slimFacts(facts) : facts,
    });
  });
  return new ModuleTable(records, repos);
}

/** Shared by every slim unit (nothing writes to a unit's names). */
const NO_NAMES: string[] = [];

function slimFacts(f: ModuleFacts): ModuleFacts {
  return {
    docstring: '',
    all: f.all,
    futureAnnotations: f.futureAnnotations,
    imports: f.imports.filter((i) => !i.inFunction),
    units: f.units.map((u) => ({ kind: u.kind, binds: u.binds, guard: u.guard, defNames: NO_NAMES, callNames: NO_NAMES, start: 0, end: 0, startLine: 0, endLine: 0 })),
    classes: [],
    functions: [],
    registrations: [],
    calls: [],
  };
}
