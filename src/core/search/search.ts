/**
 * Block search: FTS4 finds candidates (sql.js has no FTS5), or the same index held in memory (engine.ts) in a process
 * that keeps one; ranking is BM25 over `matchinfo` in JS, with exact and prefix name matches first. Filters by
 * repository, category, kind and validation state.
 */
import type { IndexDb } from '../store/database';
import type { SqlValue } from 'sql.js';
import { RANKED, SearchEngine } from './engine';
import { readSnapshot, snapshotCurrent, writeSnapshot, type PreparedSnapshot } from './snapshot';
export { prepareSnapshot } from './snapshot';
import type { EngineFilter, Selection } from './engine';
import { B, bm25Term, K1, WEIGHTS } from './bm25';
import { understand, vocabularyOf } from './query';
import type { UnderstoodQuery, Vocabulary } from './query';
import { lowerBound } from '../base/sorted';
import { popcount } from '../base/bits';
import { BLOCK_WORDS, factsOf } from './facts';
import type { RowFacts } from './facts';

export type BlockKind = 'block' | 'abstract' | 'class';

export interface SearchQuery {
  text: string;
  repo?: string;
  category?: string;
  /** `block` (default): nn.Module blocks; `abstract`: abstract blocks only; `class`: every class. */
  kind?: BlockKind;
  /** `validated`, `failed`, or `none` (never pulled with validation). */
  validation?: string;
  limit?: number;
  offset?: number;
  /** Group duplicates under one entry, their original (default true; false lists every copy). */
  group?: boolean;
}

export interface HitValidation {
  status: string;
  tier: string | null;
  category?: string;
}

/** The validation record of a class row, read leniently (an old or damaged record is no record). */
function validationOf(raw: SqlValue): HitValidation | null {
  if (raw === null || raw === undefined) return null;
  try {
    const v = JSON.parse(String(raw)) as Partial<HitValidation>;
    return typeof v.status === 'string'
      ? { status: v.status, tier: typeof v.tier === 'string' ? v.tier : null, ...(typeof v.category === 'string' ? { category: v.category } : {}) }
      : null;
  } catch {
    return null;
  }
}

export interface SearchHit {
  id: number;
  name: string;
  /** `module.path.ClassName`, the pull target within its repository. */
  qualname: string;
  /** `repo:module.path.ClassName`, unambiguous across repositories. */
  target: string;
  repo: string;
  module: string;
  path: string;
  line: number;
  endLine: number;
  category: string;
  abstract: boolean;
  isBlock: boolean;
  signature: string;
  doc: string;
  /** What the last pull with validation recorded (status, tier, category), or null. */
  validation: HitValidation | null;
  /** The repository's license (SPDX id), when known. */
  license: string | null;
  score: number;
  /** When the block has lexical duplicates: how many copies (itself included) in how many repositories. */
  copies?: { count: number; repos: number };
  /** Set when several indexes were searched together: the one that holds the block. */
  index?: string;
  /** Set when a semantic ranker ranked it again (semantic.ts): the cosine of its embedding to the query's. */
  semantic?: number;
}

/** The index's vocabulary, kept per database until its blocks change; `maxId` and `count` of the blocks it read. */
const vocabularies = new WeakMap<IndexDb, { key: string; v: Vocabulary; maxId: number; count: number }>();
function vocabulary(db: IndexDb): Vocabulary {
  // every write to the index goes through this connection: its count of writes says whether the blocks may differ
  const key = String(db.generation);
  const kept = vocabularies.get(db);
  if (kept?.key === key) return kept.v;
  const known = engines.get(db);
  if (known?.engine && known.generation === db.generation) {
    // the in-memory search read every name already (or its snapshot holds them)
    const { vocabulary: sorted, blockIds } = known.engine;
    const v: Vocabulary = { words: new Set(sorted), sorted };
    vocabularies.set(db, { key, v, maxId: blockIds.max, count: blockIds.count });
    return v;
  }
  const now = db.get('SELECT coalesce(max(id), 0) AS m, count(*) AS n FROM classes WHERE is_block = 1');
  const maxId = Number(now?.m ?? 0);
  const count = Number(now?.n ?? 0);
  if (kept && maxId >= kept.maxId) {
    // blocks only added since (a cold index lands files while searches run): read the new names, not all of them
    const added = db.all('SELECT name FROM classes WHERE is_block = 1 AND id > ?', [kept.maxId]).map((x) => String(x.name));
    if (kept.count + added.length === count) {
      const more = vocabularyOf(added);
      const fresh = [...more.words].filter((w) => !kept.v.words.has(w));
      for (const w of fresh) kept.v.words.add(w);
      const v: Vocabulary = fresh.length ? { words: kept.v.words, sorted: [...kept.v.words].sort() } : kept.v;
      vocabularies.set(db, { key, v, maxId, count });
      return v;
    }
  }
  // blocks removed, or older rows became blocks (a rediscovery): all of them again
  const v = vocabularyOf(db.all('SELECT DISTINCT name FROM classes WHERE is_block = 1').map((x) => String(x.name)));
  vocabularies.set(db, { key, v, maxId, count });
  return v;
}

/** The in-memory search of each index that a long-running process keeps (`keepSearchEngine`), by the index's state. */
const engines = new WeakMap<IndexDb, { generation: number; engine?: SearchEngine; building?: boolean; warming?: boolean }>();
const keeping = new WeakSet<IndexDb>();
const QUIET_MS = 300;
/** A turn of the event loop given to whatever waits (a request) between slices of building and warming. */
const pause = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Keeps `db`'s search in memory (the editor's server, `nn-rag mcp`): read from the snapshot beside the index when that
 * was made from it as it is (search/snapshot.ts), else built now in the background, a slice at a time,
 * and again after the index changes; until it is ready, searches ask FTS4 and rank the same. A one-shot command does
 * not call this (its one query would wait for nothing).
 */
