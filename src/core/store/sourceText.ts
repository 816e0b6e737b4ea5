/** Reads an indexed file's bytes back from where the index found it (a folder or a cached clone). */
import { repoKind } from '../sources/kinds';
import { promises as fsp } from 'fs';
import { blobId } from '../base/hash';
import * as path from 'path';
import type { ClassRef } from './target';
import { NnragError } from '../base/errors';
import type { IndexDb } from './database';
import { decodePython } from '../parse/decode';
import { readGitBlob } from '../sources/git';

export interface RepoRow {
  id: number;
  name: string;
  kind: string;
  location: string;
  url: string | null;
  commit: string | null;
  root: string;
  license: string | null;
  /** `imported`: the repository came with an imported index (`nn-rag import`, a shared index): it has no folder here. */
  /** `uncommitted` (an imported index's): the paths its exporter's checkout had changed or added since its commit. */
  config: { inline?: boolean; include?: string[]; exclude?: string[]; symbols?: string[]; imported?: boolean; uncommitted?: unknown };
}

/**
 * Whether a repository came with an imported index: its rows are another machine's data, so no path of it is ever
 * opened, mounted or imported from; its files are read from the index's own sources, by blob id.
 */
export function isImported(repo: RepoRow): boolean {
  return repo.config.imported === true;
}

/** Of an imported repository, whether its exporter's checkout had `filePath` changed or added since its commit (the
 * archive's record: an imported repository has no checkout here to ask). */
export function importedUncommitted(repo: RepoRow, filePath: string): boolean {
  const list = repo.config.uncommitted;
  return isImported(repo) && Array.isArray(list) && list.includes(filePath);
}

/** The same, of a repository row's `config` column as stored (JSON text). */
export function importedConfig(config: unknown): boolean {
  try {
    return (JSON.parse(String(config ?? '{}')) as { imported?: unknown }).imported === true;
  } catch {
    return false;
  }
}

export function loadRepoRows(db: IndexDb): Map<number, RepoRow> {
  const out = new Map<number, RepoRow>();
  for (const r of db.all('SELECT id, name, kind, location, url, commit_id, root, license, config FROM repos')) {
    out.set(Number(r.id), {
      id: Number(r.id),
      name: String(r.name),
      kind: String(r.kind),
      location: String(r.location),
      url: r.url === null ? null : String(r.url),
      commit: r.commit_id === null ? null : String(r.commit_id),
      root: String(r.root),
      license: r.license === null ? null : String(r.license),
      config: configOf(r.config),
    });
  }
  return out;
}

function configOf(value: unknown): RepoRow['config'] {
  try {
    const c = JSON.parse(String(value ?? '{}')) as unknown;
    return c && typeof c === 'object' && !Array.isArray(c) ? (c as RepoRow['config']) : {};
  } catch {
    return {};
  }
}

/**
 * Where an imported index keeps the bytes of the files it indexed (`<db>.sources/<blob id>`), so that a shared index
 * pulls on a machine that has none of its repositories; absent for an index built here.
 */
export function sourcesDirOf(db: IndexDb): string | undefined {
  return db.file ? `${db.file}.sources` : undefined;
}

export function sourcePathIn(dir: string, hash: string): string {
  return path.join(dir, hash.slice(0, 2), hash);
}

/**
 * The file's bytes, checked against the hash the index recorded: from the index's own store of sources when it has
 * them (content-addressed: the same bytes wherever they were read), else from where the index found the file.
 */
export async function readIndexedFile(repo: RepoRow, relPath: string, hash: string, sources?: string): Promise<Uint8Array> {
  let bytes: Uint8Array | undefined;
  if (sources) {
    bytes = await fsp.readFile(sourcePathIn(sources, hash)).catch(() => undefined);
    if (bytes && blobId(bytes) === hash) return bytes;
  }
  if (isImported(repo)) {
    throw new NnragError(
      'not-found',
      `${repo.name}/${relPath} is not in the imported index's sources (${bytes ? 'its bytes do not match their blob id' : 'missing'}); import the archive again`,
    );
  }
  if (repoKind(repo.kind).files === 'git-objects') {
    bytes = await readGitBlob(repo.root, hash);
  } else {
    try {
      bytes = await fsp.readFile(path.join(repo.root, relPath));
    } catch (err) {
      throw new NnragError('not-found', `cannot read ${repo.name}/${relPath}: ${(err as Error).message}; run 'nn-rag index' again`);
    }
  }
  if (blobId(bytes) !== hash) {
    throw new NnragError('not-found', `${repo.name}/${relPath} changed since it was indexed; run 'nn-rag index' again`);
  }
  return bytes;
}

/** The decoded text of the indexed file that holds a class ('' when it cannot be decoded), and its git blob id. */
export async function readClassFile(db: IndexDb, ref: ClassRef): Promise<{ text: string; blob: string }> {
  const repo = loadRepoRows(db).get(ref.repoId)!;
  const blob = String(db.get('SELECT hash FROM files WHERE id = ?', [ref.fileId])!.hash);
  // only the decoded text is wanted: no parse
  const decoded = decodePython(await readIndexedFile(repo, ref.path, blob, sourcesDirOf(db)));
  return { text: decoded.ok ? decoded.text : '', blob };
}
