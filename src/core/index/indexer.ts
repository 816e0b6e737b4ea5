/**
 * Incremental indexing of one source: plan (compute / delete / keep) by content hash, parse what changed,
 * write each file's facts as it completes, then rediscover blocks over the whole index.
 */
import { repoKind } from '../sources/kinds';
import { groupDuplicates } from '../dedup/groups';
import type { DedupOptions } from '../dedup/groups';
import { performance } from 'perf_hooks';
import { guessCategory } from '../blocks/category';
import { discoverBlocks, isTorchModuleClass } from '../blocks/discover';
import { NnragError, throwIfAborted } from '../base/errors';
import type { FileInput, FileOutcome } from '../analysis/analyse';
import type { PythonParser } from '../parse/parser';
import { inlineParse } from '../analysis/parsePool';
import type { ParseFn } from '../analysis/parsePool';
import { PARSER_VERSION } from '../parse/facts';
import type { ImportFact } from '../parse/types';
import { acronymMeanings, searchWords } from '../search/words';
import { isImportable, modulePathOf } from '../sources/modulePath';
import type { OpenedSource, SkippedEntry, SourceFile } from '../sources/types';
import type { IndexDb } from '../store/database';
import type { SqlValue } from 'sql.js';
import { pruneUnits, unitsDirOf } from '../store/unitsCache';
import { importedConfig } from '../store/sourceText';
import { shadowShared } from '../store/sharedIndex';

export interface Progress {
  step: number;
  total: number;
  message: string;
}

export interface IndexOptions {
  parser: PythonParser;
  /** Where parsing happens (a worker pool); default: `parser`, in this thread. */
  parse?: ParseFn;
  /** Files in flight at once (reading and parsing); match the pool's size. */
  concurrency?: number;
  /**
   * When `parse` is a pool: this thread parses too, taking files up to this size from the small end of the run while
   * the pool takes them from the large end (0 or undefined: it does not). See `lazyPool`.
   */
  hereMaxBytes?: number;
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
  maxFileBytes?: number;
  /**
   * Only these paths changed (a live update of a local folder): the rest of the source is neither listed nor
   * touched. Ignored by sources that can only list everything.
   */
  only?: string[];
  /** When to rediscover blocks while files land, so search answers during a cold run; one schedule for a whole run. */
  rediscover?: Rediscovery;
  /**
   * Installed packages of the same name indexed from another interpreter are replaced (the editor's settings name the
   * repository, and the interpreter they follow changed); else that is an error asking for another name.
   */
  replaceInstalled?: boolean;
  /**
   * A repository that came with an imported (shared) index under the name of one indexed here is replaced by this one:
   * the user's own copy wins and the shared rows are shadowed (`sharedIndex.shadowShared`); else that is an error.
   */
  replaceImported?: boolean;
  /** How an error asks for another name (the command line: `--name`; the editor: its settings). */
  renameAdvice?: string;
}

/**
 * The rediscovery schedule of one indexing run (every repository of it): the first after `firstMs`, then each after
 * twice the interval before, and never sooner than nine times what the last one took (a discovery reads the whole
 * index: at most a tenth of the run goes to it, however large the index).
 */
export class Rediscovery {
  private last: number;
  constructor(
    /** The first: blocks that subclass other files' classes become searchable this long after a cold run starts. */
    private interval = 500,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.last = now();
  }

  /** Runs a discovery on `db` when one is due; says whether it did. */
  maybe(db: IndexDb): boolean {
    if (this.now() - this.last <= this.interval) return false;
    const t0 = this.now();
    discoverBlocks(db);
    this.last = this.now();
    this.interval = Math.max(this.interval * 2, 9 * (this.last - t0));
    return true;
  }
}

export interface IndexRunStats {
  repo: string;
  files: number;
  parsed: number;
  skipped: number;
  /** Files parsed in this run (new or changed content). */
  computed: number;
  kept: number;
  deleted: number;
  /** Everything this run wrote: parsed, deleted and re-reported files. Zero means the index is as it was. */
  changed: number;
  seconds: number;
  parseSeconds: number;
  commit?: string;
  /** Files this run could not read or parse (binary, too large and Python 2 files are not counted), with the first few. */
  failed: { count: number; first: { path: string; detail: string }[] };
}

interface ExistingFile {
  id: number;
  size: number;
  mtime: number | null;
  hash: string;
  reason: string | null;
  detail: string | null;
}

