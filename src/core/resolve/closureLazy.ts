/**
 * Module-level statements the original runs only when a function imports their module. A module the block's own
 * modules import at module level (transitively) runs when the file does; one imported only inside a function
 * (`def is_sparse_conv(m): from .sparse_conv import SparseConvolution`), and what it imports in turn, runs when that
 * function does. Its statements that do work (`ext_module = load_ext('_ext', [...])`) wait in the pulled file too: each
 * is written inside a function that runs it once (emit.ts), called where the original's function imports its module.
 * Its definitions stay at module level (defining a class or function runs none of its code). The package `__init__`
 * above a module is not counted as run: the copy is one file, and the judge imports an original whose package fails
 * without it (loading.import_original).
 */
import type { ImportFact } from '../parse/types';
import type { ModuleRecord, ModuleTable } from './moduleTable';
import type { ClosureContext, ClosureResult } from './closureTypes';

/** Statement kinds that do work at import and may wait (definitions and imports stay where they are). */
const WAITING_KINDS = new Set(['assign', 'expr', 'compound', 'other']);

/** The function that runs a waiting statement of `rec` starting at `line`. */
export function lazyRunner(rec: ModuleRecord, line: number): string {
  return `_nnrag_import_${rec.module.replace(/\W/g, '_')}_${line}`;
}

/** The indexed modules an import statement of `rec` runs: the module it names and, for `from M import x`, submodule x. */
export function modulesImported(table: ModuleTable, rec: ModuleRecord, f: ImportFact): ModuleRecord[] {
  const abs = table.absoluteModule(rec, f.level, f.module);
  const found = [table.lookup(abs, rec.repoId), f.kind === 'from' && f.name ? table.lookup(`${abs}.${f.name}`, rec.repoId) : undefined];
  return found.filter((m): m is ModuleRecord => !!m);
}

/** The inlined modules a module imports at module level (what runs when it is imported). */
function importedAtModuleLevel(table: ModuleTable, rec: ModuleRecord, inlined: (m: ModuleRecord) => boolean): ModuleRecord[] {
  const out: ModuleRecord[] = [];
  for (const f of rec.facts.imports) {
    if (f.inFunction || f.typeChecking) continue;
    for (const m of modulesImported(table, rec, f)) if (m.fileId !== rec.fileId && inlined(m) && !out.includes(m)) out.push(m);
  }
  return out;
}

/**
 * Marks the waiting statements of `result` (`result.lazy`: unit key -> the function that runs it) and, on each
 * function-local import that imports repository code (`Edit.modules`), the functions to call first (`Edit.loads`:
 * those of the modules that import runs, dependencies first). `roots`: the units the file is built around.
 */
export async function markLazy(ctx: ClosureContext, result: ClosureResult, roots: Iterable<string>, rootRepo: number): Promise<void> {
  // (most pulls have no import inside a function that reaches repository code: nothing to walk)
  const sites = [...result.units.values()].flatMap((node) => node.edits.filter((e) => e.modules?.length));
  if (!sites.length) return;
  const table = ctx.table;
  const inlined = (m: ModuleRecord): boolean => m.repoId === rootRepo || ctx.inlines(m, rootRepo);
  const below = new Map<number, ModuleRecord[]>();
  const importsOf = (m: ModuleRecord): ModuleRecord[] => {
    let got = below.get(m.fileId);
    if (!got) below.set(m.fileId, (got = importedAtModuleLevel(table, m, inlined)));
    return got;
  };
  // the modules that run when the file does: the roots' modules and what they import at module level; and those
  // whose code is found at run time by other means than an import: a class registered in a registry or a
  // registration statement the file keeps (looked up by a string; in the original, the package that registers
  // them has usually imported them already), a module used as an object
  const eager = new Set<number>();
  const queue: ModuleRecord[] = [];
  const seed = (rec: ModuleRecord): void => {
    if (eager.has(rec.fileId)) return;
    eager.add(rec.fileId);
    queue.push(rec);
  };
  const rootKeys = new Set(roots);
  for (const node of result.units.values()) {
    const { rec, unit } = node;
    const registers =
      rec.facts.units[unit].kind === 'class'
        ? rec.facts.classes.some((c) => c.unit === unit && !!c.registry)
        : rec.facts.registrations.some((r) => r.unit === unit);
    if (rootKeys.has(node.key) || registers || result.modulesAsObjects.has(rec.module)) seed(rec);
  }
  while (queue.length) {
    for (const m of importsOf(queue.pop()!)) {
      if (!eager.has(m.fileId)) {
        eager.add(m.fileId);
        queue.push(m);
      }
    }
  }
  // the modules a function-local import runs, in the order Python runs them (what a module imports first)
  const runs = (start: ModuleRecord[]): ModuleRecord[] => {
    const order: ModuleRecord[] = [];
    const seen = new Set<number>();
    const visit = (m: ModuleRecord): void => {
      if (seen.has(m.fileId) || eager.has(m.fileId)) return;
      seen.add(m.fileId);
      for (const d of importsOf(m)) visit(d);
      order.push(m);
    };
    for (const m of start) visit(m);
    return order;
  };
  const reached = new Set<number>();
  const siteRuns = sites.map((edit) => {
    const order = runs(edit.modules!);
    for (const m of order) reached.add(m.fileId);
    return { edit, order };
  });
  // candidates: statements that do work, of a module only a function-local import runs, whose text can be indented
  const waiting = new Set<string>();
  for (const node of result.units.values()) {
    const u = node.rec.facts.units[node.unit];
    if (rootKeys.has(node.key) || node.replacement || !WAITING_KINDS.has(u.kind) || !reached.has(node.rec.fileId)) continue;
    const text = (await ctx.parse(node.rec)).text.slice(u.start, u.end);
    // a string over several lines would change if indented
    if (/"""|'''|\\\r?\n/.test(text)) continue;
    waiting.add(node.key);
  }
  // a statement needed while the file is imported (by one that does not wait) runs then, as does one a waiting
  // statement needs at once from a module its import does not run first
  const runOrder = new Map<number, Set<number>>();
  const runsFrom = (m: ModuleRecord): Set<number> => {
    let got = runOrder.get(m.fileId);
    if (!got) runOrder.set(m.fileId, (got = new Set(runs([m]).map((x) => x.fileId))));
    return got;
  };
  for (let changed = true; changed;) {
    changed = false;
    for (const key of [...waiting]) {
      const node = result.units.get(key)!;
      let keep = true;
      result.graph.forEachInEdge(key, (_e, attr, source) => {
        if (!attr.def || !keep) return;
        const from = result.units.get(source);
        if (!from || !waiting.has(source) || !runsFrom(from.rec).has(node.rec.fileId)) keep = false;
      });
      if (!keep) {
        waiting.delete(key);
        changed = true;
      }
    }
  }
  if (!waiting.size) return;
  const byModule = new Map<number, string[]>();
  for (const key of waiting) {
    const node = result.units.get(key)!;
    const list = byModule.get(node.rec.fileId) ?? [];
    list.push(key);
    byModule.set(node.rec.fileId, list);
  }
  for (const [, keys] of byModule) keys.sort((a, b) => result.units.get(a)!.unit - result.units.get(b)!.unit);
  for (const key of waiting) {
    const node = result.units.get(key)!;
    result.lazy.set(key, lazyRunner(node.rec, node.rec.facts.units[node.unit].startLine));
  }
  for (const { edit, order } of siteRuns) {
    const loads = order.flatMap((m) => (byModule.get(m.fileId) ?? []).map((k) => result.lazy.get(k)!));
    if (loads.length) edit.loads = loads;
  }
}
