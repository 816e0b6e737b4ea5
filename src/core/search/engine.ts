/**
 * The index's full-text search held in memory: the candidates and the `matchinfo('pcnalx')` figures that
 * `classes_fts` (FTS4, porter tokenizer, external content `classes`) gives, from postings built once per state of the
 * index instead of SQLite reading every matching row's columns and matchinfo blob on every query. A word becomes the
 * term FTS4 indexed by SQLite's own porter tokenizer (`fts3tokenize`, in a private in-memory database), so both
 * answer the same: `test/unit/searchEngine.test.ts` compares them query by query.
 */
import type { Database, SqlValue } from 'sql.js';
import type { IndexDb, Row } from '../store/database';
import { loadSqlJs } from '../store/database';
import { lowerBound } from '../base/sorted';

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

/** Stems words as SQLite's porter tokenizer does, each word once (a word's stem does not depend on its neighbours). */
class Stemmer {
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

export class SearchEngine {
  private constructor(
    private readonly stemmer: Stemmer,
    /** Per document (ascending class id, as FTS4 returns its rows): the columns the ranking reads. */
    readonly rows: Row[],
    private readonly isBlock: Uint8Array,
    private readonly validation: (string | null | undefined)[],
    private readonly category: string[],
    private readonly repo: string[],
    /** Tokens per document and column (matchinfo's `l`). */
    private readonly lengths: Uint32Array,
    /** Average tokens per column over all documents, rounded as FTS4 does (matchinfo's `a`). */
    private readonly average: Uint32Array,
    /** The terms, sorted (prefixes are ranges of them), and per term its postings: document * 8 + column, and the count. */
    private readonly terms: string[],
    private readonly postings: Int32Array[],
    private readonly counts: Uint32Array[],
    /** Per lexical-duplicate group: its blocks and their repositories. */
    private readonly groups: Map<number, { count: number; repos: number }>,
  ) {
    this.slot = new Int32Array(rows.length).fill(-1);
  }

  /** Scratch of the last query: each document it touched, and its slot in `hits` (-1: untouched). */
  private readonly slot: Int32Array;
  private touched: number[] = [];
  private hits = new Uint32Array(1 << 12);

  /** How many blocks a lexical-duplicate group has, in how many repositories (search.ts's `copies`). */
  copies(group: number): { count: number; repos: number } {
    return this.groups.get(group) ?? { count: 0, repos: 0 };
  }

  get size(): number {
    return this.rows.length;
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
    const postings = terms.map((t) => Int32Array.from(acc.get(t)!.at));
    const counts = terms.map((t) => Uint32Array.from(acc.get(t)!.n));
    const copies = new Map([...groups].map(([g, { count, repos }]) => [g, { count, repos: repos.size }]));
    return new SearchEngine(
      stem,
      rows,
      Uint8Array.from(isBlock),
      validation,
      category,
      repo,
      Uint32Array.from(lengths),
      average,
      terms,
      postings,
      counts,
      copies,
    );
  }

  /** Whether document `d` passes the query's filters (the SQL of search.ts `filters`, read from the same columns). */
  private keeps(d: number, f: EngineFilter): boolean {
    if (f.kind !== 'class' && !this.isBlock[d]) return false;
    if (f.kind === 'abstract' && Number(this.rows[d].abstract) !== 1) return false;
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
    let end = lo;
    while (end < this.terms.length && this.terms[end].startsWith(s)) end++;
    return [lo, end];
  }

  /**
   * The documents that match the phrases (all of them when `and`, any otherwise) and pass the filters, in FTS4's
   * order (`docs`: their indexes in `rows`), each with its `matchinfo('pcnalx')` (`info(k)`: one scratch array, valid until the next call of `info` or
   * `match`); undefined
   * when a phrase is not a single token (the caller asks FTS4).
   */
  match(phrases: Phrase[], and: boolean, filter: EngineFilter): { rows: Row[]; docs: Int32Array; info: (k: number) => Uint32Array } | undefined {
    const ranges = phrases.map((p) => this.range(p));
    if (ranges.some((r) => r === undefined)) return undefined;
    // the last query's answer is read no more
    for (const d of this.touched) this.slot[d] = -1;
    const touched: number[] = (this.touched = []);
    const p = phrases.length;
    const width = p * C;
    const total = new Uint32Array(width);
    const docsWith = new Uint32Array(width);
    const slot = this.slot;
    let hits = this.hits;
    for (let i = 0; i < p; i++) {
      const [lo, hi] = ranges[i]!;
      const phrase = i * C;
      for (let t = lo; t < hi; t++) {
        const at = this.postings[t];
        const n = this.counts[t];
        for (let e = 0; e < at.length; e++) {
          const d = at[e] >> 3;
          let s = slot[d];
          if (s < 0) {
            s = slot[d] = touched.length;
            touched.push(d);
            if ((s + 1) * width > hits.length) {
              const grown = new Uint32Array(Math.max(hits.length * 2, (s + 1) * width));
              grown.set(hits.subarray(0, s * width));
              hits = this.hits = grown;
            }
            for (let z = s * width; z < (s + 1) * width; z++) hits[z] = 0;
          }
          const cell = phrase + (at[e] & 7);
          const x = s * width + cell;
          if (hits[x] === 0) docsWith[cell]++;
          hits[x] += n[e];
          total[cell] += n[e];
        }
      }
    }
    const matched: number[] = [];
    for (const d of touched) {
      const s = this.slot[d];
      let all = true;
      for (let i = 0; i < p && all; i++) {
        let any = false;
        for (let col = 0; col < C; col++) if (this.hits[s * width + i * C + col]) any = true;
        all = any;
      }
      if ((!and || all) && this.keeps(d, filter)) matched.push(d);
    }
    const chosen = Int32Array.from(matched).sort();
    const info = new Uint32Array(3 + 2 * C + 3 * width);
    info[0] = p;
    info[1] = C;
    info[2] = this.rows.length;
    info.set(this.average, 3);
    for (let i = 0; i < width; i++) {
      info[3 + 2 * C + 3 * i + 1] = total[i];
      info[3 + 2 * C + 3 * i + 2] = docsWith[i];
    }
    return {
      rows: Array.from(chosen, (d) => this.rows[d]),
      docs: chosen,
      info: (k: number): Uint32Array => {
        const d = chosen[k];
        const at = this.slot[d] * width;
        for (let col = 0; col < C; col++) info[3 + C + col] = this.lengths[d * C + col];
        for (let i = 0; i < width; i++) info[3 + 2 * C + 3 * i] = this.hits[at + i];
        return info;
      },
    };
  }
}
