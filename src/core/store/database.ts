/**
 * The sql.js database: opened from a file (or created), checked, migrated, and saved atomically.
 * Only a regular file (or a new one in a folder we may write) that is ours, or empty, is opened; a symlink is followed
 * to its target, which is what is saved. A writer holds a lock file beside it, so a second writer waits. A file of
 * ours that fails `PRAGMA quick_check` is moved aside and rebuilt, never silently used.
 */
import { createHash } from 'crypto';
import * as fs from 'fs';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import initSqlJs from 'sql.js';
import type { Database, SqlJsStatic, SqlValue, Statement } from 'sql.js';
import { NnragError } from '../base/errors';
import { readSmallFile, readWhole, running, writeReplacing } from '../base/files';
import { MIGRATIONS } from './migrations';

/** SQLite's application_id of our databases ("NNRG"). */
export const APPLICATION_ID = 0x4e4e5247;
const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');

export type Row = Record<string, SqlValue>;

let sqlPromise: Promise<SqlJsStatic> | undefined;

/** Loads sql.js once; `wasmPath` points at `sql-wasm.wasm` (next to the bundle in production). */
export function loadSqlJs(wasmPath?: string): Promise<SqlJsStatic> {
  sqlPromise = sqlPromise ?? initSqlJs(wasmPath ? { locateFile: () => wasmPath } : undefined);
  return sqlPromise;
}

/** The database is locked by another writer (`write: 'try'`). */
export class LockedError extends NnragError {
  constructor(message: string) {
    super('bad-db', message);
  }
}

export interface OpenResult {
  db: IndexDb;
  /** Set when an existing file was unreadable and moved aside; the database starts empty. */
  recovered?: { movedTo: string; reason: string };
  /** With `write: 'or-read'`: why the database was opened read-only (another process writes it). */
  readOnlyBecause?: string;
}

export class IndexDb {
  private saveTimer: NodeJS.Timeout | undefined;
  private dirty = false;
  /** Prepared writes by their SQL (a few dozen fixed strings): compiling them again for each row was most of a write. */
  private statements = new Map<string, Statement>();
  private batchDepth = 0;
  private batchOpen = false;

  private lock: DbLock | undefined;
  /** Opened beside another writer: changes stay in memory, never saved over that writer's file. */
  readOnly = false;
  /** The sha256 of the file as this process last read or saved it, and the generation the database had then: while
   * the generation is the same, the database holds exactly that file's content (what a search snapshot beside the
   * file is checked against, search/snapshot.ts). */
  savedAs?: { sha256: string; generation: number };
  /** How many writes this connection has run: what is kept of the index's content (search) is keyed by it. */
  private writes = 0;

  private constructor(
    readonly raw: Database,
    readonly file: string | undefined,
  ) {}

  /**
   * Opens (or creates) the database at `file`; `undefined` gives an in-memory database. `write` takes the lock beside
   * the file first ('wait': until the other writer is done; 'try': fails at once), so what is read is what the last
   * writer saved; 'or-read': as 'try', and when another process writes it, read-only beside it (a long-running
   * reader: a second window's server, the MCP server). Throws a NnragError('bad-db') for a path that cannot hold our
   * database, before any work.
   */
  static async open(
    file: string | undefined,
    options: { sqlWasm?: string; write?: 'wait' | 'try' | 'or-read'; readOnly?: boolean; signal?: AbortSignal; onWait?: (holder: string) => void } = {},
  ): Promise<OpenResult> {
    const SQL = await loadSqlJs(options.sqlWasm);
    let recovered: OpenResult['recovered'];
    let raw: Database | undefined;
    let savedAs: string | undefined;
    let lock: DbLock | undefined;
    let readOnlyBecause: string | undefined;
    const target = file ? checkDbPath(file) : undefined;
    try {
      if (target && options.write) {
        try {
          lock = await DbLock.take(target, options.write === 'wait' ? 'wait' : 'try', options.signal, options.onWait);
        } catch (err) {
          if (options.write !== 'or-read' || !(err instanceof LockedError)) throw err;
          readOnlyBecause = err.message;
        }
      }
      if (target) {
        let read: { bytes: Buffer; stat: fs.BigIntStats } | undefined;
        try {
          read = await readWithStat(target);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw fileError('read', target, err);
        }
        const bytes = read?.bytes;
        if (read && bytes && bytes.length > 0) {
          const stamp = await readStamp(target);
          const ours = ownership(bytes, stamp, read.stat);
          if (ours === 'saved-by-us' && stamp) savedAs = stamp.sha256;
          if (ours === 'foreign') {
            throw new NnragError('bad-db', `${target} is not an NN-RAG index (another program's file?); choose another --db`);
          }
          // a file whose content is what we last saved needs no full integrity check
          const problem = checkBytes(SQL, bytes, ours === 'saved-by-us');
          if (problem.ok) {
            raw = problem.db;
          } else if (options.readOnly) {
            // a reader (a server, a shard being merged) never moves the file it was given
            throw new NnragError('bad-db', `${target} cannot be read as an index (${problem.reason}); it is left as it is`);
          } else {
            const movedTo = `${target}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`;
            await fsp.rename(target, movedTo).catch((err) => {
              throw fileError('move aside', target, err);
            });
            recovered = { movedTo, reason: problem.reason };
          }
        }
      }
      if (!raw) {
        raw = new SQL.Database();
        // small pages waste less of a small database that is saved whole
        raw.run('PRAGMA page_size = 1024');
      }
    } catch (err) {
      await lock?.release();
      throw err;
    }
    raw.run(`PRAGMA application_id = ${APPLICATION_ID}`);
    raw.run('PRAGMA foreign_keys = ON');
    const db = new IndexDb(raw, target);
    db.lock = lock;
    db.readOnly = options.readOnly === true || readOnlyBecause !== undefined;
    db.migrate();
    if (savedAs && db.generation === 0) db.savedAs = { sha256: savedAs, generation: 0 };
    return { db, recovered, readOnlyBecause };
  }

