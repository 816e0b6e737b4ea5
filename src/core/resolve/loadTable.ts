/** Builds the in-memory module table from the index: one JSON parse per module, no query per name. */
import type { IndexDb } from '../index/database';
import { decodeFacts } from '../index/factsCodec';
import { ModuleTable } from './moduleTable';
import type { ModuleRecord, RepoRecord } from './moduleTable';

export function loadRepos(db: IndexDb): RepoRecord[] {
  return db.all('SELECT id, name, priority FROM repos').map((r) => ({ id: Number(r.id), name: String(r.name), priority: Number(r.priority) }));
}

export function loadModuleTable(db: IndexDb): ModuleTable {
  const repos = loadRepos(db);
  const names = new Map(repos.map((r) => [r.id, r.name]));
  const records: ModuleRecord[] = [];
  for (const r of db.all("SELECT id, repo_id, path, module, is_package, facts FROM files WHERE status = 'parsed'")) {
    records.push({
      repoId: Number(r.repo_id),
      repo: names.get(Number(r.repo_id)) ?? '?',
      module: String(r.module),
      isPackage: Number(r.is_package) === 1,
      path: String(r.path),
      fileId: Number(r.id),
      facts: decodeFacts(r.facts),
    });
  }
  return new ModuleTable(records, repos);
}
