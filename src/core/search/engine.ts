/**
 * The index's full-text search held in memory: the candidates and the `matchinfo('pcnalx')` figures that
 * `classes_fts` (FTS4, porter tokenizer, external content `classes`) gives, from postings built once per state of the
 * index instead of SQLite reading every matching row's columns and matchinfo blob on every query. A word becomes the
 * term FTS4 indexed by SQLite's own porter tokenizer (`fts3tokenize`, in a private in-memory database), so both
 * answer the same: `test/unit/search/searchEngine.test.ts` compares them query by query.
 */
import type { Database, SqlValue } from 'sql.js';
import type { IndexDb, Row } from '../store/database';
import { loadSqlJs } from '../store/database';
import { popcount } from '../base/bits';
import { lowerBound } from '../base/sorted';
import { bm25Term } from './bm25';
import { kindOf, nameWords, standing } from './facts';
import { vocabularyOf } from './query';
import { splitIdentifier } from './words';

/** classes_fts's columns, in its order (matchinfo's column index). */
export const FTS_COLUMNS = ['name', 'words', 'doc', 'signature', 'path', 'repo'] as const;
const C = FTS_COLUMNS.length;

/** A token as the porter tokenizer cuts it: a run of ASCII letters, digits and `_`, and of any non-ASCII character. */
const TOKEN = /(?:[0-9A-Za-z_]|[^\p{ASCII}])+/gu;

/** What the ranking reads of each candidate (the FTS path's candidate query reads the same columns). */
export const RANKED = 'c.id, c.name, c.module, c.uses, c.prior, c.abstract, c.bases, c.dup_lex, c.signature';

/** One phrase of a query: a word (as typed) and whether it matches as a prefix (`norm*`). */
export interface Phrase {
  word: string;
  prefix: boolean;
}

/** The filters a query applies to its candidates (search.ts `filters`). */
export interface EngineFilter {
  kind: 'block' | 'abstract' | 'class';
  repo?: string;
  category?: string;
  validation?: string;
}

/**
 * The documents a query matches, as `SearchEngine.select` leaves them: what each hits is read from bitsets, and a
 * document's full `matchinfo` only when asked (`info`: one scratch array, valid until the next call).
 */
export interface Selection {
  /** How many documents matched; they, ascending (FTS4's order); and they as a bitset. */
  count: number;
  readonly docs: Int32Array;
  matched: Uint32Array;
  /** `matchinfo('pcnalx')` without a row's own figures: phrases, columns, documents, averages, totals, documents hit. */
  figures: Uint32Array;
  /** The documents phrase i hits in column `col`, a bitset (document d: bit d % 32 of word d / 32). */
  cell(i: number, col: number): Uint32Array;
  /** The most hits phrase i has in column `col` of any one document. */
  mostHits(i: number, col: number): number;
  /** Per document and column (d * columns + col), its tokens. */
  lengths: Uint32Array;
  /** The documents phrase i hits in any column, a bitset (document d: bit d % 32 of word d / 32). */
  phrase(i: number): Uint32Array;
  row(d: number): Row;
  info(d: number): Uint32Array;
  /**
   * Adds phrase i's BM25 (`bm25Term` of its hits per column, as `info` counts them, with the query's `idf` per phrase
   * and column) to each document's `out`, by ascending document and then column (the order `info` lists them in, so
   * that the sum over phrases is added as search.ts's `bm25` adds it): a posting read once.
   */
  addText(i: number, idf: Float64Array, out: Float64Array): void;
}

/** What a range of terms hits (`SearchEngine.hitsOf`). */
interface PhraseHits {
  bits: Uint32Array;
  total: Uint32Array;
  docsWith: Uint32Array;
  most: Uint32Array;
}

/** Stems words as SQLite's porter tokenizer does, each word once (a word's stem does not depend on its neighbours). */
export class Stemmer {
  private readonly known = new Map<string, string>();

  constructor(private readonly db: Database) {
    db.run('CREATE VIRTUAL TABLE temp.tok USING fts3tokenize(porter)');
  }

  private tokens(input: string): string[] {
    const out: string[] = [];
    const stmt = this.db.prepare('SELECT token FROM temp.tok WHERE input = ?');
    try {
      stmt.bind([input]);
      while (stmt.step()) out.push(String(stmt.get()[0]));
    } finally {
      stmt.free();
    }
    return out;
  }