  private migrate(): void {
    this.raw.run('CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)');
    const done = new Set(this.all('SELECT name FROM migrations').map((r) => String(r.name)));
    for (const m of MIGRATIONS) {
      if (done.has(m.name)) continue;
      this.transaction(() => {
        this.raw.exec(m.sql);
        this.run('INSERT INTO migrations (name, applied_at) VALUES (?, ?)', [m.name, new Date().toISOString()]);
      });
      this.dirty = true;
    }
  }

  appliedMigrations(): string[] {
    return this.all('SELECT name FROM migrations ORDER BY name').map((r) => String(r.name));
  }

  /** Changes with every write (SQLite's `total_changes()` starts again when `save` reopens the database). */
  get generation(): number {
    return this.writes;
  }

  /** Runs a write; `sql` is a fixed string (its prepared statement is kept for the next call). */
  run(sql: string, params: SqlValue[] = []): void {
    this.writes++;
    const stmt = this.prepared(sql);
    try {
      stmt.run(params);
    } catch (err) {
      stmt.reset();
      throw err;
    }
    this.dirty = true;
  }

  private prepared(sql: string): Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      stmt = this.raw.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }

  all(sql: string, params: SqlValue[] = []): Row[] {
    const rows: Row[] = [];
    this.each(sql, params, (row) => rows.push(row));
    return rows;
  }

  /** `all` for a query asked again and again (a search's page): its prepared statement is kept for the next call. */
  allKept(sql: string, params: SqlValue[] = []): Row[] {
    const rows: Row[] = [];
    const stmt = this.prepared(sql);
    try {
      stmt.bind(params);
      const columns = stmt.getColumnNames();
      while (stmt.step()) {
        const values = stmt.get();
        const row: Row = {};
        for (let i = 0; i < columns.length; i++) row[columns[i]] = values[i];
        rows.push(row);
      }
    } finally {
      stmt.reset();
    }
    return rows;
  }

  /** Calls `fn` with each row as it is read (large results without holding them all). */
  each(sql: string, params: SqlValue[], fn: (row: Row) => void): void {
    const stmt = this.raw.prepare(sql);
    try {
      stmt.bind(params);
      // the column names once (sql.js's getAsObject asks SQLite for them again on every row: most of a search)
      let columns: string[] | undefined;
      while (stmt.step()) {
        columns ??= stmt.getColumnNames();
        const values = stmt.get();
        const row: Row = {};
        for (let i = 0; i < columns.length; i++) row[columns[i]] = values[i];
        fn(row);
      }
    } finally {
      stmt.free();
    }
  }

  get(sql: string, params: SqlValue[] = []): Row | undefined {
    return this.all(sql, params)[0];
  }

  lastId(): number {
    const stmt = this.prepared('SELECT last_insert_rowid()');
    try {
      stmt.step();
      return Number(stmt.get()[0]);
    } finally {
      stmt.reset();
    }
  }

  /**
   * All or nothing. Inside `batch`, one transaction holds every write from the first to the batch's end (or to a
   * save): committing each file's rows on its own made the full-text index flush a segment per file, most of the
   * main thread's work in a cold run. A failure there rolls back the whole open batch, so the database never records
   * work that was not done (a later run does it again).
   */
  transaction<T>(fn: () => T): T {
    if (this.batchDepth > 0) {
      if (!this.batchOpen) {
        this.prepared('BEGIN').run();
        this.batchOpen = true;
      }
      try {
        const result = fn();
        this.dirty = true;
        return result;
      } catch (err) {
        // (an inner transaction that failed has already rolled back)
        if (this.batchOpen) {
          this.batchOpen = false;
          this.prepared('ROLLBACK').run();
        }
        throw err;
      }
    }
    this.prepared('BEGIN').run();
    try {
      const result = fn();
      this.prepared('COMMIT').run();
      this.dirty = true;
      return result;
    } catch (err) {
      this.prepared('ROLLBACK').run();
      throw err;
    }
  }

  /** Runs `fn` (which may wait) with its transactions grouped into one, committed at the end or by a save. */
  async batch<T>(fn: () => Promise<T>): Promise<T> {
    this.batchDepth++;
    try {
      return await fn();
    } finally {
      if (--this.batchDepth === 0) this.commitBatch();
    }
  }

  /** Commits the open batch's transaction, if any (before a save, a VACUUM or a close). */
  private commitBatch(): void {
    if (!this.batchOpen) return;
    this.batchOpen = false;
    this.prepared('COMMIT').run();
  }

  getMeta(key: string): string | undefined {
    const row = this.get('SELECT value FROM meta WHERE key = ?', [key]);
    return row ? String(row.value) : undefined;
  }

  setMeta(key: string, value: string): void {
    this.run('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value', [key, value]);
  }

  /** Writes the whole database to a temporary file and renames it over the target. */
  async save(): Promise<void> {
    if (this.saveTimer) {
      clearTimeout(this.saveTimer);
      this.saveTimer = undefined;
    }
    if (!this.file || !this.dirty || this.readOnly) return;
    // export() closes and reopens the database: it frees every prepared statement and resets pragmas
    this.commitBatch();
    this.statements.clear();
    const bytes = this.raw.export();
    this.raw.run('PRAGMA foreign_keys = ON');
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      await fsp.mkdir(path.dirname(this.file), { recursive: true });
      await fsp.writeFile(tmp, bytes, { flag: 'wx' });
      await fsp.rename(tmp, this.file);
    } catch (err) {
      await fsp.rm(tmp, { force: true }).catch(() => undefined);
      throw fileError('save', this.file, err);
    }
    const sha256 = await stampWritten(this.file, bytes);
    this.savedAs = { sha256, generation: this.writes };
    this.dirty = false;
  }

  /** Saves after `ms` of quiet; a later call pushes the save back. */
  scheduleSave(ms = 1000, onError: (err: unknown) => void = () => undefined): void {
    if (this.saveTimer) clearTimeout(this.saveTimer);
    this.saveTimer = setTimeout(() => {
      this.saveTimer = undefined;
      this.save().catch(onError);
    }, ms);
  }

  /**
   * VACUUM when more than a quarter of the pages are free (after deletions and FTS merges). Not sooner: sql.js
   * rebuilds the whole database in WebAssembly memory, which never shrinks (250 MB more at the peak seen over
   * the 10x synthetic corpus, a 76 MB index), to save a few percent of the file.
   */
  compactIfFragmented(): void {
    const pages = Number(this.raw.exec('PRAGMA page_count')[0].values[0][0]);
    const free = Number(this.raw.exec('PRAGMA freelist_count')[0].values[0][0]);
    if (pages > 64 && free * 4 > pages) {
      this.commitBatch();
      this.raw.run('VACUUM');
      this.raw.run('PRAGMA foreign_keys = ON');
      this.dirty = true;
    }
  }

  sizeBytes(): number {
    const pages = Number(this.raw.exec('PRAGMA page_count')[0].values[0][0]);
    const size = Number(this.raw.exec('PRAGMA page_size')[0].values[0][0]);
    return pages * size;
  }

  close(): void {
    if (this.saveTimer) clearTimeout(this.saveTimer);
    this.commitBatch();
    this.statements.clear();
    this.raw.close();
    void this.lock?.release();
    this.lock = undefined;
  }
}

