/**
 * Duplicate groups among the blocks of the index, at three levels: exact (same normalised text), lexical
 * (MinHash of token shingles, Jaccard >= 0.90 by default) and structural (MinHash of node-type shingles, >= 0.90).
 * Candidate pairs come from locality-sensitive hashing (32 bands of 4 rows over 128 values), then the signatures are compared.
 * Each group's original is chosen by repository priority, then age (the repository indexed first, then the
 * definition indexed first); every member records the original's id in dup_exact, dup_lex, dup_struct.
 */
import type { IndexDb } from '../store/database';
import type { SqlValue } from 'sql.js';
import { MINHASH_SIZE, similarity } from '../parse/fingerprint';

export interface DedupOptions {
  /** Jaccard threshold for lexical near-duplicates (0..1). */
  lexical?: number;
  /** Jaccard threshold for structural duplicates (0..1). */
  structural?: number;
}

export const DEFAULT_THRESHOLD = 0.9;
const BANDS = 32;
const ROWS = MINHASH_SIZE / BANDS;
/** Below this many tokens a definition is too small for near-duplicate evidence (only exact copies count). */
const MIN_TOKENS = 20;

interface Row {
  id: number;
  exact: string | null;
  lex: number[] | null;
  struct: number[] | null;
  tokens: number;
}

function sigOf(v: SqlValue): number[] | null {
  if (!(v instanceof Uint8Array) || v.length !== MINHASH_SIZE * 2) return null;
  const copy = new Uint8Array(v.length);
  copy.set(v);
  return Array.from(new Uint16Array(copy.buffer));
}

class UnionFind {
  private readonly parent = new Map<number, number>();
  find(x: number): number {
    let p = this.parent.get(x) ?? x;
    if (p !== x) {
      p = this.find(p);
      this.parent.set(x, p);
    }
    return p;
  }
  /** `order` ranks ids: the root of a merged set is the better-ranked one (the original). */
  union(a: number, b: number, order: Map<number, number>): void {
    const ra = this.find(a);
    const rb = this.find(b);
    if (ra === rb) return;
    if (order.get(ra)! <= order.get(rb)!) this.parent.set(rb, ra);
    else this.parent.set(ra, rb);
  }
}

/** Members of one LSH bucket that a new row is compared with: the first, best-ranked ones. A bucket shared by thousands
 * of rows (generated code, many forks) would otherwise make the comparisons quadratic. */
const BUCKET_CAP = 16;

/** Adds near-duplicates found by LSH over the signatures `pick` gives to `seed`, and returns it. Each row is compared
 * once with the rows before it that share a band with it (at most BUCKET_CAP of each bucket): linear in the rows. */
function nearGroups(rows: Row[], pick: (r: Row) => number[] | null, threshold: number, order: Map<number, number>, seed: UnionFind): UnionFind {
  const buckets = new Map<string, number[]>();
  const sigs = new Map<number, number[]>();
  // rows with the same signature compare alike with every other: the first stands for them all in the buckets, and
  // the others join its group (a similarity of 1 meets any threshold up to 1)
  const first = new Map<string, number>();
  const candidates = new Set<number>();
  for (const r of rows) {
    const sig = pick(r);
    if (!sig || r.tokens < MIN_TOKENS) continue;
    const whole = sig.join(',');
    const same = first.get(whole);
    if (same !== undefined) {
      if (threshold <= 1) seed.union(same, r.id, order);
      continue;
    }
    first.set(whole, r.id);
    sigs.set(r.id, sig);
    candidates.clear();
    for (let b = 0; b < BANDS; b++) {
      const key = `${b}:${sig.slice(b * ROWS, (b + 1) * ROWS).join(',')}`;
      const list = buckets.get(key);
      if (!list) {
        buckets.set(key, [r.id]);
        continue;
      }
      for (const id of list) candidates.add(id);
      if (list.length < BUCKET_CAP) list.push(r.id);
    }
    for (const id of candidates) {
      // already in one group: an edge inside a group changes neither the groups nor their originals
      if (seed.find(id) === seed.find(r.id)) continue;
      if (similarity(sigs.get(id)!, sig) >= threshold) seed.union(id, r.id, order);
    }
  }
  return seed;
}

/** Thresholds given once (`index --dup-lexical 0.8`) are kept in the index for later runs. */
export function groupDuplicates(db: IndexDb, given: DedupOptions = {}): { exact: number; lexical: number; structural: number; blocks: number } {
  const stored = JSON.parse(db.getMeta('dedup') ?? '{}') as DedupOptions;
  const options: DedupOptions = { lexical: given.lexical ?? stored.lexical, structural: given.structural ?? stored.structural };
  if (given.lexical !== undefined || given.structural !== undefined) db.setMeta('dedup', JSON.stringify(options));
  const rows: Row[] = db
    .all(
      `SELECT c.id, c.exact_hash, c.lex_sig, c.struct_sig, c.tokens FROM classes c JOIN repos r ON r.id = c.repo_id
       WHERE c.is_block = 1 ORDER BY r.priority DESC, r.id, c.id`,
    )
    .map((r) => ({
      id: Number(r.id),
      exact: r.exact_hash === null ? null : String(r.exact_hash),
      lex: sigOf(r.lex_sig),
      struct: sigOf(r.struct_sig),
      tokens: Number(r.tokens),
    }));
  const order = new Map(rows.map((r, i) => [r.id, i]));

  // exact: the same normalised text
  const exact = new UnionFind();
  const firstByHash = new Map<string, number>();
  for (const r of rows) {
    if (!r.exact) continue;
    const first = firstByHash.get(r.exact);
    if (first === undefined) firstByHash.set(r.exact, r.id);
    else exact.union(first, r.id, order);
  }
  // exact copies are also lexical and structural duplicates of each other
  const lexical = nearGroups(rows, (r) => r.lex, options.lexical ?? DEFAULT_THRESHOLD, order, cloneOf(exact, rows, order));
  const structural = nearGroups(rows, (r) => r.struct, options.structural ?? DEFAULT_THRESHOLD, order, cloneOf(lexical, rows, order));

  const counts = { exact: new Set<number>(), lexical: new Set<number>(), structural: new Set<number>() };
  db.transaction(() => {
    db.run('UPDATE classes SET dup_exact = NULL, dup_lex = NULL, dup_struct = NULL WHERE is_block = 0 AND dup_lex IS NOT NULL');
    for (const r of rows) {
      const e = exact.find(r.id);
      const l = lexical.find(r.id);
      const s = structural.find(r.id);
      counts.exact.add(e);
      counts.lexical.add(l);
      counts.structural.add(s);
      db.run('UPDATE classes SET dup_exact = ?, dup_lex = ?, dup_struct = ? WHERE id = ?', [e, l, s, r.id]);
    }
  });
  return { blocks: rows.length, exact: counts.exact.size, lexical: counts.lexical.size, structural: counts.structural.size };
}

function cloneOf(uf: UnionFind, rows: Row[], order: Map<number, number>): UnionFind {
  const copy = new UnionFind();
  for (const r of rows) {
    const root = uf.find(r.id);
    if (root !== r.id) copy.union(root, r.id, order);
  }
  return copy;
}