  /** Stems every word of `words` not stemmed yet, many to one call. */
  learn(words: Iterable<string>): void {
    let batch: string[] = [];
    let size = 0;
    const flush = (): void => {
      if (!batch.length) return;
      const stems = this.tokens(batch.join(' '));
      if (stems.length === batch.length) batch.forEach((w, i) => this.known.set(w, stems[i]));
      else for (const w of batch) this.known.set(w, this.tokens(w)[0] ?? w);
      batch = [];
      size = 0;
    };
    for (const w of words) {
      if (this.known.has(w)) continue;
      batch.push(w);
      size += w.length + 1;
      if (size > 100_000) flush();
    }
    flush();
    // a cache of the words seen, not of every word ever: bounded
    if (this.known.size > 1_000_000) this.known.clear();
  }

  stem(word: string): string {
    let s = this.known.get(word);
    if (s === undefined) {
      this.learn([word]);
      s = this.known.get(word) ?? word;
    }
    return s;
  }
}

let stemmer: Promise<Stemmer> | undefined;
function theStemmer(): Promise<Stemmer> {
  stemmer ??= loadSqlJs().then((SQL) => new Stemmer(new SQL.Database()));
  return stemmer;
}

function validationStatus(raw: SqlValue): string | null {
  if (raw === null || raw === undefined) return null;
  try {
    const v = JSON.parse(String(raw)) as { status?: unknown };
    return v && typeof v === 'object' && typeof v.status === 'string' ? v.status : null;
  } catch {
    return null;
  }
}

const CHUNK = 2_000;

/** Per term and column (term * columns + column): the documents it is in there, its hits, the most in one. */
function termFigures(p: Postings): Derived['figures'] {
  const terms = p.ends.length;
  const termDocs = new Uint32Array(terms * C);
  const termHits = new Uint32Array(terms * C);
  const termMost = new Uint32Array(terms * C);
  for (let t = 0, e = 0; t < terms; t++) {
    for (; e < p.ends[t]; e++) {
      const cell = t * C + (p.at[e] & 7);
      termDocs[cell]++;
      termHits[cell] += p.counts[e];
      if (p.counts[e] > termMost[cell]) termMost[cell] = p.counts[e];
    }
  }
  return { termDocs, termHits, termMost };
}

/** The postings by document: document d's entries are `starts[d]` to `starts[d + 1]`, a term and count * 8 + column. */
function byDocument(p: Postings, n: number): Derived['byDocument'] {
  const starts = new Uint32Array(n + 1);
  for (let e = 0; e < p.at.length; e++) starts[(p.at[e] >> 3) + 1]++;
  for (let d = 0; d < n; d++) starts[d + 1] += starts[d];
  const fill = starts.slice(0, n);
  const termOf = new Uint32Array(starts[n]);
  const cellOf = new Uint32Array(starts[n]);
  for (let t = 0, e = 0; t < p.ends.length; t++) {
    for (; e < p.ends[t]; e++) {
      const k = fill[p.at[e] >> 3]++;
      termOf[k] = t;
      cellOf[k] = p.counts[e] * 8 + (p.at[e] & 7);
    }
  }
  return { starts, termOf, cellOf };
}

/** Where each document's lower-case name begins in `names` (each between newlines, a newline first). */
function nameStartsOf(names: string, n: number): Int32Array {
  const starts = new Int32Array(n);
  let at = 1;
  for (let d = 0; d < n; d++) {
    starts[d] = at;
    at = names.indexOf('\n', at) + 1;
  }
  return starts;
}

/**
 * Documents by key in one array: the k-th key's documents are `docs` from `ends[k - 1]` (0 for the first) to
 * `ends[k]`; the keys sorted (found by halving, no map of a hundred thousand entries to make).
 */
export class KeyedDocs<K extends string | number> {
  constructor(
    readonly keys: ArrayLike<K>,
    readonly docs: Int32Array,
    readonly ends: Uint32Array,
  ) {}