export function indexSource(db: IndexDb, source: OpenedSource, options: IndexOptions): Promise<IndexRunStats> {
  // files land in one transaction (searchable at once on this connection), committed when the run ends or saves
  return db.batch(() => indexWithin(db, source, options));
}

/** Records the files the source skipped (with why) that the index does not hold as skipped already; returns how many. */
function recordSkipped(
  db: IndexDb,
  repoId: number,
  skipped: SkippedEntry[],
  existing: Map<string, ExistingFile>,
  seen: Set<string>,
  moduleOf: (path: string) => { module: string; isPackage: boolean },
): number {
  let written = 0;
  for (const s of skipped) {
    seen.add(s.path);
    const old = existing.get(s.path);
    if (old && old.reason === s.reason && old.detail === s.detail) continue;
    const { module, isPackage } = moduleOf(s.path);
    writeFile(db, repoId, old?.id, { path: s.path, module, isPackage, size: 0, mtime: null, hash: '', status: 'skipped', reason: s.reason, detail: s.detail });
    written++;
  }
  return written;
}

/** The repository's files the index holds, by path. */
function existingFiles(db: IndexDb, repoId: number): Map<string, ExistingFile> {
  const existing = new Map<string, ExistingFile>();
  for (const r of db.all('SELECT id, path, size, mtime, hash, reason, detail FROM files WHERE repo_id = ?', [repoId])) {
    existing.set(String(r.path), {
      id: Number(r.id),
      size: Number(r.size),
      mtime: r.mtime === null ? null : Number(r.mtime),
      hash: String(r.hash),
      reason: r.reason === null ? null : String(r.reason),
      detail: r.detail === null ? null : String(r.detail),
    });
  }
  return existing;
}

/**
 * Runs `work` over `todo` (largest first): as many files in flight as the parser can take, and no more (bounded
 * memory), taken from the large end; with a pool, this thread takes small files (at most `hereMax` bytes) from the
 * other end between its own work (it answers between two files). Every lane ends (at its next file, once the run is
 * cancelled or one fails) before this returns: a file still in flight must not land after the run, under the next
 * run's feet (which would then add the same file again).
 */
async function inFlight(
  todo: SourceFile[],
  lanes: number,
  hereMax: number,
  work: (file: SourceFile, inThisThread?: boolean) => Promise<void>,
  signal?: AbortSignal,
): Promise<void> {
  let next = 0;
  let end = todo.length;
  const fromLarge = async (): Promise<void> => {
    while (next < end) {
      throwIfAborted(signal);
      await work(todo[next++]);
    }
  };
  const fromSmall = async (): Promise<void> => {
    // (git sources list no sizes: -1)
    while (next < end && todo[end - 1].size <= hereMax) {
      await new Promise((resolve) => setImmediate(resolve));
      throwIfAborted(signal);
      if (next < end) await work(todo[--end], true);
    }
  };
  const stopOthers = (err: unknown): never => {
    next = end;
    throw err;
  };
  const ended = await Promise.allSettled(
    [...Array.from({ length: lanes }, fromLarge), ...(hereMax > 0 ? [fromSmall()] : [])].map((lane) => lane.catch(stopOthers)),
  );
  const failure = ended.find((e): e is PromiseRejectedResult => e.status === 'rejected');
  if (failure) throw failure.reason;
}

