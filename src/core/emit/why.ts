/**
 * Why is this here? The lines of a pulled file that are the block itself, the lines pulled in, and for the largest
 * definitions pulled in the chain of references that needs each (the shortest one from the block).
 */
import type { DependencyGraph } from './emit';

export interface Dependency {
  /** Names the definition binds in the file, and where it comes from. */
  names: string[];
  module: string;
  repo: string;
  lines: number;
  /** From the block to this definition: each step needs the next (names as in the file). */
  chain: string[];
}

export interface FileSizes {
  /** Lines of the block's own definition. */
  block: number;
  /** Lines of the definitions pulled in with it. */
  pulled: number;
  /** Lines of the whole file (header, imports and blank lines too). */
  total: number;
  /** The definitions pulled in, largest first. */
  largest: Dependency[];
}

/** `graph` as the emitter made it; the block is the definition of `blockName` in `blockModule`. */
export function fileSizes(graph: DependencyGraph, blockModule: string, blockName: string, code: string, limit = 10): FileSizes {
  const { nodes } = graph;
  const rootId = nodes.findIndex((d) => d.module === blockModule && d.names.includes(blockName));
  const label = (id: number): string => nodes[id].names[0] ?? `(a statement of ${nodes[id].module})`;
  // breadth first from the block: the first way each definition is reached is a shortest chain
  const next = new Map<number, number[]>();
  for (const e of graph.edges) {
    const list = next.get(e.from);
    if (list) list.push(e.to);
    else next.set(e.from, [e.to]);
  }
  const parent = new Map<number, number>();
  if (rootId >= 0) {
    parent.set(rootId, -1);
    const queue = [rootId];
    for (let i = 0; i < queue.length; i++) {
      for (const to of next.get(queue[i]) ?? []) {
        if (parent.has(to)) continue;
        parent.set(to, queue[i]);
        queue.push(to);
      }
    }
  }
  const chainOf = (id: number): string[] => {
    if (!parent.has(id)) return [label(id)];
    const out: string[] = [];
    for (let at = id; at >= 0; at = parent.get(at)!) out.unshift(label(at));
    return out;
  };
  const deps = nodes.filter((d) => d.id !== rootId).map((d) => ({ names: d.names, module: d.module, repo: d.repo, lines: d.lines, chain: chainOf(d.id) }));
  return {
    block: rootId >= 0 ? nodes[rootId].lines : 0,
    pulled: deps.reduce((n, d) => n + d.lines, 0),
    total: code.split('\n').length,
    largest: deps.sort((a, b) => b.lines - a.lines).slice(0, limit),
  };
}

export interface LineFigures {
  median: number;
  p90: number;
  max: number;
}

/** Median, 90th percentile (nearest rank) and largest of the pulled files' lines, or null when there are none. */
export function linesOf(items: { lines?: number }[]): LineFigures | null {
  const v = items.flatMap((i) => (i.lines ? [i.lines] : [])).sort((a, b) => a - b);
  if (!v.length) return null;
  const mid = v.length >> 1;
  const median = v.length % 2 ? v[mid] : Math.round((v[mid - 1] + v[mid]) / 2);
  return { median, p90: v[Math.ceil(0.9 * v.length) - 1], max: v[v.length - 1] };
}
