/**
 * A line-based three-way merge (diff3): the user's edits (ours) and the new upstream (theirs), both against the
 * file as it was pulled (base). Where only one side changed a region, that side wins; where both changed it the
 * same way, once; otherwise a conflict, written with git's markers.
 */

export interface MergeResult {
  text: string;
  conflicts: number;
}

/** For each line of `a`, the index of the line of `b` it is matched with in a longest common subsequence, or -1. */
function lcsMatches(a: string[], b: string[]): Int32Array {
  const n = a.length;
  const m = b.length;
  // suffix lengths, row by row (n+1) x (m+1)
  const width = m + 1;
  const table = new Uint32Array((n + 1) * width);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      table[i * width + j] = a[i] === b[j] ? table[(i + 1) * width + j + 1] + 1 : Math.max(table[(i + 1) * width + j], table[i * width + j + 1]);
    }
  }
  const match = new Int32Array(n).fill(-1);
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      match[i] = j;
      i++;
      j++;
    } else if (table[(i + 1) * width + j] >= table[i * width + j + 1]) i++;
    else j++;
  }
  return match;
}

const same = (x: string[], y: string[]): boolean => x.length === y.length && x.every((l, i) => l === y[i]);

export function merge3(base: string, ours: string, theirs: string, labels = { ours: 'yours', theirs: 'upstream' }): MergeResult {
  const O = base.split('\n');
  const A = ours.split('\n');
  const B = theirs.split('\n');
  const ma = lcsMatches(O, A);
  const mb = lcsMatches(O, B);
  const out: string[] = [];
  let conflicts = 0;
  let o = 0;
  let a = 0;
  let b = 0;
  while (o < O.length || a < A.length || b < B.length) {
    // a stable line: the same base line, next in both sides
    if (o < O.length && ma[o] === a && mb[o] === b) {
      out.push(O[o]);
      o++;
      a++;
      b++;
      continue;
    }
    // the next base line both sides still hold, after where each side is now: the end of this unstable region
    let next = o;
    while (next < O.length && !(ma[next] >= a && mb[next] >= b)) next++;
    const endA = next < O.length ? ma[next] : A.length;
    const endB = next < O.length ? mb[next] : B.length;
    const chunkO = O.slice(o, next);
    const chunkA = A.slice(a, endA);
    const chunkB = B.slice(b, endB);
    if (same(chunkA, chunkO)) out.push(...chunkB);
    else if (same(chunkB, chunkO) || same(chunkA, chunkB)) out.push(...chunkA);
    else {
      conflicts++;
      out.push(`<<<<<<< ${labels.ours}`, ...chunkA, '=======', ...chunkB, `>>>>>>> ${labels.theirs}`);
    }
    o = next;
    a = endA;
    b = endB;
  }
  return { text: out.join('\n'), conflicts };
}
