/**
 * One index for the team: `nn-rag export` writes the database, its units cache, the bytes of every indexed file (so
 * that the index pulls on a machine that has none of its repositories) and a manifest (repositories, commits, parser
 * version, sha256 of every file) into one gzipped tar archive; `nn-rag import` checks an archive
 * before anything is replaced (format, parser version, every file's hash, that the database is one of ours) and
 * then swaps it in, so a tampered or stale archive is refused and the index in use stays as it was.
 */
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as tar from 'tar';
import { NnragError } from '../base/errors';
import { fileSha256 } from '../base/hash';
import { PARSER_VERSION } from '../parse/facts';
import { redactUrls } from '../sources/git';
import { IndexDb } from './database';
import { loadRepoRows, readIndexedFile, sourcePathIn, sourcesDirOf } from './sourceText';

export const ARCHIVE_FORMAT = 'nn-rag/index-archive@1';
const MANIFEST = 'nnrag-index.json';
const DB_NAME = 'index.db';
const UNITS = 'index.db.units';
const SOURCES = 'index.db.sources';

export interface ArchiveManifest {
  format: typeof ARCHIVE_FORMAT;
  parser_version: string;
  exported_at: string;
  repositories: { name: string; kind: string; location: string; commit: string | null; license: string | null; indexed_at: string | null }[];
  files: number;
  blocks: number;
  /** Indexed files whose bytes travel in the archive (a pull needs them), and those that could not be read. */
  sources?: { kept: number; missing: string[] };
  /** sha256 of each file of the archive but this manifest, by its path in the archive. */
  sha256: Record<string, string>;
}

async function listFiles(root: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  let entries: import('fs').Dirent[];
  try {
    entries = await fsp.readdir(path.join(root, rel), { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await listFiles(root, p)));
    else if (e.isFile()) out.push(p);
  }
  return out.sort();
}

/** Writes `dbFile` (saved, and not being written) with its units cache and a manifest into the archive `to`. */
export async function exportIndex(dbFile: string, to: string, sqlWasm?: string): Promise<ArchiveManifest> {
  // no writer while it is read: the lock is held until the copy is made
  const { db } = await IndexDb.open(dbFile, { sqlWasm, write: 'try' });
  const stage = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-export-'));
  try {
    const repositories = db.all('SELECT name, kind, location, commit_id, license, indexed_at FROM repos ORDER BY name').map((r) => ({
      name: String(r.name),
      kind: String(r.kind),
      // (credentials and queries never leave in a URL)
      location: redactUrls(String(r.location)),
      commit: r.commit_id === null ? null : String(r.commit_id),
      license: r.license === null ? null : String(r.license),
      indexed_at: r.indexed_at === null ? null : String(r.indexed_at),
    }));
    const files = Number(db.get('SELECT count(*) AS n FROM files')?.n ?? 0);
    const blocks = Number(db.get('SELECT count(*) AS n FROM classes WHERE is_block = 1')?.n ?? 0);
    const parser = db.getMeta('parser_version') ?? 'none';
    await fsp.copyFile(dbFile, path.join(stage, DB_NAME));
    const units = await listFiles(`${dbFile}.units`);
    for (const f of units) {
      await fsp.mkdir(path.dirname(path.join(stage, UNITS, f)), { recursive: true });
      await fsp.copyFile(path.join(`${dbFile}.units`, f), path.join(stage, UNITS, f));
    }
    const sources = await stageSources(db, path.join(stage, SOURCES));
    db.close();
    const kept = await listFiles(path.join(stage, SOURCES));
    const names = [DB_NAME, ...units.map((f) => `${UNITS}/${f}`), ...kept.map((f) => `${SOURCES}/${f}`)];
    const sha256: Record<string, string> = {};
    for (const n of names) sha256[n] = await fileSha256(path.join(stage, n));
    const manifest: ArchiveManifest = { format: ARCHIVE_FORMAT, parser_version: parser, exported_at: new Date().toISOString(), repositories, files, blocks, sources, sha256 };
    await fsp.writeFile(path.join(stage, MANIFEST), `${JSON.stringify(manifest, null, 1)}\n`);
    const tmp = `${to}.${process.pid}.tmp`;
    await tar.create({ gzip: true, file: tmp, cwd: stage, portable: true, noMtime: true }, [MANIFEST, ...names]);
    await fsp.rename(tmp, to);
    return manifest;
  } finally {
    db.close();
    await fsp.rm(stage, { recursive: true, force: true });
  }
}

/** Copies the bytes of every indexed file into `dir` by blob id; names those that cannot be read (changed, gone). */
async function stageSources(db: IndexDb, dir: string): Promise<{ kept: number; missing: string[] }> {
  const repos = loadRepoRows(db);
  const own = sourcesDirOf(db);
  const missing: string[] = [];
  let kept = 0;
  for (const r of db.all('SELECT repo_id, path, hash FROM files ORDER BY repo_id, path')) {
    const repo = repos.get(Number(r.repo_id));
    const hash = String(r.hash);
    const to = sourcePathIn(dir, hash);
    if (!repo || (await fsp.stat(to).then(() => true, () => false))) continue;
    try {
      const bytes = await readIndexedFile(repo, String(r.path), hash, own);
      await fsp.mkdir(path.dirname(to), { recursive: true });
      await fsp.writeFile(to, bytes);
      kept++;
    } catch {
      missing.push(`${repo.name}/${String(r.path)}`);
    }
  }
  return { kept, missing };
}

