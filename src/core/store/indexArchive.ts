/**
 * One index for the team: `nn-rag export` writes the database, its units cache, the bytes of every indexed file (so
 * that the index pulls on a machine that has none of its repositories) and a manifest (repositories, commits, parser
 * version, sha256 of every file) into one gzipped tar archive; `nn-rag import` checks an archive
 * before anything is replaced (format, parser version, every file's hash, that the database is one of ours) and
 * then swaps it in, so a tampered or stale archive is refused and the index in use stays as it was.
 */
import { repoKind } from '../sources/kinds';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { removeLeftovers, removeTree } from '../base/files';
import { extractBounded, removeChecked } from './archiveExtract';
import { plainText } from '../base/text';
import * as tar from 'tar';
import { NnragError } from '../base/errors';
import { breaksLine } from '../base/text';
import { fileSha256 } from '../base/hash';
import { PARSER_VERSION } from '../parse/facts';
import { redactUrls } from '../sources/git';
import { IndexDb } from './database';
import { isImported, loadRepoRows, readIndexedFile, sourcePathIn, sourcesDirOf } from './sourceText';
import { committedBlobs } from '../sources/open';

/** How much an import may take: bytes on disk once unpacked, and what `refreshShared` downloads. */
export interface ImportLimits {
  /** Bytes the archive may unpack to (the database, its units cache and the sources together). */
  maxBytes: number;
  /** Files the archive may hold. */
  maxEntries: number;
}

/** 2 GiB unpacked, 1,000,000 files: a large team index fits, a decompression bomb does not. */
export const DEFAULT_IMPORT_LIMITS: ImportLimits = { maxBytes: 2 * 1024 ** 3, maxEntries: 1_000_000 };

export const ARCHIVE_FORMAT = 'nn-rag/index-archive@1';
const MANIFEST = 'nnrag-index.json';
const DB_NAME = 'index.db';
const UNITS = 'index.db.units';
const SOURCES = 'index.db.sources';

export interface ArchiveManifest {
  format: typeof ARCHIVE_FORMAT;
  parser_version: string;
  exported_at: string;
  repositories: {
    name: string;
    kind: string;
    location: string;
    commit: string | null;
    license: string | null;
    indexed_at: string | null;
    /** A checkout's files changed or added since `commit` (their blobs travel in the sources): a pull says so. */
    uncommitted?: string[];
  }[];
  files: number;
  blocks: number;
  /** Indexed files whose bytes travel in the archive (a pull needs them), and those that could not be read. */
  sources?: { kept: number; missing: string[] };
  /** The observed calls that travel with it, per repository (their entries' errors shortened to one line). */
  catalogs?: { repository: string; entries: number; calls: number }[];
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

/**
 * Why the archive cannot be written at `to` (its folder is missing or not a folder, `to` is a folder), in words that
 * name the path as `shown` (what the user typed); checked before any work.
 */
export async function exportDestinationProblem(to: string, shown = to): Promise<string | undefined> {
  const folder = path.dirname(path.resolve(to));
  const shownFolder = path.dirname(shown);
  const st = await fsp.stat(folder).catch(() => undefined);
  if (!st) return `cannot export to ${shown}: the folder ${shownFolder} does not exist`;
  if (!st.isDirectory()) return `cannot export to ${shown}: ${shownFolder} is not a folder`;
  if ((await fsp.stat(to).catch(() => undefined))?.isDirectory())
    return `cannot export to ${shown}: it is a folder; name the archive file (for example ${path.join(shown, 'index.nnrag.tgz')})`;
  return undefined;
}

/** Writes `dbFile` (saved, and not being written) with its units cache and a manifest into the archive `to` (`shown`
 * names it in messages: as the user typed it). */
export async function exportIndex(dbFile: string, to: string, sqlWasm?: string, shown = to): Promise<ArchiveManifest> {
  const problem = await exportDestinationProblem(to, shown);
  if (problem) throw new NnragError('usage', problem);
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
    const catalogs = db
      .all(
        `SELECT r.name AS name, (SELECT count(*) FROM observed_entries e WHERE e.repo_id = r.id) AS entries,
           (SELECT count(*) FROM observed_calls c WHERE c.repo_id = r.id) AS calls FROM repos r ORDER BY r.name`,
      )
      .map((r) => ({ repository: String(r.name), entries: Number(r.entries), calls: Number(r.calls) }))
      .filter((c) => c.entries > 0);
    // a checkout's files its commit does not hold as indexed: recorded, so pulls from the archive say "uncommitted"
    const uncommitted = await uncommittedPaths(db);
    for (const r of repositories) {
      const list = uncommitted.get(r.name);
      if (list?.length) Object.assign(r, { uncommitted: list });
    }
    await fsp.copyFile(dbFile, path.join(stage, DB_NAME));
    await shortenErrors(path.join(stage, DB_NAME), sqlWasm, uncommitted);
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
    const manifest: ArchiveManifest = {
      format: ARCHIVE_FORMAT,
      parser_version: parser,
      exported_at: new Date().toISOString(),
      repositories,
      files,
      blocks,
      sources,
      catalogs,
      sha256,
    };
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

/** The exported copy's observed entries keep a short error (what a repository's test said is the team's to read, not
 * a place for what that test could read): one line, at most EXPORTED_ERROR characters. */
const EXPORTED_ERROR = 120;

/**
 * Of each repository, the paths of the files that are not what its commit holds (changed or added and not committed):
 * asked of a local checkout once, in one walk of the commit's tree; an imported repository's own record is kept.
 */
async function uncommittedPaths(db: IndexDb): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const repo of loadRepoRows(db).values()) {
    let list: string[] = [];
    if (isImported(repo)) {
      const had = repo.config.uncommitted;
      list = Array.isArray(had) ? had.filter((p): p is string => typeof p === 'string') : [];
    } else if (repoKind(repo.kind).workingTree && repo.commit && /^[0-9a-f]{40}$/.test(repo.commit) && repo.root) {
      const committed = await committedBlobs(repo.root, repo.commit);
      if (!committed) continue;
      list = db
        .all('SELECT path, hash FROM files WHERE repo_id = ? ORDER BY path', [repo.id])
        .filter((f) => committed.get(String(f.path)) !== String(f.hash))
        .map((f) => String(f.path));
    }
    if (list.length) out.set(repo.name, list);
  }
  return out;
}