export async function keepSearchEngine(db: IndexDb, snapshot?: Promise<PreparedSnapshot | undefined>): Promise<void> {
  keeping.add(db);
  if (!engines.get(db)) {
    // the snapshot beside the index (`snapshot`: read and checked while the index opened), when it was made from the
    // index as it is: the first query answered from memory
    const generation = db.generation;
    const engine = await readSnapshot(db, snapshot).catch(() => undefined);
    if (engine && db.generation === generation && !engines.get(db)) {
      const kept = { generation, engine, warming: true };
      engines.set(db, kept);
      // warmed once the first requests have been answered (they come as the process starts: not kept waiting)
      setTimeout(() => {
        warm(db, engine)
          .catch(() => undefined)
          .finally(() => (kept.warming = false));
      }, QUIET_MS).unref();
    }
  }
  readyEngine(db);
}

/** Writes `engine` beside `db`'s file when it holds the content last saved there (search/snapshot.ts). */
async function snapshotFrom(db: IndexDb, engine: SearchEngine, generation: number): Promise<void> {
  const saved = db.savedAs;
  // (a reader beside the index, a server, writes nothing there)
  if (!db.file || db.readOnly || !saved || saved.generation !== generation || db.generation !== generation) return;
  await writeSnapshot(db.file, engine, saved.sha256).catch(() => false);
}

/** Builds `db`'s search and writes it beside the index (`nn-rag index`: the next process to open it answers from
 * memory at once); nothing when the index is not saved as it is now. */
export async function writeSearchSnapshot(db: IndexDb): Promise<void> {
  const generation = db.generation;
  if (!db.file || db.savedAs?.generation !== generation || (await snapshotCurrent(db.file, db.savedAs.sha256))) return;
  await snapshotFrom(db, await SearchEngine.build(db), generation);
}

/** Builds `db`'s in-memory search now and waits for it (tests and benches); it serves `db`'s searches from then on. */
export async function buildSearchEngine(db: IndexDb): Promise<SearchEngine> {
  const generation = db.generation;
  const engine = await SearchEngine.build(db);
  if (db.generation === generation) engines.set(db, { generation, engine });
  return engine;
}

/** Whether `db`'s searches are answered from memory now (a kept index whose in-memory search is built and current). */
export function searchInMemory(db: IndexDb): boolean {
  const known = engines.get(db);
  return known?.engine !== undefined && known.generation === db.generation;
}

/** Whether `db`'s in-memory search is still answering its own warming queries (one read from a snapshot, at first). */
export function searchWarming(db: IndexDb): boolean {
  return searchInMemory(db) && engines.get(db)?.warming === true;
}

/** The in-memory search of `db` as it is now, or undefined (one is started when `db` is kept and none is building). */
function readyEngine(db: IndexDb): SearchEngine | undefined {
  const known = engines.get(db);
  if (known?.engine && known.generation === db.generation) return known.engine;
  if (keeping.has(db) && !known?.building) {
    const generation = db.generation;
    engines.set(db, { generation: -1, building: true });
    // once the index has been quiet a moment (not after each file of a run that is still indexing)
    const timer = setTimeout(() => {
      if (db.generation !== generation) return void engines.delete(db);
      SearchEngine.build(db, pause)
        .then(async (engine) => {
          await warm(db, engine);
          await snapshotFrom(db, engine, generation);
          return engine;
        })
        .then(
          // written meanwhile: dropped (the next search starts another)
          (engine) => engines.set(db, db.generation === generation ? { generation, engine } : { generation: -1 }),
          () => engines.delete(db),
        );
    }, QUIET_MS);
    timer.unref();
  }
  return undefined;
}

/**
 * Answers a few queries of the index's most common name words with a new in-memory search before it serves: the first
 * searches of a fresh process run the ranking's code before the JavaScript engine has compiled it (ten times slower)
 * and read each block's facts for the first time; a person's first queries should not pay for that.
 */
async function warm(db: IndexDb, engine: SearchEngine): Promise<void> {
  const generation = db.generation;
  // (after whatever waits: a request that came meanwhile is answered first)
  await pause();
  const words = engine.commonNameWords(12);
  const n = words.length;
  // one word, two, three, a word twice (every document then counts as many words: one level)
  const queries = [
    ...words,
    ...words.map((w, i) => `${w} ${words[(i + 1) % n]}`),
    ...words.slice(0, 6).map((w, i) => `${w} ${words[(i + 2) % n]} ${words[(i + 4) % n]}`),
    ...words.slice(0, 6).map((w) => `${w} ${w}`),
  ];
  for (const text of queries) {
    if (db.generation !== generation) return;
    searchOver(db, { text, limit: 10 }, engine);
    await pause();
  }
}

/** Per word typed: the modules that define a class of that name (case aside) or whose file's name has it as a word
 * (`convnext`, `modeling_bert`: modeling, bert): the modules of the model the word may name. */
type Models = Map<string, Set<string>[]>;

/** Per database, until it changes: its modules by the words of their files' names, and the words asked so far. */
const models = new WeakMap<IndexDb, { generation: number; files: Map<string, Set<string>>; names: Map<string, Set<string>> }>();
function modelsOf(db: IndexDb, words: string[], engine?: SearchEngine): Models {
  let kept = models.get(db);
  if (kept?.generation !== db.generation) {
    const files = new Map<string, Set<string>>();
    const add = (module: string): void => {
      for (const w of (module.split('.').pop() ?? '').toLowerCase().split('_')) (files.get(w) ?? files.set(w, new Set()).get(w)!).add(module);
    };
    if (engine) engine.modules.forEach(add);
    else db.each('SELECT DISTINCT module FROM classes', [], (r) => add(String(r.module)));
    kept = { generation: db.generation, files, names: new Map() };
    models.set(db, kept);
  }
  if (kept.names.size > 10_000) kept.names.clear();
  const m: Models = new Map();
  for (const w of words) {
    let named = kept.names.get(w);
    if (!named)
      kept.names.set(
        w,
        (named = new Set(
          engine
            ? engine.namedExactly(w).map((d) => String(engine.row(d).module))
            : db.all('SELECT DISTINCT module FROM classes WHERE lower(name) = ?', [w]).map((r) => String(r.module)),
        )),
      );
    const files = kept.files.get(w);
    if (named.size || files) m.set(w, files ? [named, files] : [named]);
  }
  return m;
}

/** What the query means over this index (see query.ts). */
export function understandQuery(db: IndexDb, text: string): UnderstoodQuery {
  return understand(text, vocabulary(db));
}

