/**
 * Block search: FTS4 finds candidates (sql.js has no FTS5), ranking is BM25 over `matchinfo` in JS,
 * with exact and prefix name matches first. Filters by repository, category, kind and validation state.
 */
import type { IndexDb } from '../index/database';
import type { SqlValue } from 'sql.js';
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
  validation: string | null;
  score: number;
}

/** Column weights for name, words, doc, signature, path, repo. */
const WEIGHTS = [5, 3, 1, 0.6, 1.2, 0.8];
const K1 = 1.2;
const B = 0.75;

function ftsTerms(text: string): string[] {
  const terms = new Set<string>();
  for (const raw of text.split(/\s+/)) {
    const w = raw.replace(/[^A-Za-z0-9_]/g, '');
    if (!w) continue;
    terms.add(w.toLowerCase());
    for (const part of splitIdentifier(w)) terms.add(part);
  }
  return [...terms].filter((t) => t.length > 0).slice(0, 16);
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

/** How many query phrases match somewhere in the row: rows that match more words come first. */
function coverage(info: Uint32Array): number {
  const p = info[0];
  const c = info[1];
  const x = info.subarray(3 + 2 * c);
  let n = 0;
  for (let i = 0; i < p; i++) {
    for (let j = 0; j < c; j++) {
      if (x[3 * (i * c + j)]) {
        n++;
        break;
      }
    }
  }
  return n;
}

function toUint32(blob: SqlValue): Uint32Array {
  const bytes = blob as Uint8Array;
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  return new Uint32Array(copy.buffer, 0, bytes.length >> 2);
}

const SELECT = `SELECT c.id, c.name, c.module, c.line, c.end_line, c.category, c.abstract, c.is_block, c.signature, c.doc,
  c.validation, c.repo, f.path AS file_path FROM classes c JOIN files f ON f.id = c.file_id`;

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
    signature: String(r.signature),
    doc: String(r.doc).slice(0, 300),
    validation: r.validation === null ? null : String(r.validation),
    score: Math.round(score * 1000) / 1000,
  };
}

export function searchBlocks(db: IndexDb, q: SearchQuery): SearchHit[] {
  const limit = Math.max(1, Math.min(q.limit ?? 20, 1000));
  const offset = Math.max(0, q.offset ?? 0);
  const f = filters(q);
  const terms = ftsTerms(q.text);
  if (terms.length === 0) {
    const where = f.sql.length ? `WHERE ${f.sql.join(' AND ')}` : '';
    return db
      .all(`${SELECT} ${where} ORDER BY c.repo, c.module, c.name LIMIT ? OFFSET ?`, [...f.params, limit, offset])
      .map((r) => hitOf(r, 0));
  }
  const match = terms.map((t) => `${t}*`).join(' OR ');
  const where = ['classes_fts MATCH ?', ...f.sql].join(' AND ');
  const rows = db.all(
    `SELECT c.id, c.name, c.module, c.line, c.end_line, c.category, c.abstract, c.is_block, c.signature, c.doc, c.validation, c.repo,
       c.uses, c.bases, f.path AS file_path, matchinfo(classes_fts, 'pcnalx') AS info
     FROM classes_fts JOIN classes c ON c.id = classes_fts.docid JOIN files f ON f.id = c.file_id WHERE ${where}`,
    [match, ...f.params],
  );
  const query = q.text.trim().toLowerCase().replace(/\s+/g, '');
  const queryWords = new Set(ftsTerms(q.text));
  const scored = rows.map((r) => {
    const info = toUint32(r.info);
    let score = bm25(info);
    const name = String(r.name).toLowerCase();
    if (name === query) score += 1000;
    else if (name.startsWith(query)) score += 200 + 100 / name.length;
    else if (name.includes(query)) score += 50;
    // every query word in the name's own words
    const nameWords = new Set(searchWords(String(r.name)).split(' '));
    score += [...queryWords].filter((w) => nameWords.has(w)).length * 5;
    score += 4 * Math.log1p(Number(r.uses));
    if (Number(r.abstract) === 1) score -= 1;
    return { r, score, covered: coverage(info) };
  });
  const order = (a: (typeof scored)[number], b: (typeof scored)[number]): number =>
    b.covered - a.covered || b.score - a.score || String(a.r.name).localeCompare(String(b.r.name));
  scored.sort(order);
  // diversity: another copy of a name already listed, or a subclass of it, moves down
  const seenNames = new Set<string>();
  for (const s of scored) {
    const name = String(s.r.name);
    const bases = (JSON.parse(String(s.r.bases)) as string[]).map((b) => b.split('.').pop() ?? b);
    if (seenNames.has(name) || bases.some((b) => seenNames.has(b))) s.score *= 0.75;
    seenNames.add(name);
  }
  scored.sort(order);
  return scored.slice(offset, offset + limit).map(({ r, score }) => hitOf(r, score));
}

/** Blocks whose name is exactly `name`, for target lookup and duplicate listing. */
export function blocksNamed(db: IndexDb, name: string): SearchHit[] {
  return db.all(`${SELECT} WHERE c.name = ? ORDER BY c.repo, c.module`, [name]).map((r) => hitOf(r, 0));
}
