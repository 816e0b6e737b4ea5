/**
 * Method deferral: a class the block needs (not the block) keeps the methods something in the file reaches by name;
 * the others wait in `waiting` until a name reaches them (`self.x` on the class or a relative, `obj.x` on anything).
 */
import type { ClassFact, Member, ParsedModule, Ref } from '../parse/types';
import type { ModuleRecord, ModuleTable } from './moduleTable';
import type { UnitNode } from './closureTypes';
import { unitKey, symbolKey } from './closureTypes';

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
export function droppable(name: string): boolean {
  return !/^__\w+__$/.test(name) && !FRAMEWORK_CALLED.has(name);
}

/**
 * String literals (with their prefix) and comments, strings first: a `#` or a quote inside a string is not taken for what
 * it is outside. Comments and docstrings (triple-quoted, not f-strings) say nothing the code reaches.
 */
export const STRINGS = /([rRbBuUfF]{0,2})("""[\s\S]*?"""|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|#[^\n]*/g;

/** The code of `text` without its strings and comments (each replaced by a space). */
export function codeOnly(text: string): string {
  return text.replace(STRINGS, ' ');
}

/** A name read as a member: on the object's own class (`self.x`, `cls.x`, `super().x`) or on any object. */
export interface Reach {
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
export function reachedIn(parsed: ParsedModule, unit: number, start: number, end: number): Reached[] {
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
export function reachesOf(
  list: Reached[],
  into: Reach[],
  family: string | undefined,
  take: (at: number) => boolean,
  bare: (at: number) => boolean = () => false,
): void {
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
export function refsWithin(parsed: ParsedModule, unit: number, span: { start: number; end: number }): Ref[] {
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
export function outsideOf(members: readonly { start: number; end: number }[]): (at: number) => boolean {
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

/** The methods of the file's classes that wait for a name to reach them, and the names reached so far. */
export class MethodDeferral {
  private readonly plainClasses = new Map<string, boolean>();
  private readonly ancestry = new Map<string, Set<string>>();
  private readonly reachedAnywhere = new Set<string>();
  private readonly reachedFrom = new Map<string, UnitNode[]>();
  private readonly waiting = new Map<string, { node: UnitNode; member: Member; parsed: ParsedModule; where: string }[]>();
  /** Names read as members, still to be followed (reachAll). */
  readonly toReach: Reach[] = [];

  constructor(
    private readonly table: ModuleTable,
    private readonly units: ReadonlyMap<string, UnitNode>,
    private readonly inlines: (rec: ModuleRecord, rootRepo: number) => boolean,
    private readonly rootRepo: number,
    /** Takes in what a member that waited needs, once a name reaches it. */
    private readonly takeIn: (node: UnitNode, parsed: ParsedModule, where: string, inside: (at: number) => boolean, member: Member) => void,
  ) {}

  /** Whether a class's methods are called only by name from Python code (its bases are such classes, or PyTorch's). */
  plainClass(rec: ModuleRecord, fact: ClassFact): boolean {
    const key = symbolKey(rec, fact.name);
    const known = this.plainClasses.get(key);
    if (known !== undefined) return known;
    this.plainClasses.set(key, false); // a cycle of bases: not plain
    const plain = fact.bases.every((base) => {
      const t = this.table.resolveDotted(rec, base.replace(/\[.*$/s, ''));
      if (t.kind === 'builtin') return t.name === 'object';
      if (t.kind === 'external') return /^(torch|abc|typing)(\.|$)/.test(t.module);
      if (t.kind !== 'symbol' || !this.inlines(t.mod, this.rootRepo)) return false;
      const baseFact = t.mod.facts.classes.find((c) => c.name === t.name && c.unit === t.unit);
      return !!baseFact && this.plainClass(t.mod, baseFact);
    });
    this.plainClasses.set(key, plain);
    return plain;
  }

  /** The class units a class unit derives from, in the index (resolved the way its module reads its bases). */
  ancestors(rec: ModuleRecord, unit: number): Set<string> {
    const key = unitKey(rec, unit);
    let out = this.ancestry.get(key);
    if (out) return out;
    out = new Set();
    this.ancestry.set(key, out); // a cycle of bases ends here
    const fact = rec.facts.classes.find((c) => c.unit === unit && c.name === rec.facts.units[unit].name);
    for (const base of fact?.bases ?? []) {
      const t = this.table.resolveDotted(rec, base.replace(/\[.*$/s, ''));
      if (t.kind !== 'symbol') continue;
      out.add(unitKey(t.mod, t.unit));
      for (const k of this.ancestors(t.mod, t.unit)) out.add(k);
    }
    return out;
  }

  /** Whether `a` and the unit `bKey` are one class or one derives from the other. */
  related(a: UnitNode, bKey: string, b: { rec: ModuleRecord; unit: number }): boolean {
    return a.key === bKey || this.ancestors(a.rec, a.unit).has(bKey) || this.ancestors(b.rec, b.unit).has(a.key);
  }

  /** Whether kept code reaches the member `name` of `node` (methods left out wait for their name, see reachedIn). */
  isReached(name: string, node: UnitNode): boolean {
    return this.reachedAnywhere.has(name) || (this.reachedFrom.get(name) ?? []).some((from) => this.related(from, node.key, node));
  }

  /** Follows the names read as members: a method waiting for one is taken in, and what it reads followed in turn. */
  reachAll(): void {
    while (this.toReach.length) {
      const { name, family } = this.toReach.pop()!;
      if (this.reachedAnywhere.has(name)) continue;
      const from = family === undefined ? undefined : this.units.get(family);
      if (from) {
        const list = this.reachedFrom.get(name) ?? [];
        if (list.includes(from)) continue;
        list.push(from);
        this.reachedFrom.set(name, list);
      } else {
        this.reachedAnywhere.add(name);
      }
      const list = this.waiting.get(name);
      if (!list) continue;
      const now = list.filter((w) => !from || this.related(from, w.node.key, w.node));
      if (now.length === list.length) this.waiting.delete(name);
      else
        this.waiting.set(
          name,
          list.filter((w) => !now.includes(w)),
        );
      for (const { node, member, parsed, where } of now) {
        node.dropped = node.dropped?.filter((m) => m !== member);
        this.takeIn(node, parsed, where, (at) => at >= member.start && at < member.end, member);
        const u = node.rec.facts.units[node.unit];
        reachesOf(reachedIn(parsed, node.unit, u.start, u.end), this.toReach, node.key, (at) => at >= member.start && at < member.end);
      }
    }
  }

  /** `deferred` members of `node` wait for their names. */
  wait(node: UnitNode, deferred: Member[], parsed: ParsedModule, where: string): void {
    node.dropped = [...deferred];
    for (const member of deferred) {
      const list = this.waiting.get(member.name) ?? [];
      list.push({ node, member, parsed, where });
      this.waiting.set(member.name, list);
    }
  }
}