/** For a search that found nothing: the query as the index would spell it, or the closest block name. */
export function searchSuggestion(db: IndexDb, text: string): string | undefined {
  const u = understandQuery(db, text);
  if (u.corrections.size) return u.typed.map((w) => u.corrections.get(w) ?? w).join(' ');
  return undefined;
}

/**
 * Each phrase's inverse document frequency per column, from matchinfo('pcnalx') (the documents with a hit and the
 * documents in all: the same in every row of one query).
 */
function idfOf(info: Uint32Array): Float64Array {
  const p = info[0];
  const c = info[1];
  const n = info[2];
  const x = 3 + 2 * c;
  const idf = new Float64Array(p * c);
  for (let i = 0; i < p * c; i++) {
    const df = info[x + 3 * i + 2];
    idf[i] = Math.log(1 + (n - df + 0.5) / (df + 0.5));
  }
  return idf;
}

/** BM25 summed over phrases and weighted columns, from matchinfo('pcnalx') and the query's `idfOf`. */
function bm25(info: Uint32Array, idfs: Float64Array): number {
  const p = info[0];
  const c = info[1];
  // the layout: p, c, n, then the columns' averages (a), this row's lengths (l), and per phrase and column (x)
  const x = 3 + 2 * c;
  let score = 0;
  for (let i = 0; i < p; i++) {
    for (let j = 0; j < c; j++) {
      const base = x + 3 * (i * c + j);
      const tf = info[base];
      if (!tf) continue;
      score += bm25Term(j, tf, info[3 + c + j], info[3 + j], idfs[i * c + j]);
    }
  }
  return score;
}

/**
 * How many of the query's typed words the row matches (each through itself or any term it stands for: `origins`
 * maps phrase i to its typed word; without it, each phrase counts): rows that match more words come first.
 */
function coverage(info: Uint32Array, origins?: number[]): number {
  const p = info[0];
  const c = info[1];
  const x = 3 + 2 * c;
  let mask = 0;
  let more: Set<number> | undefined;
  for (let i = 0; i < p; i++) {
    for (let j = 0; j < c; j++) {
      if (info[x + 3 * (i * c + j)]) {
        const word = origins?.[i] ?? i;
        if (word < 31) mask |= 1 << word;
        else (more ??= new Set()).add(word);
        break;
      }
    }
  }
  let count = more?.size ?? 0;
  for (; mask; mask &= mask - 1) count++;
  return count;
}

/** Whether the row's text says typed word `t` (any phrase that stands for it has a hit; `origins` as in `coverage`). */
function saysWord(info: Uint32Array, origins: number[] | undefined, t: number): boolean {
  const p = info[0];
  const c = info[1];
  const x = 3 + 2 * c;
  for (let i = 0; i < p; i++) {
    if ((origins?.[i] ?? i) !== t) continue;
    for (let j = 0; j < c; j++) if (info[x + 3 * (i * c + j)]) return true;
  }
  return false;
}

/** Whether two words are one (`norm` for normalization, `excite` for excitation). */
function sameWord(a: string, b: string): boolean {
  if (a === b) return true;
  if (Math.min(a.length, b.length) >= 4 && (a.startsWith(b) || b.startsWith(a))) return true;
  let k = 0;
  while (k < a.length && a[k] === b[k]) k++;
  return k >= 5;
}

/** What a block in the file named by a word typed gains, when another word typed is in its name (`score`). */
const PART_OF = 40;

/** Words of queries for data transforms: without one, a class of a `transforms` module ranks below blocks. */
const TRANSFORM_WORDS = /^(transforms?|augment\w*|crop|flip|jitter|resize|rotation|erasing|normalize|blur|grayscale)$/;

function toUint32(blob: SqlValue): Uint32Array {
  const bytes = blob as Uint8Array;
  // sql.js hands out a copy of its own: read it in place when it is aligned
  if (bytes.byteOffset % 4 === 0) return new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length >> 2);
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  return new Uint32Array(copy.buffer, 0, bytes.length >> 2);
}

const SELECT = `SELECT c.id, c.name, c.module, c.line, c.end_line, c.category, c.abstract, c.is_block, c.signature, c.doc,
  c.validation, c.repo, f.path AS file_path, (SELECT r.license FROM repos r WHERE r.id = c.repo_id) AS license
  FROM classes c JOIN files f ON f.id = c.file_id`;

function filters(q: SearchQuery): { sql: string[]; params: SqlValue[] } {
  const sql: string[] = [];
  const params: SqlValue[] = [];
  const kind = q.kind ?? 'block';
  if (kind === 'block') sql.push('c.is_block = 1');
  if (kind === 'abstract') sql.push('c.is_block = 1 AND c.abstract = 1');
  if (q.repo) {
    sql.push('c.repo = ?');
    params.push(q.repo);
  }
  if (q.category) {
    sql.push('c.category = ?');
    params.push(q.category);
  }
  if (q.validation) {
    if (q.validation === 'none') sql.push('c.validation IS NULL');
    else {
      // `validated` or `failed`, as recorded by the last pull
      sql.push("json_extract(c.validation, '$.status') = ?");
      params.push(q.validation);
    }
  }
  return { sql, params };
}

function hitOf(r: Record<string, SqlValue>, score: number): SearchHit {
  const module = String(r.module);
  const name = String(r.name);
  return {
    id: Number(r.id),
    name,
    qualname: `${module}.${name}`,
    target: `${String(r.repo)}:${module}.${name}`,
    repo: String(r.repo),
    module,
    path: String(r.file_path),
    line: Number(r.line),
    endLine: Number(r.end_line),
    category: String(r.category),
    abstract: Number(r.abstract) === 1,
    isBlock: Number(r.is_block) === 1,
    // one line (the index keeps it without comments)
    signature: String(r.signature).replace(/\(\s+/g, '(').replace(/\s+\)/g, ')'),
    doc: String(r.doc).slice(0, 300),
    validation: validationOf(r.validation),
    license: r.license === null || r.license === undefined ? null : String(r.license),
    score: Math.round(score * 1000) / 1000,
  };
}

/** Kept per document of an in-memory search (the same rows query after query). */
const engineFacts = new WeakMap<SearchEngine, (RowFacts | undefined)[]>();
/** The first `k` items offered, by `order` (a total order), kept in a heap whose root is the one that sorts last. */
class Leading<T> {
  private readonly heap: T[] = [];