/** A NnragError for a file-system failure on the database, saying what we tried and why it failed. */
function fileError(what: string, file: string, err: unknown): NnragError {
  if (err instanceof NnragError) return err;
  const e = err as NodeJS.ErrnoException;
  const why: Record<string, string> = {
    EACCES: 'permission denied',
    EPERM: 'permission denied',
    EROFS: 'the file system is read-only',
    ENOSPC: 'no space left on the device',
    EISDIR: 'it is a folder',
    ENOTDIR: 'a part of the path is not a folder',
    EDQUOT: 'over the disk quota',
  };
  return new NnragError('bad-db', `cannot ${what} the index ${file}: ${why[e.code ?? ''] ?? e.message}`, { cause: err });
}

const SPECIAL = ['/proc', '/sys', '/dev'];

/**
 * The file the database really is (a symlink followed to its target), checked before any work: a regular file, or a
 * new file whose nearest existing folder we may write; never a device, a folder or a path under /proc, /sys or /dev.
 */
export function checkDbPath(file: string): string {
  let target = path.resolve(file);
  try {
    target = fs.realpathSync(target);
  } catch {
    // a new file, or a link to one: resolve what exists of its folder
    try {
      const link = fs.readlinkSync(target);
      target = path.resolve(path.dirname(target), link);
    } catch {
      // not a link
    }
    const dir = nearestExisting(path.dirname(target));
    try {
      target = path.join(fs.realpathSync(dir), path.relative(dir, target));
    } catch {
      // keep it as given
    }
  }
  // as given and as resolved: /proc/self/fd/1 leads to whatever file standard output is
  for (const p of [path.resolve(file), target]) {
    if (SPECIAL.some((s) => p === s || p.startsWith(`${s}/`)))
      throw new NnragError('bad-db', `${file}: an index cannot live under ${p.split('/').slice(0, 2).join('/')}`);
  }
  let st: fs.Stats | undefined;
  try {
    st = fs.statSync(target);
  } catch {
    // new
  }
  if (st) {
    if (st.isDirectory()) throw new NnragError('bad-db', `${file} is a folder; --db names the index file (for example ${path.join(file, 'index.db')})`);
    if (!st.isFile()) throw new NnragError('bad-db', `${file} is not a regular file (a device, pipe or socket)`);
    try {
      fs.accessSync(target, fs.constants.R_OK | fs.constants.W_OK);
      fs.accessSync(path.dirname(target), fs.constants.W_OK);
    } catch (err) {
      throw fileError('write', target, err);
    }
    return target;
  }
  const dir = nearestExisting(path.dirname(target));
  try {
    if (!fs.statSync(dir).isDirectory()) throw Object.assign(new Error('not a folder'), { code: 'ENOTDIR' });
    fs.accessSync(dir, fs.constants.W_OK);
  } catch (err) {
    throw fileError('create', target, err);
  }
  return target;
}

