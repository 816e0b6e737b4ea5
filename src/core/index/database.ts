/**
 * The sql.js database: opened from a file (or created), checked, migrated, and saved atomically.
 * A file that fails `PRAGMA quick_check` is moved aside and rebuilt, never silently used.
 */
import { promises as fsp } from 'fs';
import * as path from 'path';
import initSqlJs from 'sql.js';
import type { Database, SqlJsStatic, SqlValue, Statement } from 'sql.js';
import { MIGRATIONS } from './migrations';

export type Row = Record<string, SqlValue>;

let sqlPromise: Promise<SqlJsStatic> | undefined;

/** Loads sql.js once; `wasmPath` points at `sql-wasm.wasm` (next to the bundle in production). */
export function loadSqlJs(wasmPath?: string): Promise<SqlJsStatic> {
  sqlPromise = sqlPromise ?? initSqlJs(wasmPath ? { locateFile: () => wasmPath } : undefined);
  return sqlPromise;
}

export interface OpenResult {
  db: IndexDb;
  /** Set when an existing file was unreadable and moved aside; the database starts empty. */
  recovered?: { movedTo: string; reason: string };
}

export class IndexDb {
  private saveTimer: NodeJS.Timeout | undefined;
  private dirty = false;
  /** Prepared writes by their SQL (a few dozen fixed strings): compiling them again for each row was most of a write. */
  private statements = new Map<string, Statement>();
  private batchDepth = 0;
  private batchOpen = false;

  private constructor(
    readonly raw: Database,
    readonly file: string | undefined,
  ) {}

  /** Opens (or creates) the database at `file`; `undefined` gives an in-memory database. */
  static async open(file: string | undefined, options: { sqlWasm?: string } = {}): Promise<OpenResult> {
    const SQL = await loadSqlJs(options.sqlWasm);
    let recovered: OpenResult['recovered'];
    let raw: Database | undefined;
    if (file) {
      let bytes: Buffer | undefined;
      try {
        bytes = await fsp.readFile(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
      if (bytes && bytes.length > 0) {
        // a file this process family wrote and nothing touched since needs no full integrity check
        const problem = checkBytes(SQL, bytes, await writtenByUs(file));
        if (problem.ok) {
          raw = problem.db;
        } else {
          const movedTo = `${file}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`;
          await fsp.rename(file, movedTo);
          recovered = { movedTo, reason: problem.reason };
        }
      }
    }
    if (!raw) {
      raw = new SQL.Database();
      // small pages waste less of a small database that is saved whole
      raw.run('PRAGMA page_size = 1024');
    }
    raw.run('PRAGMA foreign_keys = ON');
    const db = new IndexDb(raw, file);
    db.migrate();
    return { db, recovered };
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

  /** Runs a write; `sql` is a fixed string (its prepared statement is kept for the next call). */
  run(sql: string, params: SqlValue[] = []): void {
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
    if (!this.file || !this.dirty) return;
    // export() closes and reopens the database: it frees every prepared statement and resets pragmas
    this.commitBatch();
    this.statements.clear();
    const bytes = this.raw.export();
    this.raw.run('PRAGMA foreign_keys = ON');
    await fsp.mkdir(path.dirname(path.resolve(this.file)), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    await fsp.writeFile(tmp, bytes);
    await fsp.rename(tmp, this.file);
    await stampWritten(this.file);
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
  }
}

/**
 * Beside the database, the size and modification time it had when this code last saved it: a file that still has
 * them is the one written from a checked in-memory database, and opening it skips SQLite's `quick_check` (which reads
 * every page: most of a warm start's time).
 */
function stampFile(file: string): string {
  return `${file}.saved`;
}

async function stampWritten(file: string): Promise<void> {
  try {
    const st = await fsp.stat(file);
    await fsp.writeFile(stampFile(file), JSON.stringify({ size: st.size, mtimeMs: st.mtimeMs }));
  } catch {
    // without a stamp the next open checks the file in full
  }
}

async function writtenByUs(file: string): Promise<boolean> {
  try {
    const [st, stamp] = await Promise.all([fsp.stat(file), fsp.readFile(stampFile(file), 'utf8')]);
    const s = JSON.parse(stamp) as { size?: unknown; mtimeMs?: unknown };
    return s.size === st.size && s.mtimeMs === st.mtimeMs;
  } catch {
    return false;
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
