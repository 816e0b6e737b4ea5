/** Typed queries about indexed files. */
import type { IndexDb } from './database';

/** What the index holds now for `path` of repository `repo`: its blob id, or why there is none. */
export type IndexedFile = { state: 'indexed'; blob: string } | { state: 'missing' } | { state: 'unindexed' };

export function indexedFile(db: IndexDb, repo: string, path: string): IndexedFile {
  const r = db.get('SELECT id FROM repos WHERE name = ?', [repo]);
  if (!r) return { state: 'unindexed' };
  const file = db.get("SELECT hash FROM files WHERE repo_id = ? AND path = ? AND status != 'skipped'", [r.id, path]);
  return file ? { state: 'indexed', blob: String(file.hash) } : { state: 'missing' };
}