  constructor(
    private readonly k: number,
    private readonly order: (a: T, b: T) => number,
  ) {}

  /** The item that sorts last of the `k` kept, once there are `k` (an item that sorts after it cannot enter). */
  last(): T | undefined {
    return this.heap.length === this.k ? this.heap[0] : undefined;
  }

  offer(x: T): void {
    const heap = this.heap;
    const worse = (i: number, j: number): boolean => this.order(heap[i], heap[j]) > 0;
    const swap = (i: number, j: number): void => void ([heap[i], heap[j]] = [heap[j], heap[i]]);
    if (heap.length < this.k) {
      heap.push(x);
      for (let i = heap.length - 1; i > 0 && worse(i, (i - 1) >> 1); i = (i - 1) >> 1) swap(i, (i - 1) >> 1);
      return;
    }
    if (this.order(x, heap[0]) >= 0) return;
    heap[0] = x;
    for (let i = 0; ;) {
      const l = 2 * i + 1;
      let m = i;
      if (l < this.k && worse(l, m)) m = l;
      if (l + 1 < this.k && worse(l + 1, m)) m = l + 1;
      if (m === i) break;
      swap(i, m);
      i = m;
    }
  }

  sorted(): T[] {
    return [...this.heap].sort(this.order);
  }
}

type Candidates = { rows: Record<string, SqlValue>[]; info: (k: number) => Uint32Array };
type Scored = { r: Record<string, SqlValue>; score: number; covered: number };
/** The ranking's order: more typed words matched, then the higher score, then by name (and id: a total order). */
const order = (a: Scored, b: Scored): number =>
  b.covered - a.covered || b.score - a.score || String(a.r.name).localeCompare(String(b.r.name)) || Number(a.r.id) - Number(b.r.id);

/** How a query scores a candidate beyond BM25 (both ways of finding candidates rank with the same one). */
interface Ranker {
  /** The query's words run together, lower case (`settled` compares names with it). */
  query: string;
  /** How many typed words candidate counts, from `c` its text matches (`says(t)`: its text says typed word t). */
  lift(c: number, row: () => RowFacts, says: (t: number) => boolean): number;
  /** What a name scores against the query: the query itself, its beginning, or within it. */
  nameScore(lower: string): number;
  /** What the block's kind scores (a block word in its name, a whole classifier, a data transform). */
  kindScore(blockWord: boolean, classifier: boolean, transforms: boolean): number;
  /** The score without the name's words, meanings, initials and model (`bonus`), from BM25's `text`. */
  settled(text: number, row: RowFacts): number;
  /** What the name's words, meanings, initials and model add: at most `most`. */
  bonus(row: RowFacts): number;
  most: number;
  /** The typed words (their places) that name a model, and the model's modules, by the word typed. */
  modelWords: number[];
  models: Models;
  /** Each term and what it adds when the name has it as a word (`bonus`'s first part). */
  nameWords: [string, number][];
}

function rankerOf(understood: UnderstoodQuery, typed: string, models: Models): Ranker {
  const terms = understood.terms;
  const query = typed
    .trim()
    .toLowerCase()
    .replace(/[\s\-_]+/g, '');
  const queryWords = new Set(terms);
  const nameWords = [...queryWords].map((w): [string, number] => [w, understood.loose.has(w) ? 2 : 5]);
  const wantsBlock = understood.typed.some((w) => BLOCK_WORDS.has(w));
  const wantsTransform = understood.typed.some((w) => TRANSFORM_WORDS.test(w));
  const partOfModel = (w: string, row: RowFacts): boolean => models.get(w)?.some((modules) => modules.has(row.module)) === true && !row.words.has(w);
  // the typed words that name a model (a class or a file of the index), by their place
  const modelWords = understood.typed.flatMap((w, t) => (models.has(w) ? [t] : []));
  const all = understood.typed.length;
  // the most the name's words, meanings, initials and model can add (`bonus` below): a candidate whose score without
  // them cannot reach the leading results so far is not scored further
  let most = 0;
  for (const [, n] of nameWords) most += n;
  most += 100 * understood.meanings.filter((m) => m.length).length + 20 * understood.initials.length + (understood.acronym ? 100 : 0) + PART_OF;
  const nameScore = (name: string): number => {
    if (name === query) return 1000;
    // (a name that begins with two letters typed is no sign: `bn` begins BNReLU2d, and means batch norm)
    if (query.length >= 3 && name.startsWith(query)) return 200 + 100 / name.length;
    if (query.length >= 3 && name.includes(query)) return 50;
    return 0;
  };
  const kindScore = (blockWord: boolean, classifier: boolean, transforms: boolean): number => {
    let score = 0;
    if (wantsBlock) {
      if (blockWord) score += 30;
      // a whole classifier (it takes num_classes) is not the block asked for
      if (classifier) score -= 30;
    }
    if (!wantsTransform && transforms) score -= 10;
    return score;
  };
  return {
    query,
    most,
    nameWords,
    modelWords,
    models,
    nameScore,
    kindScore,
    lift: (c, row, says) => {
      // the initials of the words typed are the name (`atrous spatial pyramid pooling`: ASPP)
      if (understood.acronym && row().own.includes(understood.acronym)) return all;
      // the words typed, run together, are the name or begin it (`image encoder vit`: ImageEncoderViT, whose `ViT` its
      // text never says as a word of its own)
      if (c < all && query.length >= 3 && row().lower.startsWith(query)) return all;
      // a word typed that names the block's model (its file, or a class beside it) and that its text does not say
      if (c < all && modelWords.length) {
        const facts = row();
        for (const t of modelWords) if (partOfModel(understood.typed[t], facts) && !says(t)) c++;
      }
      return c;
    },
    settled: (text, row) => text + nameScore(row.lower) + kindScore(row.blockWord, row.classifier, row.transforms) + row.standing,
    bonus: (row) => {
      let score = 0;
      // every query word in the name's own words (abbreviations expanded)
      for (const [w, n] of nameWords) if (row.words.has(w)) score += n;
      // an acronym whose meaning is the name (`fpn`: FeaturePyramidNetwork, `vit`: VisionTransformer)
      const own = row.own;
      for (const meaning of understood.meanings) if (meaning.length && meaning.every((m) => own.some((w) => sameWord(w, m)))) score += 100;
      for (const a of understood.initials) if (own.includes(a)) score += 20;
      if (understood.acronym && own.includes(understood.acronym)) score += own.length === 1 ? 100 : 30;
      // a part of the model the query names (`convnext block`: CNBlock in convnext.py, not the whole ConvNeXt; `decoder
      // block of gpt`: the Block beside GPT): a word typed names the block's file, or a class of its module, and not the
      // block, and another word typed is in the block's name
      const partOf = understood.typed.some((w) => partOfModel(w, row));
      if (partOf && understood.typed.some((w) => row.words.has(w))) score += PART_OF;
      return score;
    },
  };
}