async function shortenErrors(file: string, sqlWasm?: string, uncommitted = new Map<string, string[]>()): Promise<void> {
  const { db } = await IndexDb.open(file, { sqlWasm, write: 'try' });
  try {
    // the copy's repositories record their uncommitted files (an import keeps them in its `config`)
    for (const r of db.all('SELECT id, name, config FROM repos')) {
      const list = uncommitted.get(String(r.name));
      if (!list?.length) continue;
      const config = { ...(JSON.parse(String(r.config ?? '{}')) as Record<string, unknown>), uncommitted: list };
      db.run('UPDATE repos SET config = ? WHERE id = ?', [JSON.stringify(config), Number(r.id)]);
    }
    const rows = db.all('SELECT repo_id, entry, error FROM observed_entries WHERE error IS NOT NULL');
    db.transaction(() => {
      for (const r of rows) {
        const short = plainText(String(r.error), EXPORTED_ERROR);
        if (short !== r.error) db.run('UPDATE observed_entries SET error = ? WHERE repo_id = ? AND entry = ?', [short, r.repo_id, r.entry]);
      }
    });
    await db.save();
  } finally {
    db.close();
  }
  await fsp.rm(`${file}.saved`, { force: true });
  await fsp.rm(`${file}.lock`, { force: true });
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
    if (
      !repo ||
      (await fsp.stat(to).then(
        () => true,
        () => false,
      ))
    )
      continue;
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
async function checkedArchive(archive: string, stage: string, sqlWasm: string | undefined, limits: ImportLimits, shown: string): Promise<ArchiveManifest> {
  const refuse = (why: string): never => {
    throw new NnragError('bad-source', `${shown} is not a usable NN-RAG index: ${why}; the index in use is unchanged`);
  };
  const allowed = (p: string): boolean =>
    p === MANIFEST || p === DB_NAME || ((p.startsWith(`${UNITS}/`) || p.startsWith(`${SOURCES}/`)) && !p.split('/').includes('..'));
  let bytes = 0;
  let entries = 0;
  // files and folders of the archive's own layout only: no links, devices, absolute or climbing paths; and no more
  // bytes or files than the limits (the sizes are the entries' own headers, read before any byte is written); the
  // first entry refused stops the unpacking, whose writes are all closed before the stage may be removed
  const why = await extractBounded(archive, stage, ({ path: p, type, size }) => {
    const bare = p.replace(/\/$/, '');
    const ok = (type === 'File' || type === 'Directory') && (type === 'Directory' ? [UNITS, SOURCES].includes(bare) || allowed(bare) : allowed(p));
    if (!ok) return `it holds entries an index archive does not (${p})`;
    bytes += size;
    entries++;
    if (bytes > limits.maxBytes)
      return `it unpacks to more than ${megabytes(limits.maxBytes)} (the limit; raise it with --max-size-mb or nnrag.sharedIndexMaxSizeMB)`;
    if (entries > limits.maxEntries) return `it holds more than ${limits.maxEntries} files`;
    return undefined;
  });
  if (why !== undefined) refuse(why);
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
  const present = [
    DB_NAME,
    ...(await listFiles(path.join(stage, UNITS))).map((f) => `${UNITS}/${f}`),
    ...(await listFiles(path.join(stage, SOURCES))).map((f) => `${SOURCES}/${f}`),
  ];
  const listed = Object.keys(manifest.sha256 ?? {}).sort();
  if (JSON.stringify(present.sort()) !== JSON.stringify(listed)) refuse('its files are not those its manifest lists');
  for (const n of listed) {
    if ((await fileSha256(path.join(stage, n))) !== manifest.sha256[n]) refuse(`${n} does not have the sha256 its manifest records (changed after export)`);
  }
  // the database is one of ours, whole (one that needs recovery is refused), holds our schema alone and data alone
  let db: IndexDb | undefined;
  try {
    const opened = await IndexDb.open(path.join(stage, DB_NAME), { sqlWasm, write: 'try' });
    db = opened.db;
    if (opened.recovered) refuse(`its database is damaged (${opened.recovered.reason})`);
    const schema = await schemaProblem(db, sqlWasm);
    if (schema) refuse(schema);
    const rows = repositoryRowProblem(db);
    if (rows) refuse(rows);
    markImported(db);
    await db.save();
  } catch (err) {
    if (err instanceof NnragError && err.code === 'bad-source') throw err;
    refuse(`its database does not open (${err instanceof Error ? err.message : String(err)})`);
  } finally {
    db?.close();
  }
  // (the save's own files: the stamp stays with the database, the lock is gone once closed)
  await fsp.rm(path.join(stage, `${DB_NAME}.saved`), { force: true });
  return manifest;
}

/**
 * Replaces `dbFile` and its units cache with the archive's, once the whole archive is checked; refuses (and changes
 * nothing) when it is not usable, or when `dbFile` is being written. `force` is needed to replace an existing index.
 */
export async function importIndex(
  archive: string,
  dbFile: string,
  {
    force = false,
    sqlWasm,
    limits = DEFAULT_IMPORT_LIMITS,
    shown = archive,
  }: { force?: boolean; sqlWasm?: string; limits?: ImportLimits; /** How messages name the archive (a URL, not its download). */ shown?: string } = {},
): Promise<ArchiveManifest> {
  const exists = await fsp.stat(dbFile).then(
    () => true,
    () => false,
  );
  if (exists && !force) throw new NnragError('usage', `${dbFile} exists: import replaces it with the archive's index only with --force`);
  const dir = path.dirname(path.resolve(dbFile));
  await fsp.mkdir(dir, { recursive: true });
  // checked beside the target (one file system: the swap is a rename); a stage an import stopped by a signal left goes
  await removeLeftovers(dir, /^\.nnrag-import-(\d+)-/);
  const stage = await fsp.mkdtemp(path.join(dir, `.nnrag-import-${process.pid}-`));
  try {
    const manifest = await checkedArchive(archive, stage, sqlWasm, limits, shown);
    await fsp.mkdir(path.join(stage, UNITS), { recursive: true });
    await fsp.mkdir(path.join(stage, SOURCES), { recursive: true });
    // nobody writes the index in use while it is swapped
    const lock = exists ? (await IndexDb.open(dbFile, { sqlWasm, write: 'try' })).db : undefined;
    lock?.close();
    await swapIn(stage, dbFile);
    // the save stamp and the search snapshot (search/snapshot.ts) of the old file no longer describe the new one
    await fsp.rm(`${dbFile}.saved`, { force: true });
    await fsp.rm(`${dbFile}.search`, { force: true });
    return manifest;
  } finally {
    // the unpacking is over (extractBounded awaits its writes): the stage goes, and is checked gone
    await removeChecked(stage, removeTree);
  }
}

/**
 * Puts the checked database, units cache and sources of `stage` in place of `dbFile`'s, all or nothing: the old ones
 * are moved into the stage first, and moved back if any step fails; on success they leave with the stage.
 */
async function swapIn(stage: string, dbFile: string): Promise<void> {
  const parts: [string, string][] = [
    [path.join(stage, UNITS), `${dbFile}.units`],
    [path.join(stage, SOURCES), `${dbFile}.sources`],
    [path.join(stage, DB_NAME), dbFile],
  ];
  const aside = path.join(stage, 'old');
  await fsp.mkdir(aside);
  const moved: [string, string][] = [];
  const placed: string[] = [];
  try {
    for (const [i, [, to]] of parts.entries()) {
      const keep = path.join(aside, String(i));
      if (
        await fsp.lstat(to).then(
          () => true,
          () => false,
        )
      ) {
        await fsp.rename(to, keep);
        moved.push([keep, to]);
      }
    }
    for (const [from, to] of parts) {
      await fsp.rename(from, to);
      placed.push(to);
    }
  } catch (err) {
    for (const to of placed) await fsp.rm(to, { recursive: true, force: true }).catch(() => undefined);
    for (const [keep, to] of moved) await fsp.rename(keep, to).catch(() => undefined);
    throw new NnragError('bad-source', `the index could not be replaced (${err instanceof Error ? err.message : String(err)}); the index in use is unchanged`);
  }
}

/** `n` bytes as a person reads a limit: `2048 MB`. */
export const megabytes = (n: number): string => `${Math.round(n / 1024 ** 2)} MB`;

/** The objects of a new database of this version: tables, indexes and the full-text tables, by type and name. */
async function ourSchema(sqlWasm?: string): Promise<Map<string, string>> {
  const { db } = await IndexDb.open(undefined, { sqlWasm });
  try {
    return schemaOf(db);
  } finally {
    db.close();
  }
}

function schemaOf(db: IndexDb): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of db.all('SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name')) {
    out.set(`${String(r.type)} ${String(r.name)}`, `${String(r.tbl_name)}\u0000${String(r.sql ?? '').replace(/\s+/g, ' ')}`);
  }
  return out;
}

