/**
 * Fingerprints of a definition for duplicate detection at three levels, computed from its syntax tree while the file
 * is parsed:
 * - exact: a hash of the token stream without comments, docstrings and formatting;
 * - lexical: a MinHash signature of the token shingles (near-duplicates: a renamed variable, an extra argument);
 * - structural: a MinHash signature of the shingles of node types, identifiers and literals abstracted (the same
 *   code shape under other names).
 */
import { createHash } from 'crypto';
import type { SyntaxNode } from './syntax';

export const MINHASH_SIZE = 128;
const LEX_SHINGLE = 5;
const STRUCT_SHINGLE = 8;

export interface Fingerprint {
  /** sha1 of the normalised token stream. */
  exact: string;
  lex: number[];
  struct: number[];
  /** Tokens seen (small definitions make weak near-duplicate evidence). */
  tokens: number;
}

/** Tokens and node types of `def` in source order, comments and docstrings (string statements) left out. */
function streams(def: SyntaxNode, text: string): { tokens: string[]; types: string[] } {
  const tokens: string[] = [];
  const types: string[] = [];
  const visit = (node: SyntaxNode): void => {
    const type = node.type;
    if (type === 'comment') return;
    // a statement made of one string: a docstring or a bare string, no behaviour
    if (type === 'expression_statement' && node.children.length === 1 && node.children[0].type === 'string') return;
    if (type === 'string' || !node.children.length) {
      tokens.push(text.slice(node.startIndex, node.endIndex) || type);
      types.push(type);
      return;
    }
    if (node.isNamed) types.push(type);
    for (const c of node.children) visit(c);
  };
  visit(def);
  return { tokens, types };
}

/** FNV-1a, 32 bits. */
function fnv(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** murmur3's finaliser: a cheap, well-mixed permutation of 32-bit values. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const BIN_BITS = Math.log2(MINHASH_SIZE);
const EMPTY = 0xffffffff;

/** Odd: its powers are invertible modulo 2^32, so a shingle's polynomial hash can drop its first item. */
const ROLL = 0x2c1b3c6d;

/**
 * The MinHash signature of the k-shingles of `items`, by one-permutation hashing: each shingle is hashed once, its
 * top bits choose one of MINHASH_SIZE bins and each bin keeps its smallest remaining bits; bins no shingle reached
 * borrow from the next filled bin to the right (rotation densification), told apart by the distance. One pass over
 * the shingles instead of one per position, and a shingle's hash rolls on from the previous one (a polynomial in its
 * items' hashes, which drops the first item and takes the next: one step per shingle, not k), mixed before use.
 * Values are kept to 16 bits (b-bit MinHash: two agree by chance once in 65,536, which moves a Jaccard estimate by
 * nothing that matters, and halves what the index stores).
 */
export function minhash(items: string[], k: number): number[] {
  const bins = new Uint32Array(MINHASH_SIZE).fill(EMPTY);
  // items repeat (`self`, `.`, node types): each distinct one is hashed once
  const seen = new Map<string, number>();
  const hashes = new Int32Array(items.length);
  for (let i = 0; i < items.length; i++) {
    let v = seen.get(items[i]);
    if (v === undefined) seen.set(items[i], (v = mix(fnv(items[i])) | 0));
    hashes[i] = v;
  }
  const n = Math.max(1, items.length - k + 1);
  // ROLL^(k-1): the weight of a shingle's first item
  let first = 1;
  for (let t = 1; t < k; t++) first = Math.imul(first, ROLL);
  // the first shingle (all of the items when there are fewer than k), then each next one from it
  let h = 0;
  for (let t = 0; t < Math.min(k, hashes.length); t++) h = (Math.imul(h, ROLL) + hashes[t]) | 0;
  for (let i = 0; i < n; i++) {
    if (i) h = (Math.imul((h - Math.imul(hashes[i - 1], first)) | 0, ROLL) + hashes[i + k - 1]) | 0;
    const x = mix(h ^ 0x9747b28c);
    const bin = x >>> (32 - BIN_BITS);
    const rest = (x << BIN_BITS) >>> BIN_BITS;
    if (rest < bins[bin]) bins[bin] = rest;
  }
  const out = new Array<number>(MINHASH_SIZE);
  // right to left over the bins twice (they wrap around): `next` is the nearest filled position at or after j, so
  // each bin finds its donor in one step (a sparse signature looked up to MINHASH_SIZE bins for each)
  let next = -1;
  for (let j = 2 * MINHASH_SIZE - 1; j >= 0; j--) {
    if (bins[j % MINHASH_SIZE] !== EMPTY) next = j;
    if (j >= MINHASH_SIZE) continue;
    const d = next < 0 ? MINHASH_SIZE : next - j;
    const v = next < 0 ? 0 : bins[next % MINHASH_SIZE];
    out[j] = mix(v ^ Math.imul(d, 0x9e3779b9)) >>> 16;
  }
  return out;
}

/** The share of equal positions: an estimate of the Jaccard similarity of the two shingle sets. */
export function similarity(a: number[], b: number[]): number {
  let same = 0;
  for (let i = 0; i < MINHASH_SIZE; i++) if (a[i] === b[i]) same++;
  return same / MINHASH_SIZE;
}

/** `text`: the source the tree was parsed from (node positions index into it). */
export function fingerprint(def: SyntaxNode, text: string): Fingerprint {
  const { tokens, types } = streams(def, text);
  return {
    exact: createHash('sha1').update(tokens.join(' ')).digest('hex'),
    lex: minhash(tokens, LEX_SHINGLE),
    struct: minhash(types, STRUCT_SHINGLE),
    tokens: tokens.length,
  };
}
