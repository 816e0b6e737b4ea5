/** Typed queries about indexed files. */
import { repoKind } from '../sources/kinds';
import { createHash } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { blobId } from '../base/hash';
import { decodePython } from '../parse/decode';
import type { IndexDb } from './database';
import { decodeFacts } from './factsCodec';
import { importedConfig, sourcePathIn, sourcesDirOf } from './sourceText';

/** A definition's text as a short digest: what a pull records of each definition, and what the index is asked now. */
export function definitionDigest(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/**
 * The digest of each top-level definition of `relPath` in repository `repo` as the index holds it now, by each name it
 * binds; undefined when the file's bytes cannot be read here as indexed (a git source, a file changed on disk since).
 */
export function definitionDigests(db: IndexDb, repo: string, relPath: string): Map<string, string> | undefined {
  const row = db.get(
    "SELECT r.kind AS kind, r.root AS root, r.config AS config, f.hash AS hash, f.facts AS facts FROM files f JOIN repos r ON r.id = f.repo_id WHERE r.name = ? AND f.path = ? AND f.status != 'skipped'",
    [repo, relPath],
  );
  if (!row || !row.facts) return undefined;
  const hash = String(row.hash);
  const where: string[] = [];
  const sources = sourcesDirOf(db);
  if (sources) where.push(sourcePathIn(sources, hash));
  if (repoKind(String(row.kind)).workingTree && row.root && !importedConfig(row.config)) where.push(path.join(String(row.root), relPath));
  for (const file of where) {
    let bytes: Uint8Array;
    try {
      bytes = fs.readFileSync(file);
    } catch {
      continue;
    }
    if (blobId(bytes) !== hash) continue;
    const decoded = decodePython(bytes);
    if (!decoded.ok) return undefined;
    const out = new Map<string, string>();
    for (const u of decodeFacts(row.facts).units) {
      const digest = definitionDigest(decoded.text.slice(u.start, u.end));
      for (const b of u.binds) out.set(b, digest);
    }
    return out;
  }
  return undefined;
}

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

/** Records a block's last validation (a JSON object: stageRecord.ts `validationRecord`). */
export function setValidation(db: IndexDb, classId: number, validation: string): void {
  db.run('UPDATE classes SET validation = ? WHERE id = ?', [validation, classId]);
}