async function indexWithin(db: IndexDb, source: OpenedSource, options: IndexOptions): Promise<IndexRunStats> {
  const t0 = performance.now();
  const { info } = source;
  const repoId = upsertRepo(db, source, options);
  const reparseAll = db.getMeta('parser_version') !== PARSER_VERSION;

  const only = options.only && source.listPaths ? new Set(options.only) : undefined;
  const { files, skipped } = only ? await source.listPaths!([...only]) : await source.list(options.signal);

  const existing = existingFiles(db, repoId);
  // a `src/` layout without `src/__init__.py`: modules are named from inside `src`
  const paths = only ? [...existing.keys(), ...files.map((f) => f.path)] : files.map((f) => f.path);
  const srcLayout = !info.modulePrefix && paths.some((p) => p.startsWith('src/')) && !paths.includes('src/__init__.py');
  const seen = new Set<string>();
  const stats: IndexRunStats = {
    repo: info.name,
    files: files.length,
    parsed: 0,
    skipped: 0,
    computed: 0,
    kept: 0,
    deleted: 0,
    changed: 0,
    seconds: 0,
    parseSeconds: 0,
    commit: info.commit,
    failed: { count: 0, first: [] },
  };

  stats.changed += recordSkipped(db, repoId, skipped, existing, seen, (p) => modulePathOf(p, info.modulePrefix, srcLayout));

  // plan: what is unchanged is kept without reading it; the rest is read, hashed and (if new) parsed
  const todo: SourceFile[] = [];
  for (const file of files) {
    seen.add(file.path);
    const old = existing.get(file.path);
    if (old && !reparseAll && old.hash && (file.oid ? old.hash === file.oid : old.size === file.size && old.mtime === (file.mtimeMs ?? null))) {
      stats.kept++;
    } else {
      todo.push(file);
    }
  }
  // largest first: the long parses start early and the pool ends together
  todo.sort((a, b) => b.size - a.size);

  const here = inlineParse(options.parser);
  const parse = options.parse ?? here;
  const hereMax = options.parse ? (options.hereMaxBytes ?? 0) : 0;
  const units = unitsDirOf(db);
  let step = stats.kept;
  const work = async (file: SourceFile, inThisThread = false): Promise<void> => {
    const old = existing.get(file.path);
    const unreadable = (detail: string, reason: 'unreadable' | 'error' = 'unreadable'): void => {
      const { module, isPackage } = modulePathOf(file.path, info.modulePrefix, srcLayout);
      writeFile(db, repoId, old?.id, { path: file.path, module, isPackage, size: file.size, mtime: null, hash: '', status: 'skipped', reason, detail });
      if (stats.failed.count++ < 3) stats.failed.first.push({ path: file.path, detail });
    };
    // unchanged content (same hash, another mtime) is not parsed again
    const input: FileInput = { knownHash: (!reparseAll && old?.hash) || undefined, hash: file.oid, maxBytes: options.maxFileBytes, unitsDir: units?.dir };
    const local = source.localPath?.(file);
    if (local) {
      input.file = local;
    } else {
      try {
        input.bytes = await source.read(file);
      } catch (err) {
        unreadable((err as Error).message);
        return;
      }
    }
    const p0 = performance.now();
    // (a git file's size is known once read: a large one goes to the pool all the same)
    const outcome = await (inThisThread && (input.bytes?.length ?? file.size) <= hereMax ? here(input) : parse(input));
    const parseMs = performance.now() - p0;
    if (outcome.kind === 'unreadable' || outcome.kind === 'failed') {
      unreadable(outcome.detail, outcome.kind === 'failed' ? 'error' : 'unreadable');
      return;
    }
    if (outcome.kind === 'same') {
      db.run('UPDATE files SET size = ?, mtime = ? WHERE id = ?', [file.size, file.mtimeMs ?? null, old!.id]);
      stats.kept++;
      return;
    }
    stats.parseSeconds += parseMs / 1000;
    stats.computed++;
    // each file's facts are written as it completes: an interrupted run never records work it did not do
    storeOutcome(db, repoId, source, file, outcome, parseMs, old?.id, srcLayout);
    options.onProgress?.({ step: ++step, total: files.length, message: `${info.name}: ${file.path}` });
    // during a long run, blocks subclassing code of other files become searchable batch by batch (those of torch's
    // classes are searchable as their file lands), not only at the end
    options.rediscover?.maybe(db);
  };
  await inFlight(todo, Math.max(1, options.concurrency ?? 1), hereMax, work, options.signal);

  for (const [p, old] of existing) {
    if (seen.has(p) || (only && !only.has(p))) continue;
    deleteFile(db, old.id);
    stats.deleted++;
  }

  const counts = db.get("SELECT sum(status = 'parsed') AS parsed, sum(status = 'skipped') AS skipped FROM files WHERE repo_id = ?", [repoId]);
  stats.parsed = Number(counts?.parsed ?? 0);
  stats.skipped = Number(counts?.skipped ?? 0);
  stats.seconds = (performance.now() - t0) / 1000;
  stats.changed += stats.computed + stats.deleted;
  const repoRow = db.get('SELECT indexed_at, commit_id, license FROM repos WHERE id = ?', [repoId])!;
  const unchanged =
    stats.changed === 0 && repoRow.indexed_at !== null && repoRow.commit_id === (info.commit ?? null) && repoRow.license === (info.license ?? null);
  // a run that found nothing new writes nothing, so a warm start leaves the database file alone
  if (!unchanged) {
    db.run('UPDATE repos SET indexed_at = ?, commit_id = ?, license = ?, last_run = ? WHERE id = ?', [
      new Date().toISOString(),
      info.commit ?? null,
      info.license ?? null,
      JSON.stringify(stats),
      repoId,
    ]);
  }
  return stats;
}