  static of<K extends string | number>(map: Map<K, number[]>): KeyedDocs<K> {
    const keys = [...map.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const ends = new Uint32Array(keys.length);
    let total = 0;
    keys.forEach((k, i) => (ends[i] = total += map.get(k)!.length));
    const docs = new Int32Array(total);
    keys.forEach((k, i) => docs.set(map.get(k)!, i ? ends[i - 1] : 0));
    return new KeyedDocs(typeof keys[0] === 'number' ? (Float64Array.from(keys as number[]) as unknown as ArrayLike<K>) : keys, docs, ends);
  }

  get size(): number {
    return this.ends.length;
  }

  /** The documents of the k-th key. */
  at(k: number): Int32Array {
    return this.docs.subarray(k ? this.ends[k - 1] : 0, this.ends[k]);
  }

  get(key: K): Int32Array | undefined {
    const k = lowerBound(this.keys, key);
    return k < this.keys.length && this.keys[k] === key ? this.at(k) : undefined;
  }
}

/** Every term's postings in one array: term t's entries (document * 8 + column) and their counts run from `ends[t - 1]`
 * (0 for the first) to `ends[t]`. */
export interface Postings {
  at: Int32Array;
  counts: Uint32Array;
  ends: Uint32Array;
}

/** What the engine derives from its parts (a snapshot keeps it too, and gives it back checked). */
export interface Derived {
  figures: { termDocs: Uint32Array; termHits: Uint32Array; termMost: Uint32Array };
  byDocument: { starts: Uint32Array; termOf: Uint32Array; cellOf: Uint32Array };
  nameStarts: Int32Array;
}

/** Three letters in a row, as one number (each a UTF-16 code unit). */
function three(text: string, k: number): number {
  return (text.charCodeAt(k) * 0x10000 + text.charCodeAt(k + 1)) * 0x10000 + text.charCodeAt(k + 2);
}

/** The documents by each three letters in a row of their names (`three`), ascending. */
function trigramsOf(names: string[]): KeyedDocs<number> {
  const threes = new Map<number, number[]>();
  names.forEach((x, d) => {
    for (let k = 0; k + 3 <= x.length; k++) {
      const key = three(x, k);
      let docs = threes.get(key);
      if (!docs) threes.set(key, (docs = []));
      if (docs[docs.length - 1] !== d) docs.push(d);
    }
  });
  return KeyedDocs.of(threes);
}

/** The terms' postings, in the terms' order, in one array. */
function flatPostings(perTerm: { at: number[]; n: number[] }[]): Postings {
  const ends = new Uint32Array(perTerm.length);
  let total = 0;
  perTerm.forEach((p, t) => (ends[t] = total += p.at.length));
  const at = new Int32Array(total);
  const counts = new Uint32Array(total);
  perTerm.forEach((p, t) => {
    at.set(p.at, t ? ends[t - 1] : 0);
    counts.set(p.n, t ? ends[t - 1] : 0);
  });
  return { at, counts, ends };
}

/** The rows of the documents, read when asked (from the index's rows, or from a snapshot's columns). */
export interface RowTable {
  readonly length: number;
  at(d: number): Row;
}

/**
 * What an in-memory search is made of, as `SearchEngine.build` reads it from the index or `snapshot.ts` from the file
 * beside it; the rest (the postings by document, the terms' figures, where each name begins) is derived from these.
 */
export interface EngineParts {
  /** Per document (ascending class id, as FTS4 returns its rows): the columns the ranking reads. */
  rows: RowTable;
  isBlock: Uint8Array;
  abstract: Uint8Array;
  validation: (string | null | undefined)[];
  category: string[];
  repo: string[];
  /** Tokens per document and column (matchinfo's `l`). */
  lengths: Uint32Array;
  /** Average tokens per column over all documents, rounded as FTS4 does (matchinfo's `a`). */
  average: Uint32Array;
  /** The terms, sorted (prefixes are ranges of them), and their postings. */
  terms: string[];
  postings: Postings;
  /** Per lexical-duplicate group: its blocks and their repositories. */
  groups: Map<number, { count: number; repos: number }>;
  /** Per document, what the ranking reads without the query: its standing (facts.ts), and its kind (1: a block word
   * in its name, 2: it takes num_classes, 4: in a transforms module). */
  standings: Float64Array;
  kinds: Uint8Array;
  /** The documents by the words of their names (facts.ts `nameWords`). */
  named: KeyedDocs<string>;
  /** The documents by the words of their names as written, no abbreviation expanded (facts.ts `own`). */
  owned: KeyedDocs<string>;
  /** Every name in lower case, each between newlines. */
  names: string;
  /** The documents by each three letters in a row of their lower-case names (`three`), ascending. */
  trigrams: KeyedDocs<number>;
  /** The words of the blocks' names (query.ts `vocabularyOf`), sorted. */
  vocabulary: string[];
  /** The modules that define the classes, each once. */
  modules: string[];
  /** The blocks' largest class id and their count (what search.ts's vocabulary was read up to). */
  blockIds: { max: number; count: number };
}

export class SearchEngine {
  private readonly table: RowTable;
  private readonly isBlock: Uint8Array;
  private readonly validation: (string | null | undefined)[];
  private readonly category: string[];
  private readonly repo: string[];
  private readonly lengths: Uint32Array;
  private readonly average: Uint32Array;
  private readonly terms: string[];
  private readonly postings: Postings;
  /** Per term and column (term * columns + column): the documents it is in there, its hits, the most in one. */
  private readonly termDocs: Uint32Array;
  private readonly termHits: Uint32Array;
  private readonly termMost: Uint32Array;
  /** The postings again, by document: document d's entries are `starts[d]` to `starts[d + 1]`, each a term and its
   * column and count (count * 8 + column). */
  private readonly starts: Uint32Array;
  private readonly termOf: Uint32Array;
  private readonly cellOf: Uint32Array;
  private readonly groups: Map<number, { count: number; repos: number }>;
  readonly standings: Float64Array;
  readonly kinds: Uint8Array;
  private readonly named: KeyedDocs<string>;
  private readonly owned: KeyedDocs<string>;
  private readonly names: string;
  /** Where each document's lower-case name begins in `names`. */
  private readonly nameStarts: Int32Array;
  private readonly trigrams: KeyedDocs<number>;
  /** The parts it was made of, and what it derived from them (what a snapshot writes). */
  readonly parts: EngineParts;
  readonly derived: Derived;

