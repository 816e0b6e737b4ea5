/**
 * Fingerprints of a definition for duplicate detection at three levels, computed from its syntax tree while the file
 * is parsed:
 * - exact: a hash of the token stream without comments, docstrings and formatting;
 * - lexical: a MinHash signature of the token shingles (near-duplicates: a renamed variable, an extra argument);
 * - structural: a MinHash signature of the shingles of node types, identifiers and literals abstracted (the same
 *   code shape under other names).
 */
import { createHash } from 'crypto';
import type { Node } from 'web-tree-sitter';

export const MINHASH_SIZE = 64;
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

/** A string statement (docstring or a bare string) carries no behaviour. */
function isDocString(node: Node): boolean {
  return node.type === 'expression_statement' && node.namedChildCount === 1 && node.namedChild(0)?.type === 'string';
}

/** Tokens and node types of `root` in source order, comments and docstrings left out. */
function streams(root: Node): { tokens: string[]; types: string[] } {
  const tokens: string[] = [];
  const types: string[] = [];
  const cursor = root.walk();
  let descend = true;
  for (;;) {
    const node = cursor.currentNode;
    if (descend) {
      if (node.type === 'comment' || isDocString(node)) {
        descend = false;
      } else if (node.childCount === 0 || node.type === 'string') {
        tokens.push(node.type === 'string' ? node.text : node.text || node.type);
        types.push(node.type);
        descend = false;
      } else {
        if (node.isNamed) types.push(node.type);
        if (cursor.gotoFirstChild()) continue;
        descend = false;
      }
    }
    if (cursor.gotoNextSibling()) {
      descend = true;
      continue;
    }
    if (!cursor.gotoParent() || cursor.currentNode.id === root.id) break;
  }
  cursor.delete();
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

const SEEDS = Array.from({ length: MINHASH_SIZE }, (_, i) => mix(0x9e3779b9 * (i + 1)));

export function minhash(items: string[], k: number): number[] {
  const sig = new Array<number>(MINHASH_SIZE).fill(0xffffffff);
  const n = Math.max(1, items.length - k + 1);
  for (let i = 0; i < n; i++) {
    const x = fnv(items.slice(i, i + k).join('\u0001'));
    for (let j = 0; j < MINHASH_SIZE; j++) {
      const v = mix(x ^ SEEDS[j]);
      if (v < sig[j]) sig[j] = v;
    }
  }
  return sig;
}

/** The share of equal positions: an estimate of the Jaccard similarity of the two shingle sets. */
export function similarity(a: number[], b: number[]): number {
  let same = 0;
  for (let i = 0; i < MINHASH_SIZE; i++) if (a[i] === b[i]) same++;
  return same / MINHASH_SIZE;
}

export function fingerprint(def: Node): Fingerprint {
  const { tokens, types } = streams(def);
  return {
    exact: createHash('sha1').update(tokens.join(' ')).digest('hex'),
    lex: minhash(tokens, LEX_SHINGLE),
    struct: minhash(types, STRUCT_SHINGLE),
    tokens: tokens.length,
  };
}