/** The lowest level of typed words matched whose candidates, with those of the levels above, fill `wanted`. */
function floorOf(levels: number[], wanted: number): number {
  let floor = levels.length - 1;
  for (let n = levels[floor] ?? 0; floor > 0 && n < wanted;) n += levels[--floor] ?? 0;
  return floor;
}

/**
 * The first `wanted` candidates by the ranking's order (typed words matched, then score), sorted; `factsAt(k)`: what
 * the ranking reads of candidate k that does not depend on the query. `anded`: the candidates matched every typed word.
 */
function leadingResults(
  found: Candidates,
  understood: UnderstoodQuery,
  ranker: Ranker,
  anded: boolean,
  wanted: number,
  factsAt: (k: number) => RowFacts,
): Scored[] {
  const { rows } = found;
  // how many of the typed words each candidate matches, the first key of the order: only the levels that can fill
  // the leading results are scored (a candidate of a lower level sorts after every one of them)
  const origins = anded ? undefined : understood.origins;
  const covers = new Uint16Array(rows.length);
  const text = new Float64Array(rows.length);
  let idf: Float64Array | undefined;
  const levels: number[] = [];
  for (let k = 0; k < rows.length; k++) {
    const info = found.info(k);
    const c = ranker.lift(
      coverage(info, origins),
      () => factsAt(k),
      (t) => saysWord(info, origins, t),
    );
    covers[k] = c;
    idf ??= idfOf(info);
    text[k] = bm25(info, idf);
    levels[c] = (levels[c] ?? 0) + 1;
  }
  const floor = floorOf(levels, wanted);
  // only what can reach the page is scored and sorted: the leading results, which the diversity rule below may reorder
  const leading = new Leading<Scored>(wanted, order);
  for (let k = 0; k < rows.length; k++) {
    if (covers[k] < floor) continue;
    const row = factsAt(k);
    const last = leading.last();
    const base = ranker.settled(text[k], row);
    if (last && (covers[k] < last.covered || (covers[k] === last.covered && base + ranker.most < last.score))) continue;
    leading.offer({ r: rows[k], score: base + ranker.bonus(row), covered: covers[k] });
  }
  return leading.sorted();
}

/** How many of the query's postings per document from the floor up make reading them all cheaper than bounds. */
const EXACT_PER_DOCUMENT = 4;

/**
 * A bound on each document's BM25 for a query (`leadingSelected`): each phrase and column it hits at the most hits
 * any document has there, at its own length: weight * most * (K1 + 1) / (most + K1 * (1 - B) + K1 * B * length / average).
 */
function looseText(sel: Selection, idf: Float64Array, figures: Uint32Array): (d: number) => number {
  const p = figures[0];
  const C = figures[1];
  const cellBits: Uint32Array[] = [];
  const cellCol: number[] = [];
  const cellTop: number[] = [];
  const cellBase: number[] = [];
  const cellPer: number[] = [];
  for (let i = 0; i < p; i++)
    for (let col = 0; col < C; col++) {
      const most = sel.mostHits(i, col);
      if (!most) continue;
      cellBits.push(sel.cell(i, col));
      cellCol.push(col);
      cellTop.push(WEIGHTS[col] * idf[i * C + col] * most * (K1 + 1));
      cellBase.push(most + K1 * (1 - B));
      cellPer.push((K1 * B) / Math.max(figures[3 + col], 1));
    }
  const cellCount = cellBits.length;
  const lengths = sel.lengths;
  return (d) => {
    const word = d >>> 5;
    const bit = 1 << (d & 31);
    let text = 0;
    for (let k = 0; k < cellCount; k++) if (cellBits[k][word] & bit) text += cellTop[k] / (cellBase[k] + cellPer[k] * lengths[d * C + cellCol[k]]);
    return text;
  };
}

/** A scratch of one number per document, zeroed (one query's text scores: `leadingSelected`). */
let texts = new Float64Array(0);
function textScratch(n: number): Float64Array {
  if (texts.length < n) texts = new Float64Array(n);
  else texts.fill(0, 0, n);
  return texts;
}

/** The k-th largest of `values` (1: the largest), reordering them (Hoare's selection). */
function kthLargest(values: Float64Array, k: number): number {
  let lo = 0;
  let hi = values.length - 1;
  const at = k - 1;
  while (lo < hi) {
    const pivot = values[(lo + hi) >> 1];
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (values[i] > pivot) i++;
      while (values[j] < pivot) j--;
      if (i <= j) {
        const x = values[i];
        values[i++] = values[j];
        values[j--] = x;
      }
    }
    if (at <= j) hi = j;
    else if (at >= i) lo = i;
    else break;
  }
  return values[at];
}

/**
 * What the name adds to each document's score for a query, read from what the engine keeps: the query within it
 * (`nameScore`), and (`named`) its words, the acronym and initials typed as its own words, and an acronym's meaning it
 * may spell (counted where it has words like each); and the names that count as every typed word (`lifted`: they begin
 * with the query, or are the acronym).
 */