  constructor(
    private readonly stemmer: Stemmer,
    parts: EngineParts,
    derived?: Derived,
  ) {
    this.parts = parts;
    ({
      rows: this.table,
      isBlock: this.isBlock,
      validation: this.validation,
      category: this.category,
      repo: this.repo,
      lengths: this.lengths,
      average: this.average,
      terms: this.terms,
      postings: this.postings,
      groups: this.groups,
      standings: this.standings,
      kinds: this.kinds,
      named: this.named,
      owned: this.owned,
      names: this.names,
      trigrams: this.trigrams,
    } = parts);
    const n = parts.rows.length;
    this.derived = derived ?? {
      figures: termFigures(this.postings),
      byDocument: byDocument(this.postings, n),
      nameStarts: nameStartsOf(this.names, n),
    };
    ({ termDocs: this.termDocs, termHits: this.termHits, termMost: this.termMost } = this.derived.figures);
    ({ starts: this.starts, termOf: this.termOf, cellOf: this.cellOf } = this.derived.byDocument);
    this.nameStarts = this.derived.nameStarts;
    const words = (n + 31) >>> 5;
    this.blocks = new Uint32Array(words);
    this.abstracts = new Uint32Array(words);
    this.isBlock.forEach((b, d) => {
      if (!b) return;
      this.blocks[d >>> 5] |= 1 << (d & 31);
      if (parts.abstract[d]) this.abstracts[d >>> 5] |= 1 << (d & 31);
    });
  }

  /** Stems words as the index's tokenizer does (a snapshot's engine gets one of its own). */
  static async stemmer(): Promise<Stemmer> {
    return theStemmer();
  }

  /** Document d's row. */
  row(d: number): Row {
    return this.table.at(d);
  }

  /** The words of the blocks' names (query.ts `vocabularyOf`), sorted. */
  get vocabulary(): string[] {
    return this.parts.vocabulary;
  }

  /** The modules that define the classes, each once. */
  get modules(): string[] {
    return this.parts.modules;
  }

  /** The blocks' largest class id and their count. */
  get blockIds(): { max: number; count: number } {
    return this.parts.blockIds;
  }

  /** The blocks, and the abstract blocks, as bitsets over the documents (the filters of kind). */
  private readonly blocks: Uint32Array;
  private readonly abstracts: Uint32Array;

  /** Scratch of the last query: the matched documents, as a bitset and listed (`select`). */
  private bits = new Uint32Array(0);
  private matched = new Int32Array(0);
  /** Scratch of a phrase of several terms: its hits per document and column (document * 8 + column), zero between. */
  private sums = new Uint32Array(0);

  /** How many blocks a lexical-duplicate group has, in how many repositories (search.ts's `copies`). */
  copies(group: number): { count: number; repos: number } {
    return this.groups.get(group) ?? { count: 0, repos: 0 };
  }

  get size(): number {
    return this.table.length;
  }

  /** The documents whose names have `word` among their words (facts.ts `nameWords`). */
  namedWith(word: string): Int32Array | undefined {
    return this.named.get(word);
  }

