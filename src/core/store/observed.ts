/**
 * The catalog of observed calls (pull/observe.ts fills it): per repository and entry point (a test), the files it
 * imported with their blob ids when it ran, and the constructor calls and first forward inputs of each class it built.
 */
import { createHash } from 'crypto';
import type { IndexDb } from './database';
import { importedConfig } from './sourceText';

/** One construction of a block seen while an entry ran, in the judge's argument language, with its inputs. */
export interface ObservedCall {
  /** The entry point it was seen in (`tests/test_x.py::test_conv`). */
  entry: string;
  module: string;
  name: string;
  args: unknown[];
  kwargs: Record<string, unknown>;
  /** What its first forward call got (`{"$tensor": {dtype, shape, min, max, values}}` descriptions), when it ran. */
  inputs?: { args: unknown[]; kwargs: Record<string, unknown> };
}

/** One entry point's last run. */
export interface ObservedEntry {
  entry: string;
  /** What the observation depended on: the interpreter, the observer's version and the files imported. */
  key: string;
  /** The repository's files it imported, with their blob ids then. */
  files: Record<string, string>;
  seconds: number | null;
  error: string | null;
}

export function observedEntries(db: IndexDb, repoId: number, blobs: Map<string, string> = blobsOf(db, repoId)): ObservedEntry[] {
  // an entry names its file set by digest (`@<digest>`, each set stored once: its files by number, the digest of
  // their paths and blobs) or, written by an older version, holds it whole; `blobs`: the repository's files now
  const paths = pathNumbers(db, repoId).byNumber;
  const sets = new Map<string, Record<string, string>>();
  db.each('SELECT digest, files FROM observed_filesets WHERE repo_id = ?', [repoId], (r) => {
    const files = filesAgain(String(r.files), String(r.digest), blobs, paths);
    if (files) sets.set(`@${String(r.digest)}`, files);
  });
  return db.all('SELECT entry, key, files, seconds, error FROM observed_entries WHERE repo_id = ? ORDER BY entry', [repoId]).map((r) => {
    const files = String(r.files);
    return {
      entry: String(r.entry),
      key: String(r.key),
      // a set that no longer holds (a file changed or gone) or that the catalog lost reads as a file no blob matches:
      // the entry runs again
      files: files.startsWith('@') ? (sets.get(files) ?? { [FILESET_CHANGED]: files }) : (parseObject(files) as Record<string, string>),
      seconds: r.seconds === null ? null : Number(r.seconds),
      error: r.error === null ? null : String(r.error),
    };
  });
}

/** A path no repository has: an entry's file set no longer holds, or is not in the catalog. */
const FILESET_CHANGED = '\0changed';

/** The paths the catalog's file sets name, each numbered once per repository (`observed_paths`). */
function pathNumbers(db: IndexDb, repoId: number): { byPath: Map<string, number>; byNumber: Map<number, string> } {
  const byPath = new Map<string, number>();
  const byNumber = new Map<number, string>();
  db.each('SELECT num, path FROM observed_paths WHERE repo_id = ?', [repoId], (r) => {
    byPath.set(String(r.path), Number(r.num));
    byNumber.set(Number(r.num), String(r.path));
  });
  return { byPath, byNumber };
}

/**
 * A file set as stored: the numbers of its paths in increasing order, each written as its difference from the one
 * before in base 36 (`"0,1,3,a"`: a package's files are numbered together, so most differences are one digit), and
 * the digest of its paths (in order) with the blobs they had, which is the set's key.
 */
function fileset(files: Record<string, string>, numberOf: (path: string) => number): { text: string; digest: string } {
  const paths = Object.keys(files).sort();
  const numbers = paths.map(numberOf).sort((a, b) => a - b);
  const text = numbers.map((n, i) => (n - (i ? numbers[i - 1] : 0)).toString(36)).join(',');
  return { text, digest: digestOf(paths.map((p) => [p, files[p]])) };
}

