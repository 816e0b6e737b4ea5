/**
 * The dependency closure of a block: every module-level statement it needs, transitively, each name
 * resolved the way Python would; third-party names become imports; string registries count as references.
 */
import { DirectedGraph } from 'graphology';
import type { ClassFact, Member, ParsedModule, Ref, Timing } from '../parse/types';
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
  /** Methods of a class this file needs for other members only, that nothing in the file reaches: left out. */
  dropped?: Member[];
}

/** A text edit inside a unit: the span is replaced by the final name of `to`, or by `text`. */
export interface Edit {
  start: number;
  end: number;
  to?: string;
  text?: string;
  /**
   * For replaced import statements: one assignment per bound name (`boundKey`: a module-level binding). A module
   * imported inside a function and used as an object (`import pkg.auto as auto; auto.X`) is bound to a namespace
   * of the attributes the function reads (`attrs`, each with what it resolves to), and `to` is empty.
   */
  imports?: { bound: string; boundKey?: string; to: string; attrs?: { attr: string; to: string }[] }[];
}

export interface ExternalImport {
  key: string;
  module: string;
  name?: string;
  plainDotted: boolean;
  /** The name the original code binds it to. */
  bound: string;
  /** A compiled module built from the repository's sources (`--build-native`): loaded from this file beside the
   * pulled one under this module name, not imported. */
  native?: { file: string; name: string };
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
  /** Copies every class the file needs whole (else a class other than the block keeps the methods reached). */
  wholeClasses?: boolean;
  /** Compiled modules built for this pull (`--build-native`), by module: the file and name to load them by. */
  natives?: ReadonlyMap<string, { file: string; name: string }>;
}

/**
 * Methods that code outside the file calls by name: PyTorch's `nn.Module`, containers, `_ConvNd`, `_BatchNorm`
 * and `autograd.Function` (an override of any of these is kept, whether or not the file names it).
 */
const FRAMEWORK_CALLED = new Set(
  (
    'T_destination _apply _backward_cls _call_impl _wrapped_call_impl _check_input_dim _conv_forward _get_abs_string_index ' +
    '_get_backward_hooks _get_item_by_idx _get_name _key_to_attr _load_from_state_dict _named_members _register_hook ' +
    '_register_load_state_dict_pre_hook _register_state_dict_hook _replicate_for_data_parallel _save_to_state_dict ' +
    '_slow_forward _version add_module append apply backward bfloat16 buffers children clear compile copy cpu cuda ' +
    'double dump_patches eval extend extra_repr float forward fromkeys get get_buffer get_extra_state get_parameter ' +
    'get_submodule half insert ipu items jvp keys load_state_dict mark_dirty mark_non_differentiable modules ' +
    'named_buffers named_children named_modules named_parameters parameters pop popitem register_backward_hook ' +
    'register_buffer register_forward_hook register_forward_pre_hook register_full_backward_hook ' +
    'register_full_backward_pre_hook register_load_state_dict_post_hook register_module register_parameter ' +
    'register_state_dict_pre_hook requires_grad_ reset_parameters reset_running_stats save_for_backward set_extra_state ' +
    'set_materialize_grads setdefault setup_context share_memory state_dict symbolic to to_empty train type update ' +
    'values vjp xpu zero_grad'
  ).split(' '),
);

/** Whether a method may be left out of a class when nothing in the file reaches its name. */
function droppable(name: string): boolean {
  return !/^__\w+__$/.test(name) && !FRAMEWORK_CALLED.has(name);
}

/**
 * String literals (with their prefix) and comments, strings first: a `#` or a quote inside a string is not taken for what
 * it is outside. Comments and docstrings (triple-quoted, not f-strings) say nothing the code reaches.
 */
