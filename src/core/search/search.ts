/**
 * Block search: FTS4 finds candidates (sql.js has no FTS5), ranking is BM25 over `matchinfo` in JS,
 * with exact and prefix name matches first. Filters by repository, category, kind and validation state.
 */
import type { IndexDb } from '../store/database';
import type { SqlValue } from 'sql.js';
import { understand, vocabularyOf } from './query';
import type { UnderstoodQuery, Vocabulary } from './query';
import { searchWords, splitIdentifier } from './words';

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
}

/** Column weights for name, words, doc, signature, path, repo. */
const WEIGHTS = [5, 3, 1, 0.6, 1.2, 0.8];
const K1 = 1.2;
const B = 0.75;

/** The index's vocabulary, kept per database until its blocks change; `maxId` and `count` of the blocks it read. */
const vocabularies = new WeakMap<IndexDb, { key: string; v: Vocabulary; maxId: number; count: number }>();
function vocabulary(db: IndexDb): Vocabulary {
  // every write to the index goes through this connection: its change count says whether the blocks may differ
  const key = String(db.all('SELECT total_changes() AS n')[0]?.n);
  const kept = vocabularies.get(db);
  if (kept?.key === key) return kept.v;
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

/** BM25 summed over phrases and weighted columns, from matchinfo('pcnalx'). */
function bm25(info: Uint32Array): number {
  const p = info[0];
  const c = info[1];
  const n = info[2];
  const avg = info.subarray(3, 3 + c);
  const len = info.subarray(3 + c, 3 + 2 * c);
  const x = info.subarray(3 + 2 * c);
  let score = 0;
  for (let i = 0; i < p; i++) {
    for (let j = 0; j < c; j++) {
      const base = 3 * (i * c + j);
      const tf = x[base];
      if (!tf) continue;
      const df = x[base + 2];
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      const norm = tf + K1 * (1 - B + (B * len[j]) / Math.max(avg[j], 1));
      score += WEIGHTS[j] * idf * ((tf * (K1 + 1)) / norm);
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
  const x = info.subarray(3 + 2 * c);
  const matched = new Set<number>();
  for (let i = 0; i < p; i++) {
    for (let j = 0; j < c; j++) {
      if (x[3 * (i * c + j)]) {
        matched.add(origins?.[i] ?? i);
        break;
      }
    }
  }
  return matched.size;
}

/** Whether two words are one (`norm` for normalization, `excite` for excitation). */
function sameWord(a: string, b: string): boolean {
  if (a === b) return true;
  if (Math.min(a.length, b.length) >= 4 && (a.startsWith(b) || b.startsWith(a))) return true;
  let k = 0;
  while (k < a.length && a[k] === b[k]) k++;
  return k >= 5;
}

/** Words a researcher puts after a block's kind (`convnext block`): they want a block, not the whole model. */
const BLOCK_WORDS = new Set(['block', 'blocks', 'layer', 'layers', 'unit', 'cell']);

/** Words of queries for data transforms: without one, a class of a `transforms` module ranks below blocks. */
const TRANSFORM_WORDS = /^(transforms?|augment\w*|crop|flip|jitter|resize|rotation|erasing|normalize|blur|grayscale)$/;

/** A class name's own words (abbreviations expanded), kept: the same names come back query after query. */
const nameWordsCache = new Map<string, Set<string>>();
function wordsOfName(name: string): Set<string> {
  let words = nameWordsCache.get(name);
  if (!words) {
    if (nameWordsCache.size >= 50_000) nameWordsCache.clear();
    nameWordsCache.set(name, (words = new Set(searchWords(name).split(' '))));
  }
  return words;
}

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

export function searchBlocks(db: IndexDb, q: SearchQuery): SearchHit[] {
  const limit = Math.max(1, Math.min(q.limit ?? 20, 1000));
  const offset = Math.max(0, q.offset ?? 0);
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
  // score on the narrow columns only; the wide ones are read for the page of results
  const candidates = (match: string): Record<string, SqlValue>[] =>
    db.all(
      `SELECT c.id, c.name, c.module, c.uses, c.prior, c.abstract, c.bases, c.dup_lex, c.signature, matchinfo(classes_fts, 'pcnalx') AS info
       FROM classes_fts JOIN classes c ON c.id = classes_fts.docid WHERE ${where}`,
      [match, ...f.params],
    );
  // every word as typed, first (FTS4 ANDs them): when that fills the page, the word parts and the long tail
  // of partial matches (`model*` matches thousands) need not be scored
  // (not when a typed word is one the index does not have: a typo or a compound, whose meaning is in the terms)
  const words = understood.typed.slice(0, 8);
  // (and not when the query means more than it says: `ffn` must reach FeedForward, not only the docs that say ffn)
  let rows = words.length && !understood.widened ? candidates(words.map(pattern).join(' ')) : [];
  // one word that names or begins names (`FrozenBatchNorm2d`, `AnnotatedC`): those names are the answer; the
  // word's parts would only add the thousands of rows that mention `norm` or `model`
  const enough = words.length === 1 ? rows.length > 0 : rows.length >= offset + limit;
  const anded = enough;
  if (!enough) rows = candidates(terms.map(pattern).join(' OR '));
  const query = q.text
    .trim()
    .toLowerCase()
    .replace(/[\s\-_]+/g, '');
  const queryWords = new Set(terms);
  const wantsBlock = understood.typed.some((w) => BLOCK_WORDS.has(w));
  const wantsTransform = understood.typed.some((w) => TRANSFORM_WORDS.test(w));
  const scored = rows.map((r) => {
    const info = toUint32(r.info);
    let score = bm25(info);
    const name = String(r.name).toLowerCase();
    if (name === query) score += 1000;
    // (a name that begins with two letters typed is no sign: `bn` begins BNReLU2d, and means batch norm)
    else if (query.length >= 3 && name.startsWith(query)) score += 200 + 100 / name.length;
    else if (query.length >= 3 && name.includes(query)) score += 50;
    // every query word in the name's own words (abbreviations expanded)
    const nameWords = wordsOfName(String(r.name));
    for (const w of queryWords) if (nameWords.has(w)) score += understood.loose.has(w) ? 2 : 5;
    // an acronym whose meaning is the name (`fpn`: FeaturePyramidNetwork, `vit`: VisionTransformer)
    const own = splitIdentifier(String(r.name));
    for (const meaning of understood.meanings) if (meaning.length && meaning.every((m) => own.some((w) => sameWord(w, m)))) score += 100;
    if (wantsBlock) {
      if (own.some((w) => BLOCK_WORDS.has(w))) score += 30;
      // a whole classifier (it takes num_classes) is not the block asked for
      if (/\bnum_classes\b/.test(String(r.signature))) score -= 30;
    }
    if (!wantsTransform && /(^|\.)transforms?(\.|$)/.test(String(r.module))) score -= 10;
    // a private class (`_AdaptiveAvgPoolNd`) after its public ones
    if (String(r.name).startsWith('_')) score -= 3;
    score += 4 * Math.log1p(Number(r.uses));
    // the graph's prior, computed when indexing: subclassed, exported, or a variant of another block
    score += Number(r.prior ?? 0);
    if (Number(r.abstract) === 1) score -= 1;
    let covered = coverage(info, anded ? undefined : understood.origins);
    // the initials of the words typed are the name (`atrous spatial pyramid pooling`: ASPP)
    for (const a of understood.initials) if (own.includes(a)) score += 20;
    if (understood.acronym && own.includes(understood.acronym)) {
      covered = understood.typed.length;
      score += own.length === 1 ? 100 : 30;
    }
    return { r, score, covered };
  });
  const order = (a: (typeof scored)[number], b: (typeof scored)[number]): number =>
    b.covered - a.covered || b.score - a.score || String(a.r.name).localeCompare(String(b.r.name));
  scored.sort(order);
  // diversity among the leading results: another copy of a name already listed, or a subclass of it, moves down
  const head = scored.slice(0, (offset + limit) * 4);
  const seenNames = new Set<string>();
  for (const s of head) {
    const name = String(s.r.name);
    const bases = (JSON.parse(String(s.r.bases)) as string[]).map((x) => x.split('.').pop() ?? x);
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
  const full = new Map(db.all(`${SELECT} WHERE c.id IN (${page.map(() => '?').join(',')})`, page.map(shown)).map((r) => [Number(r.id), r]));
  const groups = page.map((p) => p.r.dup_lex).filter((g): g is SqlValue => g !== null);
  const copies = new Map(
    groups.length
      ? db
          .all(
            `SELECT dup_lex, count(*) AS n, count(DISTINCT repo_id) AS repos FROM classes WHERE is_block = 1 AND dup_lex IN (${groups.map(() => '?').join(',')}) GROUP BY dup_lex`,
            groups,
          )
          .map((r) => [Number(r.dup_lex), { count: Number(r.n), repos: Number(r.repos) }])
      : [],
  );
  return page.map((p) => {
    const hit = hitOf(full.get(shown(p))!, p.score);
    const c = p.r.dup_lex === null ? undefined : copies.get(Number(p.r.dup_lex));
    if (c && c.count > 1) hit.copies = c;
    return hit;
  });
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
  const limit = Math.max(1, Math.min(q.limit ?? 20, 1000));
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