/**
 * After every source of a run is indexed: rediscover blocks and record the parser version.
 * `light`: for live updates of a few files (when edits pause), merge the full-text index's segments in a bounded
 * step instead of into one, and do not compact the file. */
export function finishRun(db: IndexDb, dedup: DedupOptions = {}, { light = false }: { light?: boolean } = {}): { blocks: number; seconds: number } {
  const t0 = performance.now();
  const blocks = discoverBlocks(db);
  groupDuplicates(db, dedup);
  db.setMeta('parser_version', PARSER_VERSION);
  if (light) {
    // Each live update leaves two small full-text segments, and FTS4 merges a level's segments when it has sixteen: in
    // a live update, that merge added 15-30 ms to the edit-to-search time every eighth edit. Merged here (after the
    // edits pause) in bounded steps (at most 500 pages written), levels stay short and live updates never merge.
    db.run("INSERT INTO classes_fts(classes_fts) VALUES ('merge=500,2')");
    return { blocks, seconds: (performance.now() - t0) / 1000 };
  }
  // merge the full-text index's segments: smaller file, faster queries
  db.run("INSERT INTO classes_fts(classes_fts) VALUES ('optimize')");
  db.compactIfFragmented();
  // what pulls keep of files that changed or left the index (live updates leave theirs to the next full run)
  const units = unitsDirOf(db);
  if (units) {
    const keep = new Set<string>();
    db.each("SELECT hash FROM files WHERE status = 'parsed'", [], (r) => keep.add(String(r.hash)));
    pruneUnits(units.root, units.dir, keep);
  }
  return { blocks, seconds: (performance.now() - t0) / 1000 };
}

/**
 * Removes the repositories whose names are not in `keep` (they left the configuration), with their files and
 * classes. Returns the removed names; the caller runs `finishRun` when any were removed.
 */
export function removeRepositoriesExcept(db: IndexDb, keep: Set<string>): string[] {
  const gone = db.all('SELECT id, name FROM repos').filter((r) => !keep.has(String(r.name)));
  if (!gone.length) return [];
  dropRepositories(
    db,
    gone.map((r) => Number(r.id)),
  );
  return gone.map((r) => String(r.name));
}

/** Drops every row of the repositories `ids`. */
export function dropRepositories(db: IndexDb, ids: number[]): void {
  db.transaction(() => {
    for (const id of ids) {
      db.run('DELETE FROM classes_fts WHERE docid IN (SELECT id FROM classes WHERE repo_id = ?)', [id]);
      db.run('DELETE FROM classes WHERE repo_id = ?', [id]);
      db.run('DELETE FROM files WHERE repo_id = ?', [id]);
      db.run('DELETE FROM observed_calls WHERE repo_id = ?', [id]);
      db.run('DELETE FROM observed_entries WHERE repo_id = ?', [id]);
      db.run('DELETE FROM observed_filesets WHERE repo_id = ?', [id]);
      db.run('DELETE FROM observed_paths WHERE repo_id = ?', [id]);
      db.run('DELETE FROM meta WHERE key = ?', [`observe_total:${id}`]);
      db.run('DELETE FROM repos WHERE id = ?', [id]);
    }
  });
}