const STRINGS = /([rRbBuUfF]{0,2})("""[\s\S]*?"""|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|#[^\n]*/g;

/** The code of `text` without its strings and comments (each replaced by a space). */
function codeOnly(text: string): string {
  return text.replace(STRINGS, ' ');
}

/** A name read as a member: on the object's own class (`self.x`, `cls.x`, `super().x`) or on any object. */
interface Reach {
  name: string;
  /** The class unit whose `self` reads it; undefined: any class's member of that name may be meant. */
  family?: string;
}

/** A name a unit's code may reach a member by, where it stands (`own`: read on `self`, `cls` or `super()`). */
interface Reached {
  name: string;
  at: number;
  kind: 'attribute' | 'string' | 'bare';
  own: boolean;
}

/** Per parsed module and unit: what its code reaches members by, found once (the module's text does not change). */
const reachedCache = new WeakMap<ParsedModule, Map<number, Reached[]>>();

/**
 * Names a unit's code may reach members by: attributes (`x.name`), identifier-like strings (`getattr`) and, at
 * class level, bare names (`forward = _impl`). Comments and docstrings reach nothing; offsets are kept.
 */
function reachedIn(parsed: ParsedModule, unit: number, start: number, end: number): Reached[] {
  let byUnit = reachedCache.get(parsed);
  if (!byUnit) reachedCache.set(parsed, (byUnit = new Map()));
  const known = byUnit.get(unit);
  if (known) return known;
  const text = parsed.text.slice(start, end);
  const blank = (m: string): string => m.replace(/[^\n]/g, ' ');
  const code = text.replace(STRINGS, (all: string, prefix: string | undefined, str: string | undefined) =>
    str === undefined || (str.length >= 6 && /^("""|''')/.test(str) && !/f/i.test(prefix ?? '')) ? blank(all) : all,
  );
  const out: Reached[] = [];
  for (const m of code.matchAll(/\.\s*([A-Za-z_]\w*)/g)) {
    const before = code.slice(Math.max(0, (m.index ?? 0) - 60), m.index);
    const own = /\b(?:self|cls)\s*$/.test(before) || /\bsuper\s*\([^()]*\)\s*$/.test(before);
    out.push({ name: m[1], at: start + (m.index ?? 0), kind: 'attribute', own });
  }
  for (const m of code.matchAll(/['"]([A-Za-z_]\w*)['"]/g)) out.push({ name: m[1], at: start + (m.index ?? 0), kind: 'string', own: false });
  for (const m of text.replace(STRINGS, blank).matchAll(/[A-Za-z_]\w*/g)) out.push({ name: m[0], at: start + (m.index ?? 0), kind: 'bare', own: false });
  byUnit.set(unit, out);
  return out;
}

/**
 * What the reached names in `list` that `take` accepts mean: inside a class (`family`), `self.x`, `cls.x`,
 * `super().x` and strings reach only that class, its bases and its subclasses; other attributes reach every class.
 * Bare names count only where `bare` accepts them (a class's own statements, not its methods).
 */
function reachesOf(list: Reached[], into: Reach[], family: string | undefined, take: (at: number) => boolean, bare: (at: number) => boolean = () => false): void {
  for (const r of list) {
    if (!take(r.at)) continue;
    if (r.kind === 'attribute') into.push({ name: r.name, family: r.own ? family : undefined });
    else if (r.kind === 'string') into.push({ name: r.name, family });
    else if (bare(r.at)) into.push({ name: r.name, family });
  }
}

/** Per parsed module and unit: its references sorted by where they start (a method's are found by halving). */
const sortedRefs = new WeakMap<ParsedModule, Map<number, Ref[]>>();

/** The references of `unit` that start inside `span`. */
function refsWithin(parsed: ParsedModule, unit: number, span: { start: number; end: number }): Ref[] {
  let byUnit = sortedRefs.get(parsed);
  if (!byUnit) sortedRefs.set(parsed, (byUnit = new Map()));
  let refs = byUnit.get(unit);
  if (!refs) byUnit.set(unit, (refs = [...parsed.refs[unit]].sort((a, b) => a.start - b.start)));
  let lo = 0;
  let hi = refs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (refs[mid].start < span.start) lo = mid + 1;
    else hi = mid;
  }
  const out: Ref[] = [];
  for (let i = lo; i < refs.length && refs[i].start < span.end; i++) out.push(refs[i]);
  return out;
}

/** Whether an offset lies outside every one of `members` (in source order, not overlapping: found by halving). */
function outsideOf(members: readonly { start: number; end: number }[]): (at: number) => boolean {
  return (at) => {
    let lo = 0;
    let hi = members.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (members[mid].end <= at) lo = mid + 1;
      else hi = mid;
    }
    return lo === members.length || at < members[lo].start;
  };
}

export function unitKey(rec: ModuleRecord, unit: number): string {
  return `${rec.fileId}:${unit}`;
}

export function symbolKey(rec: ModuleRecord, name: string): string {
  return `${rec.fileId}:${name}`;
}

/** The built compiled module `qualname` is (or is a name of: `pkg._C.op`), if one was built. */
function nativeOf(natives: ClosureContext['natives'], qualname: string): { module: string; name?: string; native: { file: string; name: string } } | undefined {
  if (!natives) return undefined;
  for (const [module, native] of natives) {
    if (qualname === module) return { module, native };
    if (qualname.startsWith(`${module}.`) && !qualname.slice(module.length + 1).includes('.')) return { module, name: qualname.slice(module.length + 1), native };
  }
  return undefined;
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

/** How a name is used: only tested against (`isinstance`), only named in an annotation, or anything else. */
type Use = 'isinstance' | 'annotation' | 'other';

/**
 * How the name at `start..end` is used: tested against (the second argument of isinstance or issubclass, the right
 * of a membership test `x.__class__ in NAME`), named in a `def`'s parameter or return annotation, or otherwise
 * (a call, a default value, a loop over it, anything else).
 */
function useAt(text: string, start: number, end: number): Use {
  const before = text.slice(Math.max(0, start - 400), start);
  const after = text.slice(end, end + 40);
  if (/\b(?:isinstance|issubclass)\s*\([^()]*,\s*\(?\s*(?:[\w.]+\s*,\s*)*$/.test(before)) return /^\s*[,)]/.test(after) ? 'isinstance' : 'other';
  const line = before.slice(before.lastIndexOf('\n') + 1);
  if (/\bin\s*$/.test(line) && !/\bfor\b/.test(line) && /^\s*(?:[):\],]|$|\n|\bfor\b|\bif\b|\band\b|\bor\b)/.test(after)) return 'isinstance';
  if (/->[^:\n]*$/.test(line)) return 'annotation';
  // inside the parameters of a def: in the current parameter, after its `:` and before any `=`
  const last = [...before.matchAll(/\bdef\s+\w+\s*\(/g)].pop();
  if (!last) return 'other';
  let depth = 0;
  let param = '';
  for (const ch of before.slice((last.index ?? 0) + last[0].length)) {
    if ('([{'.includes(ch)) depth++;
    else if (')]}'.includes(ch)) depth--;
    if (depth < 0) return 'other'; // the parameters closed: the body
    param = depth === 0 && ch === ',' ? '' : param + (depth === 0 ? ch : ' ');
  }
  return /^[^=]*:[^=]*$/.test(param) ? 'annotation' : 'other';
}

/** What a closure pass learnt for the next: names only tested against or named in annotations. */
interface TypeOnly {
  /** Classes only tested against, and values only named in annotations: empty stand-ins. */
  stubbed: Set<string>;
  /** Values only tested against (`PROCESSORS = (A, B)`): the names in them are only tested against too. */
  aliases: Set<string>;
}

export async function computeClosure(
  ctx: ClosureContext,
  rootRec: ModuleRecord,
  rootUnit: number,
  /** More units to close over with the root (a builder function used only for validation). */
  extraRoots: { rec: ModuleRecord; unit: number }[] = [],
): Promise<ClosureResult> {
  // a class the file only tests objects against becomes an empty stand-in; what it needed may go with it, and
  // then another class may be left with type tests only
  const typeOnly: TypeOnly = { stubbed: new Set(), aliases: new Set() };
  for (;;) {
    const { result, learnt } = await closeOnce(ctx, rootRec, rootUnit, extraRoots, typeOnly);
    if (!learnt || ctx.wholeClasses) return result;
  }
}

async function closeOnce(
  ctx: ClosureContext,
  rootRec: ModuleRecord,
  rootUnit: number,
  extraRoots: { rec: ModuleRecord; unit: number }[],
  typeOnly: TypeOnly,
): Promise<{ result: ClosureResult; learnt: boolean }> {
  const { table } = ctx;
  const units = new Map<string, UnitNode>();
  const graph = new DirectedGraph<UnitNode, NeedEdge>();
  /** Per unit needed: how it is used (see useAt). */
  const uses = new Map<string, Set<Use>>();
  /** Records that `from` needs `to`; a definition-time need wins over a call-time one. */
  const depend = (from: UnitNode, to: UnitNode, timing: Timing, use: Use = 'other'): void => {
    const seen = uses.get(to.key) ?? new Set<Use>();
    seen.add(use);
    uses.set(to.key, seen);
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
  const place = (from: UnitNode, t: Target, bound: string, timing: Timing, where: string, use: () => Use = () => 'other'): string | undefined => {
    switch (t.kind) {
      case 'symbol': {
        if (!ctx.inlines(t.mod, rootRec.repoId)) {
          return external({ module: t.mod.module, name: t.name, plainDotted: false, bound });
        }
        const target = need(t.mod, t.unit);
        const kind = t.mod.facts.units[t.unit].kind;
        depend(from, target, timing, kind === 'class' || kind === 'assign' ? use() : 'other');
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
        const built = nativeOf(ctx.natives, t.qualname);
        if (built) return external({ module: built.module, name: built.name, plainDotted: false, bound, native: built.native });
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

  const placeRef = (node: UnitNode, ref: Ref, where: string, text?: string): void => {
    let t = table.resolveName(node.rec, ref.name);
    // a definition that reads its own name while it is made reads the binding before it (`class Output(Output):`)
    if (ref.timing === 'def' && t.kind === 'symbol' && t.mod === node.rec && t.unit === node.unit) t = table.resolveNameBefore(node.rec, ref.name, node.unit);
    let end = ref.end;
    if (t.kind === 'module' && ref.attrs.length && ctx.inlines(t.mod, rootRec.repoId)) {
      // `a.init_weights`, `pkg.sub.f`: the module attribute becomes a plain name in the output
      const r = table.resolveAttrs(t, ref.attrs);
      if (r.consumed > 0) {
        t = r.target;
        end = ref.attrEnds[r.consumed - 1];
      }
    }
    // a name inside a value only tested against is only tested against; else what the code around it says (asked
    // only of the classes and values that could become stand-ins)
    // (the annotations of the block's own constructor say what a user builds it with: `cnf: FusedMBConvConfig` is kept)
    const use = (): Use => {
      if (end !== ref.end || !text) return 'other';
      if (typeOnly.aliases.has(node.key)) return 'isinstance';
      const u = useAt(text, ref.start, ref.end);
      if (u !== 'annotation' || node.rec !== rootRec || node.unit !== rootUnit) return u;
      const def = [...text.slice(Math.max(0, ref.start - 2000), ref.start).matchAll(/\bdef\s+(\w+)\s*\(/g)].pop();
      return def?.[1] === '__init__' ? 'other' : u;
    };
    const to = place(node, t, ref.name, ref.timing, where, use);
    if (to) node.edits.push({ start: ref.start, end, to });
  };
  /** Registration decorators whose registry nothing else in the file has needed so far. */
  let registrations: Registration[] = [];
  /** Modules whose module-level registration calls were taken in (their registry is needed). */
  const scanned = new Set<number>();

  const root = need(rootRec, rootUnit);
  for (const extra of extraRoots) need(extra.rec, extra.unit);
  const wholeUnits = new Set([root.key, ...extraRoots.map((e) => unitKey(e.rec, e.unit))]);

  /** Whether a class's methods are called only by name from Python code (its bases are such classes, or PyTorch's). */
  const plainClasses = new Map<string, boolean>();
  const plainClass = (rec: ModuleRecord, fact: ClassFact): boolean => {
    const key = symbolKey(rec, fact.name);
    const known = plainClasses.get(key);
    if (known !== undefined) return known;
    plainClasses.set(key, false); // a cycle of bases: not plain
    const plain = fact.bases.every((base) => {
      const t = table.resolveDotted(rec, base.replace(/\[.*$/s, ''));
      if (t.kind === 'builtin') return t.name === 'object';
      if (t.kind === 'external') return /^(torch|abc|typing)(\.|$)/.test(t.module);
      if (t.kind !== 'symbol' || !ctx.inlines(t.mod, rootRec.repoId)) return false;
      const baseFact = t.mod.facts.classes.find((c) => c.name === t.name && c.unit === t.unit);
      return !!baseFact && plainClass(t.mod, baseFact);
    });
    plainClasses.set(key, plain);
    return plain;
  };

  /** The class units a class unit derives from, in the index (resolved the way its module reads its bases). */
  const ancestry = new Map<string, Set<string>>();
  const ancestors = (rec: ModuleRecord, unit: number): Set<string> => {
    const key = unitKey(rec, unit);
    let out = ancestry.get(key);
    if (out) return out;
    out = new Set();
    ancestry.set(key, out); // a cycle of bases ends here
    const fact = rec.facts.classes.find((c) => c.unit === unit && c.name === rec.facts.units[unit].name);
    for (const base of fact?.bases ?? []) {
      const t = table.resolveDotted(rec, base.replace(/\[.*$/s, ''));
      if (t.kind !== 'symbol') continue;
      out.add(unitKey(t.mod, t.unit));
      for (const k of ancestors(t.mod, t.unit)) out.add(k);
    }
    return out;
  };
  const related = (a: UnitNode, bKey: string, b: { rec: ModuleRecord; unit: number }): boolean =>
    a.key === bKey || ancestors(a.rec, a.unit).has(bKey) || ancestors(b.rec, b.unit).has(a.key);

  /** What kept code reaches members by; methods left out wait for their name (see reachedIn). */
  const reachedAnywhere = new Set<string>();
  const reachedFrom = new Map<string, UnitNode[]>();
  const isReached = (name: string, node: UnitNode): boolean =>
    reachedAnywhere.has(name) || (reachedFrom.get(name) ?? []).some((from) => related(from, node.key, node));
  const waiting = new Map<string, { node: UnitNode; member: Member; parsed: ParsedModule; where: string }[]>();
  const toReach: Reach[] = [];
  const reachAll = (): void => {
    while (toReach.length) {
      const { name, family } = toReach.pop()!;
      if (reachedAnywhere.has(name)) continue;
      const from = family === undefined ? undefined : units.get(family);
      if (from) {
        const list = reachedFrom.get(name) ?? [];
        if (list.includes(from)) continue;
        list.push(from);
        reachedFrom.set(name, list);
      } else {
        reachedAnywhere.add(name);
      }
      const list = waiting.get(name);
      if (!list) continue;
      const now = list.filter((w) => !from || related(from, w.node.key, w.node));
      if (now.length === list.length) waiting.delete(name);
      else waiting.set(name, list.filter((w) => !now.includes(w)));
      for (const { node, member, parsed, where } of now) {
        node.dropped = node.dropped?.filter((m) => m !== member);
        takeIn(node, parsed, where, (at) => at >= member.start && at < member.end, undefined, member);
        const u = node.rec.facts.units[node.unit];
        reachesOf(reachedIn(parsed, node.unit, u.start, u.end), toReach, node.key, (at) => at >= member.start && at < member.end);
      }
    }
  };

  /** Takes in what the part of a unit that `inside` accepts needs: its references, string registries, inner imports. */
  function takeIn(node: UnitNode, parsed: ParsedModule, where: string, inside: (at: number) => boolean, registration?: Registration, range?: Member): void {
    const { rec, unit } = node;
    for (const ref of range ? refsWithin(parsed, unit, range) : parsed.refs[unit]) {
      if (!inside(ref.start)) continue;
      if (registration && ref.start >= registration.start && ref.end <= registration.end) registration.refs.push(ref);
      else placeRef(node, ref, where, parsed.text);
    }

    // string registries: dict(type="MLPHead") names a registered class
    const strings = parsed.strings[unit].filter((s) => inside(s.at));
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
    if (rec.facts.units[unit].kind === 'import') return;
    for (const range of parsed.importRanges) {
      if (range.unit !== unit || !inside(range.start)) continue;
      const resolved = range.imports
        .map((i) => rec.facts.imports[i])
        // a star import binds what its module exports: those names resolve through it where they are read
        .filter((imp) => !imp.typeChecking && imp.kind !== 'star')
        .map((imp) => {
          const bound = imp.bound ?? imp.module.split('.')[0];
          return { imp, bound, t: table.resolveImport(rec, imp.kind, imp.level, imp.module, imp.name, bound) };
        });
      // an import of a module that exists nowhere, under a handler of the failed import, stays as written: Python
      // runs the handler, at any depth as at module level
      const handled = ({ imp, t }: (typeof resolved)[number]): boolean => imp.inFunction && imp.guarded && t.kind === 'missing';
      if (resolved.length && resolved.every(handled)) continue;
      const internal = resolved.some(
        (r) => (r.t.kind === 'missing' && !handled(r)) || ((r.t.kind === 'symbol' || r.t.kind === 'module') && ctx.inlines(r.t.mod, rootRec.repoId)),
      );
      // an import of third-party code stays where it is, as written
      if (!internal) continue;
      const lines: { bound: string; boundKey?: string; to: string; attrs?: { attr: string; to: string }[] }[] = [];
      for (const r of resolved) {
        const { imp, bound, t } = r;
        if (handled(r)) continue;
        if (imp.inFunction && t.kind === 'module' && ctx.inlines(t.mod, rootRec.repoId)) {
          // the module as an object, inside the function: a namespace of the attributes read through the name
          const body = codeOnly(parsed.text.slice(range.end, rec.facts.units[unit].end));
          const attrs: { attr: string; to: string }[] = [];
          for (const m of body.matchAll(new RegExp(`(?<![\\w.])${bound}\\s*\\.\\s*([A-Za-z_]\\w*)`, 'g'))) {
            if (attrs.some((a) => a.attr === m[1])) continue;
            const r = table.resolveAttrs(t, [m[1]]);
            const to = r.consumed ? place(node, r.target, m[1], 'call', where) : undefined;
            if (to) attrs.push({ attr: m[1], to });
            else problem({ kind: 'unresolved', name: `${t.mod.module}.${m[1]}`, detail: `${where}: ${t.mod.module} has no '${m[1]}'` });
          }
          lines.push({ bound, to: '', attrs });
          continue;
        }
        const to = place(node, t, bound, imp.inFunction ? 'call' : 'def', where);
        if (to) lines.push({ bound, boundKey: imp.inFunction ? undefined : symbolKey(rec, bound), to });
      }
      node.edits.push({ start: range.start, end: range.end, imports: lines });
    }
  }

  /** Takes in what one unit needs: its references, the registered classes its strings name, its inner imports. */
  const visit = async (node: UnitNode): Promise<void> => {
    const { rec, unit } = node;
    const parsed = await ctx.parse(rec);
    const u = rec.facts.units[unit];
    const where = `${rec.module}${u.name ? `.${u.name}` : ''} (line ${u.startLine})`;
    const own = rec.repoId === rootRec.repoId || ctx.inlines(rec, rootRec.repoId);

    if (typeOnly.stubbed.has(node.key) && u.binds.length === 1) {
      const name = u.binds[0];
      const source =
        u.kind === 'class'
          ? `class ${name}:\n    """A stand-in written by NN-RAG for ${rec.module}.${name}: this file only tests objects against it, and makes none."""\n`
          : `${name} = object  # a stand-in written by NN-RAG for ${rec.module}.${name}: this file only names it in annotations\n`;
      node.replacement = { source, refs: { [name]: symbolKey(rec, name) } };
      return;
    }
    // a framework's registry machinery: a minimal stand-in, and nothing the original needed
    const standIn = own ? compactStandIn(rec, unit) : undefined;
    if (standIn) {
      const refs: Record<string, string> = u.name ? { [u.name]: symbolKey(rec, u.name) } : {};
      const needs = [...standIn.needs.map((name) => ({ name, timing: 'call' as const })), ...(standIn.needsAtDefinition ?? []).map((name) => ({ name, timing: 'def' as const }))];
      for (const { name, timing } of needs) {
        // a name the original imports inside a method (mmengine's Registry and its build_from_cfg)
        let t = table.resolveName(rec, name);
        const inner = rec.facts.imports.find((i) => i.inFunction && i.kind === 'from' && (i.bound ?? i.name) === name);
        if (t.kind === 'unresolved' && inner) t = table.resolveImport(rec, inner.kind, inner.level, inner.module, inner.name, name);
        const to = place(node, t, name, timing, where);
        if (to) refs[name] = to;
      }
      node.replacement = { source: standIn.source, refs };
      return;
    }
    // registering the class is a side effect: its registry is needed only if the file builds from it
    const span = own ? registrationSpan(rec, unit, parsed.text) : undefined;
    const registration: Registration | undefined = span && { ...span, node, refs: [], where, text: parsed.text.slice(span.start, span.end).trim() };

    // a class the block needs, not the block: the methods nothing in the file reaches wait for their name
    const body = parsed.bodies[unit];
    const fact = body && u.kind === 'class' ? rec.facts.classes.find((c) => c.unit === unit && c.name === u.name) : undefined;
    const trim = own && !ctx.wholeClasses && !wholeUnits.has(node.key) && !!fact && plainClass(rec, fact);
    // (a method on a line of its own: a one-line class keeps them all)
    const ownLine = (m: Member): boolean => /^[ \t]*$/.test(parsed.text.slice(parsed.text.lastIndexOf('\n', m.start - 1) + 1, m.start));
    const deferred = trim ? body!.methods.filter((m) => droppable(m.name) && !isReached(m.name, node) && ownLine(m)) : [];
    const outside = outsideOf(deferred);
    takeIn(node, parsed, where, outside, registration);
    if (registration) registrations.push(registration);

    // what the kept code reaches members by (a class's own statements: its bare names too, `forward = _impl`)
    const family = u.kind === 'class' ? node.key : undefined;
    const outsideMethods = outsideOf(body?.methods ?? []);
    const classLevel = (at: number): boolean => u.kind === 'class' && outsideMethods(at);
    reachesOf(reachedIn(parsed, unit, u.start, u.end), toReach, family, outside, classLevel);
    if (deferred.length) {
      node.dropped = [...deferred];
      for (const member of deferred) {
        const list = waiting.get(member.name) ?? [];
        list.push({ node, member, parsed, where });
        waiting.set(member.name, list);
      }
    }
    reachAll();
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
  // what this pass learnt: classes only tested against, values only in annotations, values only tested against
  let learnt = false;
  for (const n of units.values()) {
    const seen = uses.get(n.key);
    const u = n.rec.facts.units[n.unit];
    if (!seen || seen.has('other') || wholeUnits.has(n.key) || n.replacement || typeOnly.stubbed.has(n.key) || u.binds.length !== 1) continue;
    if (n.rec.repoId !== rootRec.repoId && !ctx.inlines(n.rec, rootRec.repoId)) continue;
    if (u.kind === 'class' || (u.kind === 'assign' && !seen.has('isinstance'))) {
      typeOnly.stubbed.add(n.key);
      learnt = true;
    } else if (u.kind === 'assign' && !typeOnly.aliases.has(n.key)) {
      typeOnly.aliases.add(n.key);
      learnt = true;
    }
  }
  return { result: { root, units, graph, symbols, externals, builtinsUsed, problems }, learnt };
}