function nameParts(
  engine: SearchEngine,
  understood: UnderstoodQuery,
  ranker: Ranker,
  factsAt: (d: number) => RowFacts,
): { nameScores: Map<number, number>; lifted: Set<number>; named: Uint16Array } {
  const nameScores = new Map<number, number>();
  const lifted = new Set<number>();
  if (ranker.query.length >= 3)
    for (const d of engine.namesContaining(ranker.query)) {
      const name = engine.lowerName(d);
      nameScores.set(d, ranker.nameScore(name));
      if (name.startsWith(ranker.query)) lifted.add(d);
    }
  const named = new Uint16Array(engine.size);
  for (const [w, n] of ranker.nameWords) {
    const with_ = engine.namedWith(w);
    if (with_) for (let e = 0; e < with_.length; e++) named[with_[e]] += n;
  }
  const own = (word: string): Int32Array => engine.ownedWith(word) ?? new Int32Array(0);
  for (const a of understood.initials) for (const d of own(a)) named[d] += 20;
  if (understood.acronym)
    for (const d of own(understood.acronym)) {
      named[d] += factsAt(d).own.length === 1 ? 100 : 30;
      lifted.add(d);
    }
  // an acronym's meaning spelled by the name: the documents with a word of the name as written like each of its words
  for (const meaning of understood.meanings) {
    if (!meaning.length) continue;
    if (meaning.length > 8) {
      for (let d = 0; d < named.length; d++) named[d] += 100;
      continue;
    }
    const marks = new Uint8Array(engine.size);
    meaning.forEach((m, j) => {
      // (a word like m begins with its first four letters, or is m)
      for (const w of m.length >= 4 ? engine.ownWordsFrom(m.slice(0, 4)) : [m]) {
        const with_ = engine.ownedWith(w);
        if (!sameWord(w, m) || !with_) continue;
        for (let e = 0; e < with_.length; e++) marks[with_[e]] |= 1 << j;
      }
    });
    const every = (1 << meaning.length) - 1;
    for (let d = 0; d < marks.length; d++) if (marks[d] === every) named[d] += 100;
  }
  return { nameScores, lifted, named };
}

/** How many documents count each number of typed words (`levels`), and each document from a level up (`eligible`). */
interface Covers {
  levels: number[];
  eligible: (floor: number, fn: (d: number, covered: number) => void) => void;
}

/** `levels` trimmed of empty levels at the top. */
function trimmed(counts: ArrayLike<number>): number[] {
  const levels = Array.from(counts);
  while (levels.length > 1 && !levels[levels.length - 1]) levels.pop();
  return levels;
}

/**
 * How many typed words each matched document counts, document by document: the words its text says (`said`: one
 * bitset a word), every word for a `lifted` one, and what `more` adds (a model named).
 */
function coversOne(docs: Int32Array, said: Uint32Array[], all: number, lifted: Set<number>, more: (d: number) => number): Covers {
  const covers = new Uint16Array(docs.length);
  const counts: number[] = [];
  for (let k = 0; k < docs.length; k++) {
    const d = docs[k];
    let c = 0;
    for (let t = 0; t < said.length; t++) if (said[t][d >>> 5] & (1 << (d & 31))) c++;
    if (c < all && lifted.has(d)) c = all;
    else if (c < all) c += more(d);
    covers[k] = c;
    counts[c] = (counts[c] ?? 0) + 1;
  }
  return {
    levels: trimmed(Array.from(counts, (x) => x ?? 0)),
    eligible: (floor, fn) => {
      for (let k = 0; k < docs.length; k++) if (covers[k] >= floor) fn(docs[k], covers[k]);
    },
  };
}

/**
 * `coversOne` 32 documents at a time: the words' bitsets added up in bit planes (a binary counter per document), each
 * level's documents read from the planes; only the `lifted` documents one by one.
 */
function coversSliced(matched: Uint32Array, said: Uint32Array[], all: number, lifted: Set<number>): Covers {
  const W = matched.length;
  const S = said.length;
  const P = Math.max(1, 32 - Math.clz32(S));
  const planes = new Uint32Array(P * W);
  for (let t = 0; t < S; t++) {
    const b = said[t];
    for (let w = 0; w < W; w++) {
      let carry = b[w] & matched[w];
      for (let j = 0; carry && j < P; j++) {
        const x = planes[j * W + w];
        planes[j * W + w] = x ^ carry;
        carry = x & carry;
      }
    }
  }
  /** The matched documents of word w that count L typed words. */
  const at = (L: number, w: number): number => {
    let x = matched[w];
    for (let j = 0; j < P; j++) x &= (L >> j) & 1 ? planes[j * W + w] : ~planes[j * W + w];
    return x;
  };
  const counts = new Array<number>(Math.max(all, S) + 1).fill(0);
  for (let L = 0; L <= S; L++) for (let w = 0; w < W; w++) counts[L] += popcount(at(L, w));
  // a lifted document counts every word
  const raised = new Set<number>();
  for (const d of lifted) {
    if (!(matched[d >>> 5] & (1 << (d & 31)))) continue;
    let c = 0;
    for (let t = 0; t < S; t++) if (said[t][d >>> 5] & (1 << (d & 31))) c++;
    if (c >= all) continue;
    counts[c]--;
    counts[all]++;
    raised.add(d);
  }
  return {
    levels: trimmed(counts),
    eligible: (floor, fn) => {
      for (let w = 0; w < W; w++)
        for (let L = floor; L <= S; L++)
          for (let x = at(L, w); x; x &= x - 1) {
            const d = (w << 5) + (31 - Math.clz32(x & -x));
            if (!raised.size || !raised.has(d)) fn(d, L);
          }
      if (all >= floor) for (const d of raised) fn(d, all);
    },
  };
}

/**
 * `leadingResults` over the in-memory search's selection, with the same answer: the typed words a document matches
 * are read from the selection's bitsets, and a document is scored in full only where a bound on its score could still
 * reach the leading results: its BM25 (exactly, or at a bound: `looseText`), and the rest of its score exactly, from
 * what the engine keeps per document (where the query names a model or spells an abbreviation's meaning, the most
 * those can add).
 */