  /** The documents whose names, split as written, have `word` among their words (facts.ts `own`). */
  ownedWith(word: string): Int32Array | undefined {
    return this.owned.get(word);
  }

  /** The words of names as written (`ownedWith`'s keys) that begin with `prefix`. */
  ownWordsFrom(prefix: string): string[] {
    const words = this.owned.keys;
    const out: string[] = [];
    for (let k = lowerBound(words, prefix); k < words.length && words[k].startsWith(prefix); k++) out.push(words[k]);
    return out;
  }

  /** The words of names that the most documents have, most first (at most `count`). */
  commonNameWords(count: number): string[] {
    const { keys, ends } = this.named;
    const docs = (k: number): number => ends[k] - (k ? ends[k - 1] : 0);
    return Array.from({ length: keys.length }, (_, k) => k)
      .sort((a, b) => docs(b) - docs(a) || (keys[a] < keys[b] ? -1 : 1))
      .slice(0, count)
      .map((k) => keys[k]);
  }

  /** The documents whose lower-case names contain `text`, each once, ascending. */
  namesContaining(text: string): number[] {
    const out: number[] = [];
    if (!text || text.includes('\n')) return out;
    if (text.length >= 3) {
      // the documents of the text's rarest three letters, each name read
      let rarest: Int32Array | undefined;
      for (let k = 0; k + 3 <= text.length; k++) {
        const docs = this.trigrams.get(three(text, k));
        if (!docs) return out;
        if (!rarest || docs.length < rarest.length) rarest = docs;
      }
      for (const d of rarest!) if (this.lowerName(d).includes(text)) out.push(d);
      return out;
    }
    for (let at = this.names.indexOf(text); at >= 0;) {
      const d = lowerBound(this.nameStarts, at + 1) - 1;
      out.push(d);
      // the next name
      at = this.names.indexOf(text, this.nameEnd(d) + 1);
    }
    return out;
  }

  /** The documents whose lower-case name is `lower`, ascending. */
  namedExactly(lower: string): number[] {
    const out: number[] = [];
    if (!lower || lower.includes('\n')) return out;
    const line = `\n${lower}\n`;
    for (let at = this.names.indexOf(line); at >= 0; at = this.names.indexOf(line, at + line.length - 1)) out.push(lowerBound(this.nameStarts, at + 1));
    return out;
  }

  private nameEnd(d: number): number {
    return d + 1 < this.nameStarts.length ? this.nameStarts[d + 1] - 1 : this.names.length - 1;
  }

  /** Document d's name in lower case. */
  lowerName(d: number): string {
    return this.names.slice(this.nameStarts[d], this.nameEnd(d));
  }

