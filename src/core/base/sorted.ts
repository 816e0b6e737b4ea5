/** Searches in sorted arrays. */

/** The first index of `sorted` whose value is not below `key` (its length when none). */
export function lowerBound<T extends string | number>(sorted: ArrayLike<T>, key: T): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