function digestOf(pairs: string[][]): string {
  return createHash('sha256').update(JSON.stringify(pairs)).digest('hex');
}

/** A stored file set with the blobs its files have now, when they are the blobs they had (its digest); else undefined. */
function filesAgain(text: string, digest: string, blobs: Map<string, string>, paths: Map<number, string>): Record<string, string> | undefined {
  if (!/^[0-9a-z]{1,8}(,[0-9a-z]{1,8})*$/.test(text)) return text === '' && digest === digestOf([]) ? {} : undefined;
  let n = 0;
  const named: string[] = [];
  for (const step of text.split(',')) {
    n += parseInt(step, 36);
    const p = paths.get(n);
    if (p === undefined) return undefined;
    named.push(p);
  }
  const pairs: string[][] = [];
  for (const p of named.sort()) {
    const blob = blobs.get(p);
    if (blob === undefined) return undefined;
    pairs.push([p, blob]);
  }
  return digestOf(pairs) === digest ? Object.fromEntries(pairs) : undefined;
}

/** Replaces what `entry` observed (its calls and its record) in one transaction with the caller's. */
export function recordObserved(db: IndexDb, repoId: number, entries: { entry: ObservedEntry; calls: ObservedCall[] }[]): void {
  db.transaction(() => {
    const { byPath } = pathNumbers(db, repoId);
    let next = 1;
    for (const n of byPath.values()) if (n >= next) next = n + 1;
    const numberOf = (p: string): number => {
      let n = byPath.get(p);
      if (n === undefined) {
        byPath.set(p, (n = next++));
        db.run('INSERT INTO observed_paths (repo_id, num, path) VALUES (?, ?, ?)', [repoId, n, p]);
      }
      return n;
    };
    for (const { entry, calls } of entries) {
      db.run('DELETE FROM observed_calls WHERE repo_id = ? AND entry = ?', [repoId, entry.entry]);
      const set = fileset(entry.files, numberOf);
      db.run('INSERT OR IGNORE INTO observed_filesets (repo_id, digest, files) VALUES (?, ?, ?)', [repoId, set.digest, set.text]);
      db.run('INSERT OR REPLACE INTO observed_entries (repo_id, entry, key, files, seconds, error) VALUES (?, ?, ?, ?, ?, ?)', [
        repoId,
        entry.entry,
        entry.key,
        `@${set.digest}`,
        entry.seconds,
        entry.error,
      ]);
      for (const c of calls) {
        const { module, name, ...call } = c;
        db.run('INSERT INTO observed_calls (repo_id, entry, module, name, call) VALUES (?, ?, ?, ?, ?)', [
          repoId,
          entry.entry,
          module,
          name,
          JSON.stringify(call),
        ]);
      }
    }
    dropUnusedFilesets(db, repoId);
  });
}

/** Forgets the entries of a repository that are no longer among `keep` (a test removed or renamed). */
export function forgetObserved(db: IndexDb, repoId: number, keep?: Set<string>): void {
  for (const r of db.all('SELECT entry FROM observed_entries WHERE repo_id = ?', [repoId])) {
    const entry = String(r.entry);
    if (keep?.has(entry)) continue;
    db.run('DELETE FROM observed_calls WHERE repo_id = ? AND entry = ?', [repoId, entry]);
    db.run('DELETE FROM observed_entries WHERE repo_id = ? AND entry = ?', [repoId, entry]);
  }
  dropUnusedFilesets(db, repoId);
}

/** The file sets of a repository no entry names any more. */
function dropUnusedFilesets(db: IndexDb, repoId: number): void {
  db.run(
    "DELETE FROM observed_filesets WHERE repo_id = ? AND NOT EXISTS (SELECT 1 FROM observed_entries e WHERE e.repo_id = ? AND e.files = '@' || observed_filesets.digest)",
    [repoId, repoId],
  );
}