  /** Reads the index (every class: FTS4's statistics count them all), `CHUNK` rows at a time with `pause` between. */
  static async build(db: IndexDb, pause: () => Promise<void> = () => Promise.resolve()): Promise<SearchEngine> {
    const stem = await theStemmer();
    const rows: Row[] = [];
    const isBlock: number[] = [];
    const validation: (string | null | undefined)[] = [];
    const category: string[] = [];
    const repo: string[] = [];
    const lengths: number[] = [];
    const totals = new Array<number>(C).fill(0);
    const acc = new Map<string, { at: number[]; n: number[] }>();
    const groups = new Map<number, { count: number; repos: Set<number> }>();
    const standings: number[] = [];
    const kinds: number[] = [];
    const named = new Map<string, number[]>();
    const owned = new Map<string, number[]>();
    const names: string[] = [];
    // a column's terms and counts (one map, emptied for each column)
    const seen = new Map<string, number>();
    let last = -Infinity;
    for (;;) {
      const chunk = db.all(
        `SELECT ${RANKED}, c.words, c.doc, c.path, c.repo, c.repo_id, c.is_block, c.category, c.validation FROM classes c WHERE c.id > ? ORDER BY c.id LIMIT ${CHUNK}`,
        [last === -Infinity ? -1 : last],
      );
      if (!chunk.length) break;
      const tokens = chunk.map((r) => FTS_COLUMNS.map((col) => String(r[col] ?? '').match(TOKEN) ?? []));
      stem.learn(
        (function* () {
          for (const cols of tokens) for (const t of cols) yield* t;
        })(),
      );
      chunk.forEach((r, k) => {
        const doc = rows.length;
        rows.push({
          id: r.id,
          name: r.name,
          module: r.module,
          uses: r.uses,
          prior: r.prior,
          abstract: r.abstract,
          bases: r.bases,
          dup_lex: r.dup_lex,
          signature: r.signature,
        });
        isBlock.push(Number(r.is_block) === 1 ? 1 : 0);
        const name = String(r.name);
        names.push(name.toLowerCase());
        standings.push(standing(r));
        kinds.push(kindOf(r));
        for (const w of nameWords(name)) (named.get(w) ?? named.set(w, []).get(w)!).push(doc);
        for (const w of new Set(splitIdentifier(name))) (owned.get(w) ?? owned.set(w, []).get(w)!).push(doc);
        if (Number(r.is_block) === 1 && r.dup_lex !== null && r.dup_lex !== undefined) {
          const g = groups.get(Number(r.dup_lex)) ?? { count: 0, repos: new Set<number>() };
          g.count++;
          g.repos.add(Number(r.repo_id));
          groups.set(Number(r.dup_lex), g);
        }
        const raw = r.validation;
        validation.push(raw === null || raw === undefined ? null : (validationStatus(raw) ?? undefined));
        category.push(String(r.category));
        repo.push(String(r.repo));
        for (let col = 0; col < C; col++) {
          const words = tokens[k][col];
          lengths.push(words.length);
          totals[col] += words.length;
          seen.clear();
          for (const w of words) {
            const s = stem.stem(w);
            seen.set(s, (seen.get(s) ?? 0) + 1);
          }
          for (const [s, n] of seen) {
            let p = acc.get(s);
            if (!p) acc.set(s, (p = { at: [], n: [] }));
            p.at.push(doc * 8 + col);
            p.n.push(n);
          }
        }
      });
      last = Number(chunk[chunk.length - 1].id);
      await pause();
    }
    const n = rows.length;
    // FTS4's `a`: the column's tokens over the documents, rounded to the nearest integer
    const average = new Uint32Array(totals.map((t) => (n ? Math.floor((t + Math.floor(n / 2)) / n) : 0)));
    const terms = [...acc.keys()].sort();
    const blockNames = rows.filter((_, d) => isBlock[d] === 1).map((r) => String(r.name));
    return new SearchEngine(stem, {
      rows: { length: n, at: (d) => rows[d] },
      isBlock: Uint8Array.from(isBlock),
      abstract: Uint8Array.from(rows, (r) => (Number(r.abstract) === 1 ? 1 : 0)),
      validation,
      category,
      repo,
      lengths: Uint32Array.from(lengths),
      average,
      terms,
      postings: flatPostings(terms.map((t) => acc.get(t)!)),
      groups: new Map([...groups].map(([g, { count, repos }]) => [g, { count, repos: repos.size }])),
      standings: Float64Array.from(standings),
      kinds: Uint8Array.from(kinds),
      named: KeyedDocs.of(named),
      owned: KeyedDocs.of(owned),
      names: `\n${names.map((x) => `${x}\n`).join('')}`,
      trigrams: trigramsOf(names),
      vocabulary: vocabularyOf(blockNames).sorted,
      modules: [...new Set(rows.map((r) => String(r.module)))],
      blockIds: { max: rows.reduce((m, r, d) => (isBlock[d] ? Math.max(m, Number(r.id)) : m), 0), count: blockNames.length },
    });
  }

  /** Whether document `d` passes the query's filters (the SQL of search.ts `filters`, read from the same columns). */
  private keeps(d: number, f: EngineFilter): boolean {
    if (f.kind !== 'class' && !this.isBlock[d]) return false;
    if (f.kind === 'abstract' && !this.parts.abstract[d]) return false;
    if (f.repo !== undefined && this.repo[d] !== f.repo) return false;
    if (f.category !== undefined && this.category[d] !== f.category) return false;
    if (f.validation !== undefined) {
      const v = this.validation[d];
      if (f.validation === 'none') return v === null;
      return typeof v === 'string' && v === f.validation;
    }
    return true;
  }

  /** The range of `terms` a phrase matches; undefined when the phrase is not one token (FTS4 would make a phrase of it). */
  private range(p: Phrase): [number, number] | undefined {
    const cut = p.word.match(TOKEN);
    if (!cut || cut.length !== 1 || cut[0] !== p.word) return undefined;
    const s = this.stemmer.stem(p.word);
    const lo = lowerBound(this.terms, s);
    if (!p.prefix) return this.terms[lo] === s ? [lo, lo + 1] : [lo, lo];
    // the terms that begin with s: up to the first term not below s with its last letter's successor
    const last = s.charCodeAt(s.length - 1);
    if (last === 0xffff) {
      let end = lo;
      while (end < this.terms.length && this.terms[end].startsWith(s)) end++;
      return [lo, end];
    }
    return [lo, lowerBound(this.terms, s.slice(0, -1) + String.fromCharCode(last + 1))];
  }

