/**
 * What the ranking reads of a block that does not depend on the query (search.ts scores with it; the in-memory
 * search, engine.ts, keeps it per document so that a bound on a score needs no row read).
 */
import type { SqlValue } from 'sql.js';
import { searchWords, splitIdentifier } from './words';

/** Words a researcher puts after a block's kind (`convnext block`): they want a block, not the whole model. */
export const BLOCK_WORDS = new Set(['block', 'blocks', 'layer', 'layers', 'unit', 'cell']);

/** A class name's own words, abbreviations expanded. */
export function nameWords(name: string): Set<string> {
  return new Set(searchWords(name).split(' '));
}

/** `nameWords`, kept: the same names come back query after query. */
const nameWordsCache = new Map<string, Set<string>>();
export function wordsOfName(name: string): Set<string> {
  let words = nameWordsCache.get(name);
  if (!words) {
    if (nameWordsCache.size >= 50_000) nameWordsCache.clear();
    nameWordsCache.set(name, (words = nameWords(name)));
  }
  return words;
}

export interface RowFacts {
  lower: string;
  /** The name's own words, abbreviations expanded. */
  words: Set<string>;
  /** The name split as written. */
  own: string[];
  blockWord: boolean;
  classifier: boolean;
  transforms: boolean;
  module: string;
  /** What the block scores whatever the query: how much it is used, the graph's prior, less for a private or
   * abstract class (`standing`). */
  standing: number;
}

/** A class row's standing (RowFacts): its uses, its prior from the index's graph, less when private or abstract. */
export function standing(r: Record<string, SqlValue>): number {
  let score = 0;
  // a private class (`_AdaptiveAvgPoolNd`) after its public ones
  if (String(r.name).startsWith('_')) score -= 3;
  score += 4 * Math.log1p(Number(r.uses));
  // the graph's prior, computed when indexing: subclassed, exported, or a variant of another block
  score += Number(r.prior ?? 0);
  if (Number(r.abstract) === 1) score -= 1;
  return score;
}

/** What a class row's name, signature and module say of its kind: 1, a block word in its name; 2, it takes
 * num_classes; 4, it is in a transforms module. */
export function kindOf(r: Record<string, SqlValue>): number {
  return (
    (splitIdentifier(String(r.name)).some((w) => BLOCK_WORDS.has(w)) ? 1 : 0) |
    (/\bnum_classes\b/.test(String(r.signature)) ? 2 : 0) |
    (/(^|\.)transforms?(\.|$)/.test(String(r.module)) ? 4 : 0)
  );
}

export function factsOf(r: Record<string, SqlValue>): RowFacts {
  const name = String(r.name);
  const kind = kindOf(r);
  return {
    lower: name.toLowerCase(),
    words: wordsOfName(name),
    own: splitIdentifier(name),
    blockWord: (kind & 1) !== 0,
    classifier: (kind & 2) !== 0,
    transforms: (kind & 4) !== 0,
    module: String(r.module),
    standing: standing(r),
  };
}