/**
 * The calls observed of class `name` of `module` in repository `repoId`, those with inputs first; `fresh` keeps only
 * those of entries whose files are unchanged.
 */
export function observedCallsOf(db: IndexDb, repoId: number, module: string, name: string, fresh: (entry: string) => boolean = () => true): ObservedCall[] {
  const out: ObservedCall[] = [];
  for (const r of db.all('SELECT entry, call FROM observed_calls WHERE repo_id = ? AND module = ? AND name = ?', [repoId, module, name])) {
    const entry = String(r.entry);
    if (!fresh(entry)) continue;
    const call = parseObject(String(r.call));
    if (!Array.isArray(call.args) || typeof call.kwargs !== 'object' || call.kwargs === null) continue;
    out.push({
      entry,
      module,
      name,
      args: call.args,
      kwargs: call.kwargs as Record<string, unknown>,
      ...(isInputs(call.inputs) ? { inputs: call.inputs } : {}),
    });
  }
  // fed ones first, the lightest of them first (a test's tiny model before the one it loads at full size)
  return out.sort((a, b) => Number(!!b.inputs) - Number(!!a.inputs) || weight(a) - weight(b));
}

/** How heavy an observed call is to replay: the elements of its input tensors, then the length of its arguments. */
function weight(call: ObservedCall): number {
  let elements = 0;
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(visit);
    if (typeof v !== 'object' || v === null) return;
    const t = (v as { $tensor?: { shape?: unknown } }).$tensor;
    if (t && Array.isArray(t.shape)) elements += t.shape.reduce((n: number, d) => n * (typeof d === 'number' ? d : 1), 1);
    else Object.values(v).forEach(visit);
  };
  visit(call.inputs);
  return elements * 1000 + JSON.stringify([call.args, call.kwargs]).length;
}

/** How many entries and calls the catalog holds for a repository, and the bytes of its rows. */
/** The bytes of a repository's observed calls, but those of `except` (entries about to be observed again). */
export function observedBytesBut(db: IndexDb, repoId: number, except: ReadonlySet<string>): number {
  let bytes = 0;
  db.each('SELECT entry, LENGTH(call) + LENGTH(module) + LENGTH(name) + LENGTH(entry) AS b FROM observed_calls WHERE repo_id = ?', [repoId], (r) => {
    if (!except.has(String(r.entry))) bytes += Number(r.b);
  });
  return bytes;
}

export function observedSize(db: IndexDb, repoId: number): { entries: number; calls: number; bytes: number } {
  const e = db.get('SELECT COUNT(*) AS n, COALESCE(SUM(LENGTH(files) + LENGTH(key) + LENGTH(entry)), 0) AS b FROM observed_entries WHERE repo_id = ?', [
    repoId,
  ]);
  const c = db.get(
    'SELECT COUNT(*) AS n, COALESCE(SUM(LENGTH(call) + LENGTH(module) + LENGTH(name) + LENGTH(entry)), 0) AS b FROM observed_calls WHERE repo_id = ?',
    [repoId],
  );
  const f = db.get('SELECT COALESCE(SUM(LENGTH(files) + LENGTH(digest)), 0) AS b FROM observed_filesets WHERE repo_id = ?', [repoId]);
  const p = db.get('SELECT COALESCE(SUM(LENGTH(path) + 4), 0) AS b FROM observed_paths WHERE repo_id = ?', [repoId]);
  return {
    entries: Number(e?.n ?? 0),
    calls: Number(c?.n ?? 0),
    bytes: Number(e?.b ?? 0) + Number(c?.b ?? 0) + Number(f?.b ?? 0) + Number(p?.b ?? 0),
  };
}

/** How much of a repository observation covers: entries run (recorded) of those it has, and blocks seen fed. */
export interface ObservedCoverage {
  /** Entries with a record (run at least once, cached or not). */
  observed: number;
  /** Entries the repository had at its last observation (tests, builders, configs, examples). */
  entries: number;
  /** Blocks of the repository its entries built and fed. */
  fed: number;
}