  /**
   * What a range of terms hits: per column a bitset of the documents (then one of any column), and per column
   * matchinfo's figures (hits, documents hit) and the most hits in one document. Kept for the ranges asked most
   * recently (the same words come back query after query, and each answer reads every posting of its terms).
   */
  private hitsOf([lo, hi]: [number, number]): PhraseHits {
    const key = lo * 0x100000000 + hi;
    const kept = this.phraseHits.get(key);
    if (kept) {
      this.phraseHits.delete(key);
      this.phraseHits.set(key, kept);
      return kept;
    }
    const n = this.table.length;
    const W = (n + 31) >>> 5;
    const bits = new Uint32Array((C + 1) * W);
    const total = new Uint32Array(C);
    const docsWith = new Uint32Array(C);
    const most = new Uint32Array(C);
    const { at, counts, ends } = this.postings;
    for (let t = lo; t < hi; t++) {
      for (let e = t ? ends[t - 1] : 0; e < ends[t]; e++) {
        const d = at[e] >> 3;
        bits[(at[e] & 7) * W + (d >>> 5)] |= 1 << (d & 31);
      }
      for (let col = 0; col < C; col++) {
        total[col] += this.termHits[t * C + col];
        if (this.termMost[t * C + col] > most[col]) most[col] = this.termMost[t * C + col];
        docsWith[col] += this.termDocs[t * C + col];
      }
    }
    if (hi - lo > 1) {
      // a document two terms of the range hit is counted once, with the hits of both
      for (let col = 0; col < C; col++) {
        let count = 0;
        for (let w = col * W; w < (col + 1) * W; w++) count += popcount(bits[w]);
        docsWith[col] = count;
        most[col] = 0;
      }
      if (this.sums.length < n * 8) this.sums = new Uint32Array(n * 8);
      const sums = this.sums;
      for (let t = lo; t < hi; t++) {
        for (let e = t ? ends[t - 1] : 0; e < ends[t]; e++) {
          const v = (sums[at[e]] += counts[e]);
          if (v > most[at[e] & 7]) most[at[e] & 7] = v;
        }
      }
      for (let t = lo; t < hi; t++) for (let e = t ? ends[t - 1] : 0; e < ends[t]; e++) sums[at[e]] = 0;
    }
    for (let col = 0; col < C; col++) {
      if (!most[col]) continue;
      for (let w = 0; w < W; w++) bits[C * W + w] |= bits[col * W + w];
    }
    const hits = { bits, total, docsWith, most };
    this.phraseHits.set(key, hits);
    // at most about 16 MB of them
    while (this.phraseHits.size > Math.max(8, Math.floor((16 << 20) / bits.byteLength))) this.phraseHits.delete(this.phraseHits.keys().next().value!);
    return hits;
  }

  /** The ranges' hits kept (`hitsOf`), the most recently asked last. */
  private readonly phraseHits = new Map<number, PhraseHits>();