function leadingSelected(
  engine: SearchEngine,
  sel: Selection,
  understood: UnderstoodQuery,
  ranker: Ranker,
  anded: boolean,
  wanted: number,
  factsAt: (d: number) => RowFacts,
): Scored[] {
  const { figures } = sel;
  const p = figures[0];
  const C = figures[1];
  const origins = anded ? undefined : understood.origins;
  const W = (engine.size + 31) >>> 5;
  // the documents that say each typed word (through any phrase that stands for it; each phrase its own word when anded)
  const byWord: number[][] = [];
  for (let i = 0; i < p; i++) (byWord[origins?.[i] ?? i] ??= []).push(i);
  const wordBits: Uint32Array[] = [];
  byWord.forEach((phrases, t) => {
    const bits = (wordBits[t] = new Uint32Array(W));
    for (const i of phrases) {
      const b = sel.phrase(i);
      for (let w = 0; w < W; w++) bits[w] |= b[w];
    }
  });
  const said = wordBits.filter((b) => b !== undefined);
  const says = (t: number, d: number): boolean => wordBits[t] !== undefined && (wordBits[t][d >>> 5] & (1 << (d & 31))) !== 0;
  const all = understood.typed.length;
  const { nameScores, lifted, named } = nameParts(engine, understood, ranker, factsAt);
  // a word typed that names the block's model (its file, or a class beside it), that is not a word of its name and
  // that its text does not say (`lift`)
  const inModel = (t: number, d: number): boolean => {
    const w = understood.typed[t];
    if (!ranker.models.get(w)?.some((modules) => modules.has(String(sel.row(d).module)))) return false;
    const with_ = engine.namedWith(w);
    return !(with_ && with_[lowerBound(with_, d)] === d) && !says(t, d);
  };
  // how many typed words each document counts (`lift`): per level, how many; then each document from the floor up
  const { levels, eligible } = ranker.modelWords.length
    ? coversOne(sel.docs, said, all, lifted, (d) => ranker.modelWords.filter((t) => inModel(t, d)).length)
    : coversSliced(sel.matched, said, all, lifted);
  const floor = floorOf(levels, wanted);
  const idf = idfOf(figures);
  // each document's BM25 from the floor up, exactly (`exact`: every posting of the query's terms read once, the same
  // sum added in the same order as `bm25` over the document's `info`) where the query's postings are few against
  // those documents; else at a bound (`loose`: each phrase and column it hits at the most hits any document has
  // there, at its own length), and exactly only for the documents whose bound can still reach the leading results
  let eligibleCount = 0;
  for (let level = floor; level < levels.length; level++) eligibleCount += levels[level] ?? 0;
  let postings = 0;
  for (let k = 0; k < p * C; k++) postings += figures[3 + 2 * C + 3 * k + 2];
  const exact = postings <= EXACT_PER_DOCUMENT * eligibleCount ? textScratch(engine.size) : undefined;
  if (exact) for (let i = 0; i < p; i++) sel.addText(i, idf, exact);
  const loose = exact ? undefined : looseText(sel, idf, figures);
  const textOf = (d: number): number => (exact ? exact[d] : bm25(sel.info(d), idf));
  const kindScores = Array.from({ length: 8 }, (_, k) => ranker.kindScore((k & 1) !== 0, (k & 2) !== 0, (k & 4) !== 0));
  // a part of a model named: the documents of the model's modules
  const modelModules = ranker.modelWords.flatMap((t) => ranker.models.get(understood.typed[t]) ?? []);
  const inModule = (d: number): boolean => modelModules.some((modules) => modules.has(String(sel.row(d).module)));
  const anyNamed = nameScores.size > 0;
  const { kinds, standings } = engine;
  const leading = new Leading<Scored>(wanted, order);
  const score = (d: number, covered: number): void => {
    const row = factsAt(d);
    leading.offer({ r: sel.row(d), score: ranker.settled(textOf(d), row) + ranker.bonus(row), covered });
  };
  // the levels above the floor all reach the leading results; of the floor's documents (`level`), at least each one's
  // score (`bounds`: its BM25, and the rest as `settled` and `bonus` can add it); those of the best bounds are scored
  // first, then any other whose bound can still reach them (a margin for rounding: bound and score add in another order)
  const level = new Int32Array(levels[floor] ?? 0);
  const bounds = new Float64Array(level.length);
  let atFloor = 0;
  let above = 0;
  eligible(floor, (d, c) => {
    if (c > floor) {
      above++;
      return score(d, c);
    }
    level[atFloor] = d;
    const text = exact ? exact[d] : loose!(d);
    bounds[atFloor++] =
      text + (anyNamed ? (nameScores.get(d) ?? 0) : 0) + kindScores[kinds[d]] + standings[d] + named[d] + (modelModules.length && inModule(d) ? PART_OF : 0);
  });
  const need = wanted - above;
  const threshold = need > 0 && atFloor > need ? kthLargest(bounds.slice(), need) : -Infinity;
  for (let f = 0; f < atFloor; f++) if (bounds[f] >= threshold) score(level[f], floor);
  for (let f = 0; f < atFloor; f++) {
    if (bounds[f] >= threshold) continue;
    const last = leading.last();
    if (last && (floor < last.covered || bounds[f] + 1e-6 < last.score)) continue;
    score(level[f], floor);
  }
  return leading.sorted();
}

export function searchBlocks(db: IndexDb, q: SearchQuery): SearchHit[] {
  return searchOver(db, q, readyEngine(db));
}

/** The page a query asks for: how many results (1 to 1,000, 20 unless told) after how many. */
export function pageOf(q: SearchQuery): { limit: number; offset: number } {
  return { limit: Math.max(1, Math.min(q.limit ?? 20, 1000)), offset: Math.max(0, q.offset ?? 0) };
}