const totalKey = (repoId: number): string => `observe_total:${repoId}`;

/** Records how many entries the repository had when it was observed (what `observedCoverage` counts against). */
export function recordObserveTotal(db: IndexDb, repoId: number, entries: number): void {
  db.run('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)', [totalKey(repoId), String(entries)]);
}

/** "observed N of M entries (K blocks fed)" of a repository, or undefined when it was never observed. */
export function observedCoverage(db: IndexDb, repoId: number): ObservedCoverage | undefined {
  const total = db.get('SELECT value FROM meta WHERE key = ?', [totalKey(repoId)]);
  if (!total) return undefined;
  const observed = Number(db.get('SELECT COUNT(*) AS n FROM observed_entries WHERE repo_id = ?', [repoId])?.n ?? 0);
  const fed = Number(
    db.get(
      `SELECT COUNT(DISTINCT o.module || '.' || o.name) AS n FROM observed_calls o
        WHERE o.repo_id = ? AND o.call LIKE '%"inputs"%'
          AND EXISTS (SELECT 1 FROM classes c WHERE c.repo_id = o.repo_id AND c.name = o.name AND c.is_block = 1)`,
      [repoId],
    )?.n ?? 0,
  );
  return { observed, entries: Math.max(Number(total.value), observed), fed };
}

/** "observed 120 of 1,312 entries (85 blocks fed)" */
export function coverageWords(c: ObservedCoverage): string {
  return `observed ${c.observed.toLocaleString('en-US')} of ${c.entries.toLocaleString('en-US')} entries (${c.fed.toLocaleString('en-US')} block${c.fed === 1 ? '' : 's'} fed)`;
}

/** The blob id of every indexed file of a repository, by path. */
export function blobsOf(db: IndexDb, repoId: number): Map<string, string> {
  const out = new Map<string, string>();
  db.each("SELECT path, hash FROM files WHERE repo_id = ? AND status != 'skipped'", [repoId], (r) => out.set(String(r.path), String(r.hash)));
  return out;
}

/** Whether an entry's observations still hold: every file it imported has the blob it had then. */
export function stillTrue(entry: Pick<ObservedEntry, 'files'>, blobs: Map<string, string>): boolean {
  return Object.entries(entry.files).every(([p, blob]) => blobs.get(p) === blob);
}

/** Whether each observed entry of a repository still holds (every file it imported unchanged), by entry. An imported
 * repository's entry that names no file is stale: nothing of the archive's word could ever show it changed. */
export function freshEntries(db: IndexDb, repoId: number): Map<string, boolean> {
  const blobs = blobsOf(db, repoId);
  const imported = importedConfig(db.get('SELECT config FROM repos WHERE id = ?', [repoId])?.config);
  return new Map(observedEntries(db, repoId, blobs).map((e) => [e.entry, stillTrue(e, blobs) && !(imported && Object.keys(e.files).length === 0)]));
}

/** The classes a repository's catalog holds calls of, and whether any of them has inputs. */
export function observedClasses(db: IndexDb, repoId: number): { module: string; name: string; fed: boolean }[] {
  return db
    .all('SELECT module, name, MAX(call LIKE \'%"inputs"%\') AS fed FROM observed_calls WHERE repo_id = ? GROUP BY module, name', [repoId])
    .map((r) => ({ module: String(r.module), name: String(r.name), fed: Number(r.fed) > 0 }));
}

function isInputs(value: unknown): value is ObservedCall['inputs'] {
  const v = value as ObservedCall['inputs'];
  return typeof v === 'object' && v !== null && Array.isArray(v.args) && typeof v.kwargs === 'object' && v.kwargs !== null;
}

function parseObject(text: string): Record<string, unknown> {
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