  /**
   * The documents that match the phrases (all of them when `and`, any otherwise) and pass the filters: a `Selection`
   * that reads each document's `matchinfo('pcnalx')` only when asked; undefined when a phrase is not a single token
   * (the caller asks FTS4). The selection is valid until the next call of `select` or `match`.
   */
  select(phrases: Phrase[], and: boolean, filter: EngineFilter): Selection | undefined {
    const ranges = phrases.map((p) => this.range(p));
    if (ranges.some((r) => r === undefined)) return undefined;
    const n = this.table.length;
    const W = (n + 31) >>> 5;
    const p = phrases.length;
    const cells = p * C;
    const hits = ranges.map((r) => this.hitsOf(r!));
    const total = new Uint32Array(cells);
    const docsWith = new Uint32Array(cells);
    const most = new Uint32Array(cells);
    hits.forEach((h, i) => {
      total.set(h.total, i * C);
      docsWith.set(h.docsWith, i * C);
      most.set(h.most, i * C);
    });
    if (this.bits.length < W) this.bits = new Uint32Array(W);
    const bits = this.bits;
    // the matched: every phrase's documents (and) or any (or), of the kind asked
    const kind = filter.kind === 'class' ? undefined : filter.kind === 'abstract' ? this.abstracts : this.blocks;
    for (let w = 0; w < W; w++) {
      let m = and ? -1 : 0;
      for (let i = 0; i < p; i++) m = and ? m & hits[i].bits[C * W + w] : m | hits[i].bits[C * W + w];
      bits[w] = kind ? m & kind[w] : m;
    }
    let count = 0;
    const checked = filter.repo !== undefined || filter.category !== undefined || filter.validation !== undefined;
    for (let w = 0; w < W; w++) {
      if (checked)
        for (let m = bits[w]; m; m &= m - 1) {
          const d = (w << 5) + (31 - Math.clz32(m & -m));
          if (!this.keeps(d, filter)) bits[w] &= ~(1 << (d & 31));
        }
      count += popcount(bits[w]);
    }
    // listed when asked (the bitset answers most questions)
    let listed: Int32Array | undefined;
    const list = (): Int32Array => {
      if (listed) return listed;
      if (this.matched.length < count) this.matched = new Int32Array(n);
      let k = 0;
      for (let w = 0; w < W; w++) for (let m = bits[w]; m; m &= m - 1) this.matched[k++] = (w << 5) + (31 - Math.clz32(m & -m));
      return (listed = this.matched.subarray(0, count));
    };
    const { at, counts, ends } = this.postings;
    const info = new Uint32Array(3 + 2 * C + 3 * cells);
    info[0] = p;
    info[1] = C;
    info[2] = n;
    info.set(this.average, 3);
    for (let i = 0; i < cells; i++) {
      info[3 + 2 * C + 3 * i + 1] = total[i];
      info[3 + 2 * C + 3 * i + 2] = docsWith[i];
    }
    return {
      count,
      get docs() {
        return list();
      },
      matched: bits.subarray(0, W),
      figures: info,
      cell: (i, col) => hits[i].bits.subarray(col * W, (col + 1) * W),
      lengths: this.lengths,
      mostHits: (i, col) => most[i * C + col],
      phrase: (i) => hits[i].bits.subarray(C * W, (C + 1) * W),
      row: (d) => this.table.at(d),
      addText: (i, idf, out) => {
        const [lo, hi] = ranges[i]!;
        const { average, lengths } = this;
        if (hi - lo === 1) {
          // one term: its postings are by document and column already, each once
          for (let e = lo ? ends[lo - 1] : 0; e < ends[lo]; e++) {
            const d = at[e] >> 3;
            const col = at[e] & 7;
            out[d] += bm25Term(col, counts[e], lengths[d * C + col], average[col], idf[i * C + col]);
          }
          return;
        }
        if (this.sums.length < n * 8) this.sums = new Uint32Array(n * 8);
        const sums = this.sums;
        for (let t = lo; t < hi; t++) for (let e = t ? ends[t - 1] : 0; e < ends[t]; e++) sums[at[e]] += counts[e];
        const any = hits[i].bits.subarray(C * W, (C + 1) * W);
        for (let w = 0; w < W; w++)
          for (let m = any[w]; m; m &= m - 1) {
            const d = (w << 5) + (31 - Math.clz32(m & -m));
            for (let col = 0; col < C; col++) {
              const k = d * 8 + col;
              if (!sums[k]) continue;
              out[d] += bm25Term(col, sums[k], lengths[d * C + col], average[col], idf[i * C + col]);
              sums[k] = 0;
            }
          }
      },
      info: (d) => {
        for (let col = 0; col < C; col++) info[3 + C + col] = this.lengths[d * C + col];
        for (let i = 0; i < cells; i++) info[3 + 2 * C + 3 * i] = 0;
        // the document's own terms, each counted for every phrase whose range holds it
        for (let e = this.starts[d]; e < this.starts[d + 1]; e++) {
          const t = this.termOf[e];
          for (let i = 0; i < p; i++) {
            const [lo, hi] = ranges[i]!;
            if (t >= lo && t < hi) info[3 + 2 * C + 3 * (i * C + (this.cellOf[e] & 7))] += this.cellOf[e] >>> 3;
          }
        }
        return info;
      },
    };
  }

  /** `select`, read out: the matched documents' rows in FTS4's order, and `info(k)` of the k-th (one scratch array). */
  match(phrases: Phrase[], and: boolean, filter: EngineFilter): { rows: Row[]; docs: Int32Array; info: (k: number) => Uint32Array } | undefined {
    const selection = this.select(phrases, and, filter);
    if (!selection) return undefined;
    const { docs } = selection;
    return { rows: Array.from(docs, (d) => this.table.at(d)), docs, info: (k) => selection.info(docs[k]) };
  }
}
