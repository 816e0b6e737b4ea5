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

/** Every indexed file: its id, repository, path, module, content hash, and why it was skipped when it was. */
export interface FileRow {
  id: number;
  repoId: number;
  path: string;
  module: string;
  hash: string;
  skipped?: string;
}

export function allFiles(db: IndexDb): FileRow[] {
  return db.all('SELECT id, repo_id, path, module, hash, status, reason, detail FROM files').map((r) => ({
    id: Number(r.id),
    repoId: Number(r.repo_id),
    path: String(r.path),
    module: String(r.module),
    hash: String(r.hash),
    skipped: r.status === 'skipped' ? `${String(r.reason)}: ${String(r.detail ?? '')}` : undefined,
  }));
}

/** Records a block's last validation (a JSON object; see pull.ts). */
export function setValidation(db: IndexDb, classId: number, validation: string): void {
  db.run('UPDATE classes SET validation = ? WHERE id = ?', [validation, classId]);
}
