/** BM25 as search ranks with it: the columns' weights (name, words, doc, signature, path, repo) and one term's part. */

/** Column weights for name, words, doc, signature, path, repo (classes_fts's order). */
export const WEIGHTS = [5, 3, 1, 0.6, 1.2, 0.8];
export const K1 = 1.2;
export const B = 0.75;

/** What `tf` hits of a phrase in column `col` (of `length` tokens, `average` over the index) add to BM25. */
export function bm25Term(col: number, tf: number, length: number, average: number, idf: number): number {
  const norm = tf + K1 * (1 - B + (B * length) / Math.max(average, 1));
  return WEIGHTS[col] * idf * ((tf * (K1 + 1)) / norm);
}