function upsertRepo(db: IndexDb, source: OpenedSource, options: Pick<IndexOptions, 'replaceInstalled' | 'replaceImported' | 'renameAdvice'>): number {
  const replaceInstalled = options.replaceInstalled === true;
  const { info, config } = source;
  let row = db.get('SELECT id, location, kind, url, ref, root, module_prefix, priority, config FROM repos WHERE name = ?', [info.name]);
  const cfg = JSON.stringify({ include: config.include, exclude: config.exclude, symbols: config.symbols, inline: config.inline, ref: config.ref });
  // (first: an archive's copy of installed packages is shadowed too, wherever its interpreter was)
  if (row && importedConfig(row.config) && options.replaceImported) {
    // the user's own copy wins: the shared rows go (their catalog, their verdicts), and the index says they are shadowed
    dropRepositories(db, [Number(row.id)]);
    shadowShared(db, info.name);
    row = undefined;
  }
  if (row && String(row.location) !== info.location && replaceInstalled && repoKind(String(row.kind)).installed && repoKind(info.kind).installed) {
    // the same packages of another interpreter: what was indexed (and judged) from the old one goes with it
    dropRepositories(db, [Number(row.id)]);
    row = undefined;
  }
  const what = repoKind(info.kind).installed ? 'package' : 'folder';
  if (row && importedConfig(row.config)) {
    // another machine's rows (its catalog, its verdicts) never become this folder's, whatever path the archive named
    throw new NnragError(
      'bad-source',
      `a repository named '${info.name}' came with an imported index; index this ${what} under another name (--name) or into another database (--db): its rows stay the archive's`,
    );
  }
  if (row && String(row.location) !== info.location) {
    throw new NnragError(
      'bad-source',
      `a repository named '${info.name}' is already indexed from ${String(row.location)}; ${options.renameAdvice ?? 'give this one another name (--name)'}`,
    );
  }
  const same =
    row &&
    row.kind === info.kind &&
    row.url === (info.url ?? null) &&
    row.ref === (info.ref ?? null) &&
    row.root === info.root &&
    row.module_prefix === info.modulePrefix &&
    Number(row.priority) === (config.priority ?? 0) &&
    row.config === cfg;
  if (same && row) return Number(row.id);
  // one upsert keyed by name: a re-index refreshes where the repository lives and how it is configured
  db.run(
    `INSERT INTO repos (name, kind, location, url, ref, root, module_prefix, priority, config) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT(name) DO UPDATE SET kind = excluded.kind, url = excluded.url, ref = excluded.ref, root = excluded.root,
       module_prefix = excluded.module_prefix, priority = excluded.priority, config = excluded.config`,
    [info.name, info.kind, info.location, info.url ?? null, info.ref ?? null, info.root, info.modulePrefix, config.priority ?? 0, cfg],
  );
  return Number(db.get('SELECT id FROM repos WHERE name = ?', [info.name])!.id);
}

interface FileRow {
  path: string;
  module: string;
  isPackage: boolean;
  size: number;
  mtime: number | null;
  hash: string;
  status: 'parsed' | 'skipped';
  reason?: string;
  detail?: string;
  facts?: Uint8Array;
  /** What discovery reads of the facts (factsCodec.ts). */
  slim?: Uint8Array;
  parseMs?: number;
}

/** A files row's columns after its repository and path, each with its value from a FileRow: one list for the update
 * and the insert. */
const FILE_COLUMNS: readonly (readonly [string, (f: FileRow) => SqlValue])[] = [
  ['module', (f) => f.module],
  ['is_package', (f) => (f.isPackage ? 1 : 0)],
  ['size', (f) => f.size],
  ['mtime', (f) => f.mtime],
  ['hash', (f) => f.hash],
  ['status', (f) => f.status],
  ['reason', (f) => f.reason ?? null],
  ['detail', (f) => f.detail ?? null],
  ['facts', (f) => f.facts ?? null],
  ['slim', (f) => f.slim ?? null],
  ['parse_ms', (f) => f.parseMs ?? null],
];
const UPDATE_FILE = `UPDATE files SET ${FILE_COLUMNS.map(([c]) => `${c} = ?`).join(', ')} WHERE id = ?`;
const INSERT_FILE = `INSERT INTO files (repo_id, path, ${FILE_COLUMNS.map(([c]) => c).join(', ')}) VALUES (?, ?${', ?'.repeat(FILE_COLUMNS.length)})`;

function writeFile(db: IndexDb, repoId: number, oldId: number | undefined, f: FileRow): number {
  const values = FILE_COLUMNS.map(([, value]) => value(f));
  if (oldId !== undefined) {
    deleteClasses(db, oldId);
    db.run(UPDATE_FILE, [...values, oldId]);
    return oldId;
  }
  db.run(INSERT_FILE, [repoId, f.path, ...values]);
  return db.lastId();
}

/** A MinHash signature (16-bit values) as the bytes the classes table keeps. */
function sigBytes(sig: number[]): Uint8Array {
  return new Uint8Array(Uint16Array.from(sig).buffer);
}

function deleteClasses(db: IndexDb, fileId: number): void {
  // external-content FTS reads the old values from `classes`: delete from the index first
  db.run('DELETE FROM classes_fts WHERE docid IN (SELECT id FROM classes WHERE file_id = ?)', [fileId]);
  db.run('DELETE FROM classes WHERE file_id = ?', [fileId]);
}

export function deleteFile(db: IndexDb, fileId: number): void {
  db.transaction(() => {
    deleteClasses(db, fileId);
    db.run('DELETE FROM files WHERE id = ?', [fileId]);
  });
}