/** Why an archive cannot be used, or its manifest: everything is read and checked in a folder of its own. */
async function checkedArchive(archive: string, stage: string, sqlWasm?: string): Promise<ArchiveManifest> {
  const refuse = (why: string): never => {
    throw new NnragError('bad-source', `${archive} is not a usable NN-RAG index: ${why}; the index in use is unchanged`);
  };
  const allowed = (p: string): boolean => p === MANIFEST || p === DB_NAME || ((p.startsWith(`${UNITS}/`) || p.startsWith(`${SOURCES}/`)) && !p.split('/').includes('..'));
  const odd: string[] = [];
  try {
    await tar.extract({
      file: archive,
      cwd: stage,
      strict: true,
      // files and folders of the archive's own layout only: no links, devices, absolute or climbing paths
      filter: (p, entry) => {
        const type = (entry as { type?: string }).type;
        const ok = (type === 'File' || type === 'Directory') && (type === 'Directory' ? [UNITS, SOURCES].includes(p.replace(/\/$/, '')) || allowed(p.replace(/\/$/, '')) : allowed(p));
        if (!ok) odd.push(p);
        return ok;
      },
    });
  } catch (err) {
    refuse(`it cannot be read as a gzipped tar archive (${err instanceof Error ? err.message : String(err)})`);
  }
  if (odd.length) refuse(`it holds entries an index archive does not (${odd.slice(0, 3).join(', ')})`);
  let manifest: ArchiveManifest;
  try {
    manifest = JSON.parse(await fsp.readFile(path.join(stage, MANIFEST), 'utf8')) as ArchiveManifest;
  } catch {
    return refuse(`it has no readable ${MANIFEST}`);
  }
  if (manifest.format !== ARCHIVE_FORMAT) refuse(`its format is ${JSON.stringify(manifest.format)}, not ${ARCHIVE_FORMAT}`);
  if (manifest.parser_version !== PARSER_VERSION) {
    refuse(`it was made by another version of NN-RAG's parser (${manifest.parser_version}; this one is ${PARSER_VERSION}): export it again with this version`);
  }
  const present = [DB_NAME, ...(await listFiles(path.join(stage, UNITS))).map((f) => `${UNITS}/${f}`), ...(await listFiles(path.join(stage, SOURCES))).map((f) => `${SOURCES}/${f}`)];
  const listed = Object.keys(manifest.sha256 ?? {}).sort();
  if (JSON.stringify(present.sort()) !== JSON.stringify(listed)) refuse('its files are not those its manifest lists');
  for (const n of listed) {
    if ((await fileSha256(path.join(stage, n))) !== manifest.sha256[n]) refuse(`${n} does not have the sha256 its manifest records (changed after export)`);
  }
  // the database is one of ours and opens
  try {
    const { db } = await IndexDb.open(path.join(stage, DB_NAME), { sqlWasm, readOnly: true });
    db.close();
  } catch (err) {
    refuse(`its database does not open (${err instanceof Error ? err.message : String(err)})`);
  }
  return manifest;
}

/**
 * Replaces `dbFile` and its units cache with the archive's, once the whole archive is checked; refuses (and changes
 * nothing) when it is not usable, or when `dbFile` is being written. `force` is needed to replace an existing index.
 */
export async function importIndex(archive: string, dbFile: string, { force = false, sqlWasm }: { force?: boolean; sqlWasm?: string } = {}): Promise<ArchiveManifest> {
  const exists = await fsp.stat(dbFile).then(() => true, () => false);
  if (exists && !force) throw new NnragError('usage', `${dbFile} exists: import replaces it with the archive's index only with --force`);
  const dir = path.dirname(path.resolve(dbFile));
  await fsp.mkdir(dir, { recursive: true });
  // checked beside the target (one file system: the swap is a rename)
  const stage = await fsp.mkdtemp(path.join(dir, '.nnrag-import-'));
  try {
    const manifest = await checkedArchive(archive, stage, sqlWasm);
    // nobody writes the index in use while it is swapped
    if (exists) {
      const { db } = await IndexDb.open(dbFile, { sqlWasm, write: 'try' });
      db.close();
    }
    const old = [`${dbFile}.units.${process.pid}.old`, `${dbFile}.sources.${process.pid}.old`];
    await fsp.rename(`${dbFile}.units`, old[0]).catch(() => undefined);
    await fsp.rename(`${dbFile}.sources`, old[1]).catch(() => undefined);
    await fsp.rename(path.join(stage, UNITS), `${dbFile}.units`).catch(async () => fsp.mkdir(`${dbFile}.units`, { recursive: true }));
    await fsp.rename(path.join(stage, SOURCES), `${dbFile}.sources`).catch(() => undefined);
    await fsp.rename(path.join(stage, DB_NAME), dbFile);
    // the save stamp of the old file no longer describes the new one
    await fsp.rm(`${dbFile}.saved`, { force: true });
    for (const o of old) await fsp.rm(o, { recursive: true, force: true });
    return manifest;
  } finally {
    await fsp.rm(stage, { recursive: true, force: true });
  }
}
