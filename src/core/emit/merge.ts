/**
 * A line-based three-way merge (diff3): the user's edits (ours) and the new upstream (theirs), both against the
 * file as it was pulled (base). Where only one side changed a region, that side wins; where both changed it the
 * same way, once; otherwise a conflict, written with git's markers.
 */
import { diffArrays } from 'diff';

export interface MergeResult {
  text: string;
  conflicts: number;
  /** Regions only upstream changed (taken), and regions only the user changed (kept). */
  upstreamChanges: number;
  yourEdits: number;
}

/**
 * For each line of `a`, the index of the line of `b` it is matched with, or -1: the common lines of jsdiff's Myers
 * diff, whose cost grows with the size of the difference, not with the product of the lengths.
 */
function matches(a: string[], b: string[]): Int32Array {
  const match = new Int32Array(a.length).fill(-1);
  let i = 0;
  let j = 0;
  for (const part of diffArrays(a, b)) {
    const n = part.count ?? part.value.length;
    if (part.added) j += n;
    else if (part.removed) i += n;
    else for (let k = 0; k < n; k++) match[i++] = j++;
  }
  return match;
}

const same = (x: string[], y: string[]): boolean => x.length === y.length && x.every((l, i) => l === y[i]);

export function merge3(base: string, ours: string, theirs: string, labels = { ours: 'yours', theirs: 'upstream' }): MergeResult {
  const O = base.split('\n');
  const A = ours.split('\n');
  const B = theirs.split('\n');
  const ma = matches(O, A);
  const mb = matches(O, B);
  const out: string[] = [];
  let conflicts = 0;
  let upstreamChanges = 0;
  let yourEdits = 0;
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
    if (same(chunkA, chunkO)) {
      out.push(...chunkB);
      if (!same(chunkB, chunkO)) upstreamChanges++;
    } else if (same(chunkB, chunkO) || same(chunkA, chunkB)) {
      out.push(...chunkA);
      if (same(chunkB, chunkO)) yourEdits++;
      else upstreamChanges++;
    } else {
      conflicts++;
      out.push(`<<<<<<< ${labels.ours}`, ...chunkA, '=======', ...chunkB, `>>>>>>> ${labels.theirs}`);
    }
    o = next;
    a = endA;
    b = endB;
  }
  return { text: out.join('\n'), conflicts, upstreamChanges, yourEdits };
}