/** `searchBlocks` answered by `engine` (the index's in-memory search of its state now), or by FTS4 without one. */
function searchOver(db: IndexDb, q: SearchQuery, engine: SearchEngine | undefined): SearchHit[] {
  const { limit, offset } = pageOf(q);
  const f = filters(q);
  const understood = understandQuery(db, q.text);
  const terms = understood.terms;
  if (terms.length === 0) {
    const where = f.sql.length ? `WHERE ${f.sql.join(' AND ')}` : '';
    return db.all(`${SELECT} ${where} ORDER BY c.repo, c.module, c.name LIMIT ? OFFSET ?`, [...f.params, limit, offset]).map((r) => hitOf(r, 0));
  }
  // prefix matching for words of three letters or more; shorter ones match whole words only
  const pattern = (t: string): string => (t.length >= 3 ? `${t}*` : t);
  const where = ['classes_fts MATCH ?', ...f.sql].join(' AND ');
  const kept: EngineFilter = { kind: q.kind ?? 'block', repo: q.repo || undefined, category: q.category || undefined, validation: q.validation || undefined };
  // score on the narrow columns only; the wide ones are read for the page of results
  // the in-memory search's selection, or FTS4's rows with their matchinfo
  const candidates = (words: string[], and: boolean): Selection | Candidates => {
    const held = engine?.select(
      words.map((w) => ({ word: w, prefix: w.length >= 3 })),
      and,
      kept,
    );
    if (held) return held;
    const rows = db.all(
      `SELECT ${RANKED}, matchinfo(classes_fts, 'pcnalx') AS info
       FROM classes_fts JOIN classes c ON c.id = classes_fts.docid WHERE ${where}`,
      [words.map(pattern).join(and ? ' ' : ' OR '), ...f.params],
    );
    return { rows, info: (k) => toUint32(rows[k].info) };
  };
  const count = (c: Selection | Candidates): number => ('count' in c ? c.count : c.rows.length);
  // every word as typed, first (FTS4 ANDs them): when that fills the page, the word parts and the long tail
  // of partial matches (`model*` matches thousands) need not be scored
  // (not when a typed word is one the index does not have: a typo or a compound, whose meaning is in the terms)
  const words = understood.typed.slice(0, 8);
  // (and not when the query means more than it says: `ffn` must reach FeedForward, not only the docs that say ffn)
  let found: Selection | Candidates = words.length && !understood.widened ? candidates(words, true) : { rows: [], info: () => new Uint32Array(0) };
  // one word that names or begins names (`FrozenBatchNorm2d`, `AnnotatedC`): those names are the answer; the
  // word's parts would only add the thousands of rows that mention `norm` or `model`
  const enough = words.length === 1 ? count(found) > 0 : count(found) >= offset + limit;
  const anded = enough;
  if (!enough) found = candidates(terms, false);
  // (a model named needs two words typed: the model, and the part of it)
  const named: Models = understood.typed.length > 1 ? modelsOf(db, understood.typed, engine) : new Map();
  const ranker = rankerOf(understood, q.text, named);
  const wanted = (offset + limit) * 4;
  let head: Scored[];
  // answered from memory: the engine's documents, whose facts it keeps
  const held = engine && 'count' in found ? engine : undefined;
  if (held && 'count' in found) {
    const sel = found;
    const factsKept = engineFacts.get(held) ?? engineFacts.set(held, new Array(held.size)).get(held)!;
    head = leadingSelected(held, sel, understood, ranker, anded, wanted, (d) => (factsKept[d] ??= factsOf(sel.row(d))));
  } else {
    const { rows } = found as Candidates;
    const asked: (RowFacts | undefined)[] = [];
    head = leadingResults(found as Candidates, understood, ranker, anded, wanted, (k) => (asked[k] ??= factsOf(rows[k])));
  }
  // diversity among the leading results: another copy of a name already listed, or a subclass of it, moves down
  const seenNames = new Set<string>();
  for (const s of head) {
    const name = String(s.r.name);
    const bases = basesOf(s.r.bases).map((x) => x.split('.').pop() ?? x);
    if (seenNames.has(name) || bases.some((x) => seenNames.has(x))) s.score *= 0.75;
    seenNames.add(name);
  }
  head.sort(order);
  // copies of one block take one entry, shown as the group's original, at the best rank any copy reached
  const grouped = q.group === false ? head : collapseGroups(head);
  const page = grouped.slice(offset, offset + limit);
  if (page.length === 0) return [];
  // a copy whose own name is the query is shown as itself, not as its group's original (Conv3dNormActivation)
  const shown = (p: (typeof page)[number]): number =>
    q.group === false || p.r.dup_lex === null || String(p.r.name).toLowerCase() === q.text.trim().toLowerCase() ? Number(p.r.id) : Number(p.r.dup_lex);
  const full = new Map(db.allKept(`${SELECT} WHERE c.id IN (${page.map(() => '?').join(',')})`, page.map(shown)).map((r) => [Number(r.id), r]));
  const groups = page.map((p) => p.r.dup_lex).filter((g): g is SqlValue => g !== null);
  const copies = new Map(
    held
      ? groups.map((g) => [Number(g), held.copies(Number(g))] as const)
      : groups.length
        ? db
            .all(
              `SELECT dup_lex, count(*) AS n, count(DISTINCT repo_id) AS repos FROM classes WHERE is_block = 1 AND dup_lex IN (${groups.map(() => '?').join(',')}) GROUP BY dup_lex`,
              groups,
            )
            .map((r) => [Number(r.dup_lex), { count: Number(r.n), repos: Number(r.repos) }])
        : [],
  );
  // (a row the database does not hold, named by a database or a search snapshot someone else wrote, is left out)
  return page.flatMap((p) => {
    const row = full.get(shown(p));
    if (!row) return [];
    const hit = hitOf(row, p.score);
    const c = p.r.dup_lex === null ? undefined : copies.get(Number(p.r.dup_lex));
    if (c && c.count > 1) hit.copies = c;
    return [hit];
  });
}

/** A class row's bases (a JSON list of names as the indexer writes it; anything else, none). */
function basesOf(raw: SqlValue): string[] {
  try {
    const bases = JSON.parse(String(raw)) as unknown;
    return Array.isArray(bases) ? bases.map(String) : [];
  } catch {
    return [];
  }
}

function collapseGroups<T extends { r: Record<string, SqlValue> }>(sorted: T[]): T[] {
  const seen = new Set<number>();
  return sorted.filter((s) => {
    if (s.r.dup_lex === null || s.r.dup_lex === undefined) return true;
    const g = Number(s.r.dup_lex);
    if (seen.has(g)) return false;
    seen.add(g);
    return true;
  });
}

/**
 * One search over several indexes (a team's, a group's, one's own): each answers the query, and their answers are
 * merged by score, each hit naming its index. Scores are BM25 within each index, so a block ranks as it would in its
 * own; the same target in two indexes is listed once, from the first index given.
 */
export function searchMany(indexes: { label: string; db: IndexDb }[], q: SearchQuery): SearchHit[] {
  const { limit } = pageOf(q);
  const seen = new Set<string>();
  const all = indexes.flatMap(({ label, db }, i) => searchBlocks(db, { ...q, limit, offset: 0 }).map((h) => ({ ...h, index: label, order: i })));
  all.sort((a, b) => b.score - a.score || a.order - b.order);
  const out: SearchHit[] = [];
  for (const { order: _order, ...h } of all) {
    if (seen.has(h.target)) continue;
    seen.add(h.target);
    out.push(h);
    if (out.length >= limit) break;
  }
  return out;
}