/** `dir`, or its nearest ancestor that exists. */
function nearestExisting(dir: string): string {
  while (!fs.existsSync(dir) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
}

/** Whose file this is: ours as last saved (its stat, else its content hash, as our stamp says), ours, or another
 * program's. */
function ownership(bytes: Buffer, stamp: Stamp | undefined, stat: fs.BigIntStats): 'saved-by-us' | 'ours' | 'foreign' {
  if (stamp && (sameStat(stamp, stat) || stamp.sha256 === sha256(bytes))) return 'saved-by-us';
  if (bytes.length < 100 || !bytes.subarray(0, 16).equals(SQLITE_MAGIC)) {
    // not SQLite at all: ours only if we saved a file here before (it was damaged since)
    return stamp ? 'ours' : 'foreign';
  }
  const appId = bytes.readUInt32BE(68);
  if (appId === APPLICATION_ID) return 'ours';
  // databases written before the application id: ours when they hold our migrations table and nothing else's
  if (appId === 0 && (stamp || bytes.includes(Buffer.from('CREATE TABLE migrations')))) return 'ours';
  return 'foreign';
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** A lock file beside the database (`DB.lock`, our pid and host): one writer at a time. */
class DbLock {
  private constructor(readonly file: string) {}

  static async take(db: string, mode: 'wait' | 'try', signal?: AbortSignal, onWait?: (holder: string) => void): Promise<DbLock> {
    const file = `${db}.lock`;
    let told = false;
    for (;;) {
      try {
        await fsp.writeFile(file, JSON.stringify({ pid: process.pid, host: os.hostname(), since: new Date().toISOString() }), { flag: 'wx' });
        const lock = new DbLock(file);
        process.once('exit', lock.releaseSync);
        return lock;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw fileError('lock', db, err);
      }
      const holder = await readHolder(file);
      if (holder && holder.host === os.hostname() && !running(holder.pid)) {
        await fsp.rm(file, { force: true }); // left by a process that died
        continue;
      }
      const who = holder ? `process ${holder.pid}${holder.host !== os.hostname() ? ` on ${holder.host}` : ''}` : 'another process';
      if (mode === 'try') throw new LockedError(`${db} is being written by ${who}; try again when it is done`);
      if (!told) {
        onWait?.(who);
        told = true;
      }
      if (signal?.aborted) throw new NnragError('bad-db', `stopped waiting for ${who} to finish writing ${db}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  private readonly releaseSync = (): void => {
    try {
      fs.rmSync(this.file, { force: true });
    } catch {
      // gone
    }
  };

  async release(): Promise<void> {
    process.removeListener('exit', this.releaseSync);
    this.releaseSync();
  }
}

async function readHolder(file: string): Promise<{ pid: number; host: string } | undefined> {
  try {
    const h = JSON.parse((await readSmallFile(file)) ?? '') as { pid?: unknown; host?: unknown };
    return typeof h.pid === 'number' && typeof h.host === 'string' ? { pid: h.pid, host: h.host } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Beside the database, the sha256 of what this code last saved and the file's stat just after: a file whose stat
 * (device, inode, size, modification and change times to the nanosecond: any write or replacement changes the change
 * time, which no program sets back) or else whose content still has it is the one written from a checked in-memory
 * database, and opening it skips SQLite's `quick_check` (which reads every page: most of a warm start's time) and,
 * with the stat, the hash too (a second at 300 MB). Any other change, whatever its size and time, gets the full check.
 */
function stampFile(file: string): string {
  return `${file}.saved`;
}

interface Stamp {
  sha256: string;
  stat?: string;
}

/** A stat as the stamp keeps it. */
function statKey(st: fs.BigIntStats): string {
  return [st.dev, st.ino, st.size, st.mtimeNs, st.ctimeNs].join(':');
}

function sameStat(stamp: Stamp, st: fs.BigIntStats): boolean {
  return stamp.stat !== undefined && stamp.stat === statKey(st);
}

/** The file's bytes and the stat of the very file read (one descriptor: a rename between the two cannot mix them). */
async function readWithStat(file: string): Promise<{ bytes: Buffer; stat: fs.BigIntStats }> {
  const fh = await fsp.open(file, 'r');
  try {
    const stat = await fh.stat({ bigint: true });
    return { bytes: await readWhole(fh, Number(stat.size)), stat };
  } finally {
    await fh.close();
  }
}

/** Stamps the file just saved; its sha256. */
async function stampWritten(file: string, bytes: Uint8Array): Promise<string> {
  const digest = sha256(bytes);
  try {
    const stat = statKey(await fsp.stat(file, { bigint: true }));
    await writeReplacing(stampFile(file), JSON.stringify({ sha256: digest, stat }));
  } catch {
    // without a stamp the next open checks the file in full
  }
  return digest;
}

/** The sha256 the save stamp beside `file` names (what the file held when this code last saved it, if unchanged since:
 * `IndexDb.savedAs` says whether it is). */
export async function stampedSha256(file: string): Promise<string | undefined> {
  return (await readStamp(file))?.sha256;
}

async function readStamp(file: string): Promise<Stamp | undefined> {
  try {
    const s = JSON.parse((await readSmallFile(stampFile(file))) ?? '') as { sha256?: unknown; stat?: unknown };
    if (typeof s.sha256 !== 'string') return undefined;
    return { sha256: s.sha256, stat: typeof s.stat === 'string' ? s.stat : undefined };
  } catch {
    return undefined;
  }
}

function checkBytes(SQL: SqlJsStatic, bytes: Buffer, trusted: boolean): { ok: true; db: Database } | { ok: false; reason: string } {
  let db: Database | undefined;
  try {
    db = new SQL.Database(bytes);
    if (!trusted) {
      const res = db.exec('PRAGMA quick_check');
      const verdict = String(res[0]?.values[0]?.[0] ?? '');
      if (verdict !== 'ok') throw new Error(`quick_check: ${verdict || 'no answer'}`);
    }
    db.exec('SELECT count(*) FROM sqlite_master');
    return { ok: true, db };
  } catch (err) {
    db?.close();
    return { ok: false, reason: err instanceof Error ? err.message : String(err) };
  }
}