function storeOutcome(
  db: IndexDb,
  repoId: number,
  source: OpenedSource,
  file: SourceFile,
  outcome: Extract<FileOutcome, { kind: 'parsed' | 'skipped' }>,
  parseMs: number,
  oldId: number | undefined,
  srcLayout: boolean,
): void {
  const { info } = source;
  const { module, isPackage } = modulePathOf(file.path, info.modulePrefix, srcLayout);
  const { hash, size } = outcome;
  db.transaction(() => {
    if (outcome.kind === 'skipped') {
      writeFile(db, repoId, oldId, {
        path: file.path,
        module,
        isPackage,
        size,
        mtime: file.mtimeMs ?? null,
        hash,
        status: 'skipped',
        reason: outcome.reason,
        detail: outcome.detail,
        parseMs,
      });
      return;
    }
    const fileId = writeFile(db, repoId, oldId, {
      path: file.path,
      module,
      isPackage,
      size,
      mtime: file.mtimeMs ?? null,
      hash,
      status: 'parsed',
      reason: isImportable(module) ? undefined : 'not-importable',
      detail: isImportable(module) ? undefined : `'${module}' is not an importable module path`,
      facts: outcome.facts,
      slim: outcome.slim,
      parseMs,
    });
    // classes of this file that are plainly blocks: their subclasses further down are too
    const plain = new Set<string>();
    for (const c of outcome.classes) {
      const likelyBlock = c.bases.some((b) => plain.has(b.replace(/\[.*$/s, '').trim()) || plainlyTorchModule(b, outcome.imports));
      if (likelyBlock) plain.add(c.name);
      const doc = [c.docstring, c.comments].filter(Boolean).join('\n').slice(0, 800);
      const category = guessCategory(c.name, c.bases, module, c.signature);
      // the FTS table reads these same columns back from `classes` (external content): keep them identical
      const text = {
        name: c.name,
        // the name's words, what its code does and what its abbreviations stand for (from its own docstring)
        words: searchWords(c.name, [category, module.split('.').pop() ?? '', ...(c.does ?? []), ...acronymMeanings(c.name, `${doc} ${c.signature}`)]),
        doc,
        signature: c.signature,
        path: `${module.replace(/\./g, ' ')} ${searchWords(module.split('.').pop() ?? '')} ${file.path}`,
        repo: info.name,
      };
      db.run(
        'INSERT INTO classes (file_id, repo_id, module, name, line, end_line, bases, abstract, category, words, doc, signature, path, repo, exact_hash, lex_sig, struct_sig, tokens, is_block) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        [
          fileId,
          repoId,
          module,
          text.name,
          c.startLine,
          c.endLine,
          JSON.stringify(c.bases),
          c.abstract ? 1 : 0,
          category,
          text.words,
          text.doc,
          text.signature,
          text.path,
          text.repo,
          c.dup?.exact ?? null,
          c.dup ? sigBytes(c.dup.lex) : null,
          c.dup ? sigBytes(c.dup.struct) : null,
          c.dup?.tokens ?? 0,
          // searchable at once when a base is plainly one of torch's modules; discovery decides the rest
          likelyBlock ? 1 : 0,
        ],
      );
      const id = db.lastId();
      db.run('INSERT INTO classes_fts (docid, name, words, doc, signature, path, repo) VALUES (?, ?, ?, ?, ?, ?, ?)', [
        id,
        text.name,
        text.words,
        text.doc,
        text.signature,
        text.path,
        text.repo,
      ]);
    }
  });
}

/**
 * True when a base expression names one of torch's own modules through the file's own top-level imports
 * (`nn.Module` after `from torch import nn`, `M` after `from torch.nn import Module as M`). Only a first guess while a
 * run is under way: `discoverBlocks` decides for every class once the run's files are in.
 */
export function plainlyTorchModule(base: string, imports: ImportFact[]): boolean {
  const dotted = base.replace(/\[.*$/s, '').trim();
  if (isTorchModuleClass(dotted)) return true;
  const dot = dotted.indexOf('.');
  const first = dot < 0 ? dotted : dotted.slice(0, dot);
  const rest = dot < 0 ? '' : dotted.slice(dot);
  for (const imp of imports) {
    if (imp.inFunction || imp.typeChecking || imp.level > 0 || imp.bound !== first) continue;
    if (imp.kind === 'from' && imp.name) return isTorchModuleClass(`${imp.module}.${imp.name}${rest}`);
    // `import torch.nn` binds `torch` (the base is written in full); `import torch.nn as nn` binds the module
    if (imp.kind === 'import') return isTorchModuleClass(imp.module === first || imp.module.startsWith(`${first}.`) ? dotted : `${imp.module}${rest}`);
  }
  return false;
}
