/**
 * The dependency closure of a block: every module-level statement it needs, transitively, each name
 * resolved the way Python would; third-party names become imports; string registries count as references.
 */
import { DirectedGraph } from 'graphology';
import type { ParsedModule, Ref, Timing } from '../parse/types';
import { compactStandIn } from './compact';
import type { ModuleRecord, ModuleTable, Target } from './moduleTable';

export interface UnitNode {
  key: string;
  rec: ModuleRecord;
  unit: number;
  edits: Edit[];
  /** A stand-in written instead of the unit (compact.ts), with the symbols its names stand for. */
  replacement?: { source: string; refs: Record<string, string> };
  /** Discovery order, for a stable and readable output. */
  order: number;
}

/** A text edit inside a unit: the span is replaced by the final name of `to`, or by `text`. */
export interface Edit {
  start: number;
  end: number;
  to?: string;
  text?: string;
  /** For replaced import statements: one assignment per bound name (`boundKey`: a module-level binding). */
  imports?: { bound: string; boundKey?: string; to: string }[];
}

export interface ExternalImport {
  key: string;
  module: string;
  name?: string;
  plainDotted: boolean;
  /** The name the original code binds it to. */
  bound: string;
}

export interface SymbolBinding {
  key: string;
  rec: ModuleRecord;
  name: string;
  unitKey: string;
}

export type ProblemKind = 'native-extension' | 'unresolved' | 'unparsed' | 'module-object';

export interface Problem {
  kind: ProblemKind;
  name: string;
  detail: string;
}

/** An edge `a -> b`: unit a needs unit b; `def` when a needs it at import time (b must come first). */
export interface NeedEdge {
  def: boolean;
}

export interface ClosureResult {
  root: UnitNode;
  units: Map<string, UnitNode>;
  /** The dependency graph between units (node keys are unit keys); cycles are allowed. */
  graph: DirectedGraph<UnitNode, NeedEdge>;
  symbols: Map<string, SymbolBinding>;
  externals: Map<string, ExternalImport>;
  /** Builtins the emitted code reads: no definition may take these names. */
  builtinsUsed: Set<string>;
  problems: Problem[];
}

export interface ClosureContext {
  table: ModuleTable;
  /** Parsed source of a module (the text and the positions the index does not keep). */
  parse(rec: ModuleRecord): Promise<ParsedModule>;
  /** Whether code of `rec` is inlined into a file pulled from `rootRepo` (else it stays an import). */
  inlines(rec: ModuleRecord, rootRepo: number): boolean;
  /** Why an internal module has no facts (a skipped file), if it exists in the index at all. */
  skippedReason(module: string, repoId: number): string | undefined;
}

export function unitKey(rec: ModuleRecord, unit: number): string {
  return `${rec.fileId}:${unit}`;
}

export function symbolKey(rec: ModuleRecord, name: string): string {
  return `${rec.fileId}:${name}`;
}

function externalKey(e: Omit<ExternalImport, 'key'>): string {
  return `${e.module}|${e.name ?? ''}|${e.plainDotted ? 1 : 0}|${e.bound}`;
}

/** `@X.register_module(name=...)` and `X.register_module(module=C)` of one repository: alias -> class. */
function registryIndex(table: ModuleTable, repoId: number): Map<string, { rec: ModuleRecord; name: string }> {
  const out = new Map<string, { rec: ModuleRecord; name: string }>();
  for (const list of table.modules()) {
    for (const rec of list) {
      if (rec.repoId !== repoId) continue;
      for (const c of rec.facts.classes) if (c.registry) out.set(c.registry.alias ?? c.name, { rec, name: c.name });
      for (const r of rec.facts.registrations) {
        if (r.target && /^[A-Za-z_]\w*$/.test(r.target)) out.set(r.alias ?? r.target, { rec, name: r.target });
      }
    }
  }
  return out;
}

/** A registration decorator (`@MODELS.register_module()`) of a class unit: its span, the registry and its refs. */
interface Registration {
  node: UnitNode;
  start: number;
  end: number;
  registry: string;
  text: string;
  refs: Ref[];
  where: string;
}