/**
 * Why the database holds more or other than NN-RAG's own schema (a trigger, a view, a table or index of another
 * shape), or undefined: an imported index is data, and a trigger would run on the user's own rows later.
 */
async function schemaProblem(db: IndexDb, sqlWasm?: string): Promise<string | undefined> {
  const ours = await ourSchema(sqlWasm);
  const theirs = schemaOf(db);
  const extra = [...theirs.keys()].filter((k) => ours.get(k) !== theirs.get(k));
  const missing = [...ours.keys()].filter((k) => !theirs.has(k));
  if (!extra.length && !missing.length) return undefined;
  const said = [...extra.map((k) => `${k.replace(' ', ' ')}${ours.has(k) ? ' (of another shape)' : ''}`), ...missing.map((k) => `no ${k}`)];
  return `its database is not NN-RAG's schema alone (${said.slice(0, 4).join(', ')}${said.length > 4 ? `, and ${said.length - 4} more` : ''})`;
}

/** The repository kinds an index records. */
const KINDS = new Set(['folder', 'git', 'python-env']);

/** Why the repositories' rows are not plain data (a control character or line break in a text, an odd kind or commit). */
function repositoryRowProblem(db: IndexDb): string | undefined {
  for (const r of db.all('SELECT name, kind, location, url, ref, commit_id, module_prefix, license, config FROM repos')) {
    const name = String(r.name);
    // (a folder's name may hold spaces; never a separator, a control character or a line break, nor be . or ..)
    if (!name || name.length > 200 || breaksLine(name) || /[\\/]/.test(name) || /^\.{1,2}$/.test(name))
      return `a repository's name is not a plain name (${JSON.stringify(name.slice(0, 60))})`;
    if (!KINDS.has(String(r.kind))) return `repository ${name} has an unknown kind (${JSON.stringify(String(r.kind).slice(0, 40))})`;
    // a git id, or for an installed package the version it was indexed at (`torchvision==0.14.1`, as the index writes it)
    const commit = r.commit_id === null ? null : String(r.commit_id);
    if (
      commit !== null &&
      !/^[0-9a-f]{4,64}$/.test(commit) &&
      !(repoKind(String(r.kind)).installed && /^[A-Za-z0-9._-]{1,200}==[A-Za-z0-9.+!_-]{1,100}$/.test(commit))
    )
      return `repository ${name} has a commit that is neither a git id nor an installed package's version`;
    for (const col of ['location', 'url', 'ref', 'module_prefix', 'license', 'config'] as const) {
      if (r[col] !== null && breaksLine(String(r[col]))) return `repository ${name}'s ${col} holds a control character or a line break`;
    }
    try {
      const config = JSON.parse(String(r.config ?? '{}')) as unknown;
      if (!config || typeof config !== 'object' || Array.isArray(config)) return `repository ${name}'s config is not an object`;
    } catch {
      return `repository ${name}'s config is not JSON`;
    }
  }
  return undefined;
}

/**
 * Marks every repository of an imported index as imported: no folder of its (`root`) is kept, so nothing of the user's
 * is ever read, mounted or imported from a path the archive named; its files are read from the archive's sources only.
 */
function markImported(db: IndexDb): void {
  for (const r of db.all('SELECT id, config FROM repos')) {
    const config = { ...(JSON.parse(String(r.config ?? '{}')) as Record<string, unknown>), imported: true };
    db.run("UPDATE repos SET root = '', config = ? WHERE id = ?", [JSON.stringify(config), Number(r.id)]);
  }
}
