/** The order of a file's definitions (what each needs at definition time first) and their names in it (collisions renamed). */
import type { ClosureResult, ExternalImport, UnitNode } from '../resolve/closure';
import { symbolKey } from '../resolve/closure';
import type { ModuleRecord } from '../resolve/moduleTable';

/** Iterative depth-first post-order from each start; a node is marked when entered, so cycles end there. */
function postOrder(starts: UnitNode[], depsOf: (n: UnitNode) => UnitNode[], visited: Set<string>, out: UnitNode[]): void {
  for (const start of starts) {
    if (visited.has(start.key)) continue;
    visited.add(start.key);
    const stack = [{ node: start, deps: depsOf(start), i: 0 }];
    while (stack.length) {
      const top = stack[stack.length - 1];
      if (top.i < top.deps.length) {
        const d = top.deps[top.i++];
        if (!visited.has(d.key)) {
          visited.add(d.key);
          stack.push({ node: d, deps: depsOf(d), i: 0 });
        }
      } else {
        out.push(top.node);
        stack.pop();
      }
    }
  }
}

const REGISTERS = /\.register_module\s*\(/;
const FORCED = /\.register_module\s*\([^)]*\bforce\s*=\s*True/;

/**
 * A registry's entries as the original's imports left them: a registration with `force=True` replaces the entry
 * another module's plain registration made earlier (mmcv's `@MODELS.register_module('Conv3d', force=True)` class
 * after conv.py's `MODELS.register_module('Conv3d', module=nn.Conv3d)`). Where the file holds a forced one, its
 * plain registration statements go first (each right after what it needs, never after a forced one: the key they
 * register is not a use of the class registered under it), so the forced one replaces them instead of being refused.
 */
function registrations(units: UnitNode[], text: ((n: UnitNode) => string) | undefined): { plain: Set<string>; forced: Set<string> } {
  const plain = new Set<string>();
  const forced = new Set<string>();
  if (!text) return { plain, forced };
  for (const n of units) {
    const t = text(n);
    if (FORCED.test(t)) forced.add(n.key);
    else if (REGISTERS.test(t) && !['class', 'function'].includes(n.rec.facts.units[n.unit].kind)) plain.add(n.key);
  }
  if (!forced.size) plain.clear();
  return { plain, forced };
}

/** Dependencies first (def-time ones strictly), the block last; source order where nothing constrains. `text`: a
 * unit's source (registrations keep the original's order by it). */
export function orderUnits(closure: ClosureResult, text?: (n: UnitNode) => string): UnitNode[] {
  const byOrder = (keys: Iterable<string>): UnitNode[] => [...keys].map((k) => closure.units.get(k)!).sort((a, b) => a.order - b.order);
  // 1. a readable order: depth-first over every dependency, from the block (then from what only an extra
  //    root such as a validation builder reaches)
  let readable: UnitNode[] = [];
  const { graph } = closure;
  postOrder([closure.root, ...byOrder(closure.units.keys())], (n) => byOrder(graph.outNeighbors(n.key)), new Set(), readable);
  const { plain, forced } = registrations(readable, text);
  if (plain.size) readable = [...readable.filter((n) => plain.has(n.key)), ...readable.filter((n) => !plain.has(n.key))];
  // 2. a valid order: before each unit, everything it needs at definition time, and what the functions and classes
  //    it uses then need when they run (`ACT = get_activation("gelu")` runs get_activation, which reads ACT2FN)
  const out: UnitNode[] = [];
  const runs = (n: UnitNode): boolean => {
    const kind = n.rec.facts.units[n.unit].kind;
    return kind === 'function' || kind === 'class';
  };
  const runNeeds = new Map<string, string[]>();
  const whenRun = (start: UnitNode): string[] => {
    const known = runNeeds.get(start.key);
    if (known) return known;
    const seen = new Set<string>([start.key]);
    const stack = [start.key];
    while (stack.length) {
      for (const next of graph.outNeighbors(stack.pop()!)) {
        if (seen.has(next)) continue;
        seen.add(next);
        if (runs(closure.units.get(next)!)) stack.push(next);
      }
    }
    seen.delete(start.key);
    const list = [...seen];
    runNeeds.set(start.key, list);
    return list;
  };
  const defNeeds = (n: UnitNode): UnitNode[] => {
    const keys = new Set<string>();
    for (const e of graph.filterOutEdges(n.key, (_edge, attr) => attr.def)) {
      const t = graph.target(e);
      if (plain.has(n.key) && forced.has(t)) continue;
      keys.add(t);
      const target = closure.units.get(t)!;
      // a function used at definition time runs then (a decorator, a call in a class body or an assignment); a class
      // runs when a statement makes one, not when another class derives from it
      const kind = target.rec.facts.units[target.unit].kind;
      if (kind === 'function' || (kind === 'class' && !runs(n))) for (const k of whenRun(target)) if (k !== n.key) keys.add(k);
    }
    return byOrder(keys);
  };
  postOrder(readable, defNeeds, new Set(), out);
  return out;
}

function suffixOf(rec: ModuleRecord): string {
  const last = rec.module.split('.').pop() ?? 'mod';
  return last.replace(/^_+/, '') || 'mod';
}

/** Final names for every definition and import: the block keeps its name; collisions get a module suffix. */
export function assignNames(closure: ClosureResult, order: UnitNode[]): Map<string, string> {
  const names = new Map<string, string>();
  const taken = new Map<string, string>();
  const reserved = closure.builtinsUsed;
  const take = (key: string, desired: string, suffix: string): void => {
    if (names.has(key)) return;
    const free = (name: string): boolean =>
      (!taken.has(name) || taken.get(name) === key) && !reserved.has(name) && !(name === desired && closure.shadowed?.has(key));
    let name = desired;
    for (let n = 1; !free(name); n++) name = n === 1 ? `${desired}_${suffix}` : `${desired}_${suffix}${n}`;
    names.set(key, name);
    taken.set(name, key);
  };
  const root = closure.root;
  for (const b of root.rec.facts.units[root.unit].binds) {
    names.set(symbolKey(root.rec, b), b);
    taken.set(b, symbolKey(root.rec, b));
  }
  // `import torch` and `import torch.fx` both bind `torch` to the same module: one name, no rename
  const valueOf = (e: ExternalImport): string => (e.name !== undefined ? `${e.module}.${e.name}` : e.plainDotted ? e.module.split('.')[0] : e.module);
  const byValue = new Map<string, string>();
  for (const e of [...closure.externals.values()].sort((a, b) => a.key.localeCompare(b.key))) {
    const shared = byValue.get(`${valueOf(e)}|${e.bound}`);
    if (shared) {
      names.set(e.key, names.get(shared)!);
      continue;
    }
    take(e.key, e.bound, e.module.split('.')[0]);
    byValue.set(`${valueOf(e)}|${e.bound}`, e.key);
  }
  for (const node of order) {
    for (const b of node.rec.facts.units[node.unit].binds) take(symbolKey(node.rec, b), b, suffixOf(node.rec));
  }
  return names;
}