/** The span of the decorator that registers the class of `unit` in a registry, if it has one. */
function registrationSpan(rec: ModuleRecord, unit: number, text: string): { start: number; end: number; registry: string } | undefined {
  const u = rec.facts.units[unit];
  if (u.kind !== 'class') return undefined;
  const fact = rec.facts.classes.find((c) => c.unit === unit && c.registry);
  if (!fact?.registry) return undefined;
  const head = text.slice(u.start, u.end);
  const classAt = new RegExp(`^[ \\t]*class[ \\t]+${fact.name}\\b`, 'm').exec(head)?.index;
  if (classAt === undefined) return undefined;
  const decorators = head.slice(0, classAt);
  const starts = [...decorators.matchAll(/^[ \t]*@/gm)].map((m) => m.index ?? 0);
  for (let i = 0; i < starts.length; i++) {
    const piece = decorators.slice(starts[i], starts[i + 1] ?? classAt);
    const m = /^\s*@\s*([\w.]+)\.register(?:_module)?\b/.exec(piece);
    if (m && m[1] === fact.registry.registry) return { start: u.start + starts[i], end: u.start + (starts[i + 1] ?? classAt), registry: m[1] };
  }
  return undefined;
}

export async function computeClosure(
  ctx: ClosureContext,
  rootRec: ModuleRecord,
  rootUnit: number,
  /** More units to close over with the root (a builder function used only for validation). */
  extraRoots: { rec: ModuleRecord; unit: number }[] = [],
): Promise<ClosureResult> {
  const { table } = ctx;
  const units = new Map<string, UnitNode>();
  const graph = new DirectedGraph<UnitNode, NeedEdge>();
  /** Records that `from` needs `to`; a definition-time need wins over a call-time one. */
  const depend = (from: UnitNode, to: UnitNode, timing: Timing): void => {
    if (from.key === to.key) return;
    const def = timing === 'def';
    if (graph.hasEdge(from.key, to.key)) {
      if (def) graph.setEdgeAttribute(from.key, to.key, 'def', true);
    } else {
      graph.addEdge(from.key, to.key, { def });
    }
  };
  const symbols = new Map<string, SymbolBinding>();
  const externals = new Map<string, ExternalImport>();
  const builtinsUsed = new Set<string>();
  const problems: Problem[] = [];
  const problemKeys = new Set<string>();
  let registries: Map<string, { rec: ModuleRecord; name: string }> | undefined;
  const queue: UnitNode[] = [];

  const problem = (p: Problem): void => {
    const k = `${p.kind}:${p.name}`;
    if (!problemKeys.has(k)) {
      problemKeys.add(k);
      problems.push(p);
    }
  };

  const need = (rec: ModuleRecord, unit: number): UnitNode => {
    const key = unitKey(rec, unit);
    let node = units.get(key);
    if (!node) {
      node = { key, rec, unit, edits: [], order: units.size };
      units.set(key, node);
      graph.addNode(key, node);
      queue.push(node);
      for (const b of rec.facts.units[unit].binds) {
        symbols.set(symbolKey(rec, b), { key: symbolKey(rec, b), rec, name: b, unitKey: key });
      }
      // a binding under try/if may not happen: the earlier unconditional binding of the name is its fallback
      if (rec.facts.units[unit].guard) {
        for (const b of rec.facts.units[unit].binds) {
          for (let i = unit - 1; i >= 0; i--) {
            const earlier = rec.facts.units[i];
            if (earlier.kind === 'main' || earlier.kind === 'import' || !earlier.binds.includes(b)) continue;
            depend(node, need(rec, i), 'def');
            if (!earlier.guard) break;
          }
        }
      }
    }
    return node;
  };

  const external = (e: Omit<ExternalImport, 'key'>): string => {
    const key = externalKey(e);
    if (!externals.has(key)) externals.set(key, { ...e, key });
    return key;
  };

  /** Where a resolved target goes in the output: a symbol key, an external key, or nothing. */
  const place = (from: UnitNode, t: Target, bound: string, timing: Timing, where: string): string | undefined => {
    switch (t.kind) {
      case 'symbol': {
        if (!ctx.inlines(t.mod, rootRec.repoId)) {
          return external({ module: t.mod.module, name: t.name, plainDotted: false, bound });
        }
        const target = need(t.mod, t.unit);
        depend(from, target, timing);
        return symbolKey(t.mod, t.name);
      }
      case 'external':
        return external({ module: t.module, name: t.name, plainDotted: !!t.plainDotted, bound });
      case 'module':
        if (!ctx.inlines(t.mod, rootRec.repoId)) return external({ module: t.mod.module, plainDotted: false, bound });
        problem({ kind: 'module-object', name: t.mod.module, detail: `${where} uses the module ${t.mod.module} as an object` });
        return undefined;
      case 'builtin':
        builtinsUsed.add(t.name);
        return undefined;
      case 'missing': {
        const reason = ctx.skippedReason(t.qualname, rootRec.repoId);
        problem(
          reason
            ? { kind: 'unparsed', name: t.qualname, detail: `${where} needs ${t.qualname}, which could not be indexed (${reason})` }
            : {
                kind: 'native-extension',
                name: t.qualname,
                detail: `${where} needs the compiled module ${t.qualname}, which has no Python source in ${t.repo}`,
              },
        );
        return undefined;
      }
      default:
        problem({ kind: 'unresolved', name: t.name, detail: `${where}: name '${t.name}' is not defined` });
        return undefined;
    }
  };

  const placeRef = (node: UnitNode, ref: Ref, where: string): void => {
    let t = table.resolveName(node.rec, ref.name);
    let end = ref.end;
    if (t.kind === 'module' && ref.attrs.length && ctx.inlines(t.mod, rootRec.repoId)) {
      // `a.init_weights`, `pkg.sub.f`: the module attribute becomes a plain name in the output
      const r = table.resolveAttrs(t, ref.attrs);
      if (r.consumed > 0) {
        t = r.target;
        end = ref.attrEnds[r.consumed - 1];
      }
    }
    const to = place(node, t, ref.name, ref.timing, where);
    if (to) node.edits.push({ start: ref.start, end, to });
  };
  /** Registration decorators whose registry nothing else in the file has needed so far. */
  let registrations: Registration[] = [];
  /** Modules whose module-level registration calls were taken in (their registry is needed). */
  const scanned = new Set<number>();

  const root = need(rootRec, rootUnit);
  for (const extra of extraRoots) need(extra.rec, extra.unit);
  /** Takes in what one unit needs: its references, the registered classes its strings name, its inner imports. */
  const visit = async (node: UnitNode): Promise<void> => {
    const { rec, unit } = node;
    const parsed = await ctx.parse(rec);
    const u = rec.facts.units[unit];
    const where = `${rec.module}${u.name ? `.${u.name}` : ''} (line ${u.startLine})`;
    const own = rec.repoId === rootRec.repoId || ctx.inlines(rec, rootRec.repoId);

    // a framework's registry machinery: a minimal stand-in, and nothing the original needed
    const standIn = own ? compactStandIn(rec, unit) : undefined;
    if (standIn) {
      const refs: Record<string, string> = u.name ? { [u.name]: symbolKey(rec, u.name) } : {};
      for (const name of standIn.needs) {
        const to = place(node, table.resolveName(rec, name), name, 'call', where);
        if (to) refs[name] = to;
      }
      node.replacement = { source: standIn.source, refs };
      return;
    }
    // registering the class is a side effect: its registry is needed only if the file builds from it
    const span = own ? registrationSpan(rec, unit, parsed.text) : undefined;
    const registration: Registration | undefined = span && { ...span, node, refs: [], where, text: parsed.text.slice(span.start, span.end).trim() };
    for (const ref of parsed.refs[unit]) {
      if (registration && ref.start >= registration.start && ref.end <= registration.end) registration.refs.push(ref);
      else placeRef(node, ref, where);
    }
    if (registration) registrations.push(registration);

    // string registries: dict(type="MLPHead") names a registered class
    const strings = parsed.strings[unit];
    if (strings.length) {
      registries ??= registryIndex(table, rootRec.repoId);
      for (const s of strings) {
        const hit = registries.get(s.value);
        if (!hit) continue;
        const bindUnit = table.bindingUnit(hit.rec, hit.name);
        if (bindUnit === undefined) continue;
        const target = need(hit.rec, bindUnit);
        depend(node, target, s.timing);
      }
    }

    // import statements inside the unit (in a function body or a try/if block) that reach repository code
    for (const range of parsed.importRanges) {
      if (range.unit !== unit || (u.kind === 'import')) continue;
      const resolved = range.imports
        .map((i) => rec.facts.imports[i])
        // a star import binds what its module exports: those names resolve through it where they are read
        .filter((imp) => !imp.typeChecking && imp.kind !== 'star')
        .map((imp) => {
          const bound = imp.bound ?? imp.module.split('.')[0];
          return { imp, bound, t: table.resolveImport(rec, imp.kind, imp.level, imp.module, imp.name, bound) };
        });
      const internal = resolved.some(
        ({ t }) => t.kind === 'missing' || ((t.kind === 'symbol' || t.kind === 'module') && ctx.inlines(t.mod, rootRec.repoId)),
      );
      // an import of third-party code stays where it is, as written
      if (!internal) continue;
      const lines: { bound: string; boundKey?: string; to: string }[] = [];
      for (const { imp, bound, t } of resolved) {
        const to = place(node, t, bound, imp.inFunction ? 'call' : 'def', where);
        if (to) lines.push({ bound, boundKey: imp.inFunction ? undefined : symbolKey(rec, bound), to });
      }
      node.edits.push({ start: range.start, end: range.end, imports: lines });
    }
  };

  /** Whether a registry, as `rec` names it, is needed by something else (a build from it, a string reference). */
  const needed = (rec: ModuleRecord, registry: string): boolean => {
    const t = table.resolveDotted(rec, registry);
    if (t.kind === 'symbol') return units.has(unitKey(t.mod, t.unit));
    return t.kind === 'external';
  };
  for (;;) {
    while (queue.length) await visit(queue.shift()!);
    // a registry that something else needs keeps every registration into it
    const keep = registrations.filter((r) => needed(r.node.rec, r.registry));
    // `MODELS.register_module('BN', module=nn.BatchNorm2d)` at module level: a registry the file builds from keeps
    // the registrations the modules in the file make into it (a name looked up by string is among them)
    let added = false;
    for (const node of [...units.values()]) {
      const { rec } = node;
      if (scanned.has(rec.fileId)) continue;
      // the registries the module registers into, by call or by decorator
      const uses = [...rec.facts.registrations, ...rec.facts.classes.flatMap((c) => (c.registry ? [c.registry] : []))];
      if (!uses.length) continue;
      const heads = [...new Set(uses.map((r) => r.registry.split('.')[0]))].filter((head) => needed(rec, head));
      if (!heads.length) continue; // the registry may become needed later: looked at again then
      scanned.add(rec.fileId);
      rec.facts.units.forEach((u, i) => {
        if ((u.kind === 'expr' || u.kind === 'compound') && heads.some((h) => u.defNames.includes(h)) && !units.has(unitKey(rec, i))) {
          depend(node, need(rec, i), 'call');
          added = true;
        }
      });
    }
    if (!keep.length && !added) break;
    registrations = registrations.filter((r) => !keep.includes(r));
    for (const r of keep) for (const ref of r.refs) placeRef(r.node, ref, r.where);
  }
  for (const r of registrations) {
    const registered = r.node.rec.module;
    r.node.edits.push({ start: r.start, end: r.end, text: `# ${r.text.replace(/\s*\n\s*/g, ' ')}: registration left out by NN-RAG (nothing here builds from ${r.registry}; registered in ${registered})\n` });
  }
  return { root, units, graph, symbols, externals, builtinsUsed, problems };
}
