/**
 * Registries (`@MODELS.register_module()`, `MODELS.register_module(module=C)`, `dict(type="Name")`): registering a
 * class is a side effect the file keeps only where something in it builds from that registry.
 */
import { oneLine } from '../base/text';
import type { Ref, Timing } from '../parse/types';
import type { ModuleRecord, ModuleTable } from './moduleTable';
import type { UnitNode } from './closureTypes';
import { unitKey } from './closureTypes';

/** What settling registrations needs of a walk (closureWalk.ts). */
export interface RegistrationWalk {
  readonly units: ReadonlyMap<string, UnitNode>;
  readonly queue: UnitNode[];
  registrations: Registration[];
  readonly scanned: Set<number>;
  readonly scannedFunctions: Set<number>;
  readonly table: ModuleTable;
  readonly ctx: { parse(rec: ModuleRecord): Promise<{ text: string }> };
  depend(from: UnitNode, to: UnitNode, timing: Timing): void;
  need(rec: ModuleRecord, unit: number): UnitNode;
  placeRef(node: UnitNode, ref: Ref, where: string): void;
  visit(node: UnitNode): Promise<void>;
}

/**
 * `@X.register_module(name=...)` and `X.register_module(module=C)` of the repositories that `takes` accepts: alias ->
 * class. A name registered in the root repository `repoId` wins over the others' (a framework's `BN`, `DropPath` in the
 * library it builds on are found when the root registers no such name).
 */
export function registryIndex(
  table: ModuleTable,
  repoId: number,
  takes: (rec: ModuleRecord) => boolean = (rec) => rec.repoId === repoId,
): Map<string, RegisteredName> {
  const out = new Map<string, RegisteredName>();
  const own = new Set<string>();
  for (const list of table.modules()) {
    for (const rec of list) {
      if (!takes(rec)) continue;
      const put = (alias: string, entry: RegisteredName): void => {
        if (own.has(alias) && rec.repoId !== repoId) return;
        if (rec.repoId === repoId) own.add(alias);
        else if (out.has(alias)) return;
        out.set(alias, entry);
      };
      for (const c of rec.facts.classes) if (c.registry) put(c.registry.alias ?? c.name, { rec, name: c.name });
      for (const r of rec.facts.registrations) {
        if (!r.target || !/^[A-Za-z_][\w.]*$/.test(r.target)) continue;
        // a class of the module (`register_module(module=Foo)`), or another module's (`nn.GELU`) by its own name
        const name = r.target.split('.').pop()!;
        put(r.alias ?? name, { rec, name: r.target, ...(r.unit !== undefined ? { unit: r.unit } : {}) });
      }
    }
  }
  return out;
}

/** A class registered under a name: where it is defined, and for a registration call, the statement that makes it. */
export interface RegisteredName {
  rec: ModuleRecord;
  name: string;
  unit?: number;
}

/** The units a name looked up in a registry needs: the registering statement (a call), and the class where the
 * module defines it (one it imports is reached through the statement's own reference to it, as any name is). */
export function registeredUnits(table: ModuleTable, hit: RegisteredName): number[] {
  const out: number[] = [];
  if (hit.unit !== undefined) out.push(hit.unit);
  const own = /^[A-Za-z_]\w*$/.test(hit.name) ? table.bindingUnit(hit.rec, hit.name) : undefined;
  const kind = own !== undefined ? hit.rec.facts.units[own]?.kind : undefined;
  if (own !== undefined && (kind === 'class' || kind === 'function' || hit.unit === undefined) && !out.includes(own)) out.push(own);
  return out;
}

/** A registration decorator (`@MODELS.register_module()`) of a class unit: its span, the registry and its refs. */
export interface Registration {
  node: UnitNode;
  start: number;
  end: number;
  registry: string;
  text: string;
  refs: Ref[];
  where: string;
}

/** The span of the decorator that registers the class of `unit` in a registry, if it has one. */
export function registrationSpan(rec: ModuleRecord, unit: number, text: string): { start: number; end: number; registry: string } | undefined {
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

/** Whether a registry, as `rec` names it, is needed by something else (a build from it, a string reference). */
function needed(walk: RegistrationWalk, rec: ModuleRecord, registry: string): boolean {
  const t = walk.table.resolveDotted(rec, registry);
  if (t.kind === 'symbol') return walk.units.has(unitKey(t.mod, t.unit));
  return t.kind === 'external';
}

/** A function registered by its decorator into an object (`@_AttentionBackendRegistry.register(Name.NATIVE)`): the
 * object's name. */
const REGISTERED_FUNCTION = /^\s*@\s*([A-Za-z_]\w*)\s*\.\s*register\w*\s*\(/;

/**
 * A registry the file needs keeps the functions its modules register into it by decorator: they are looked up by key
 * at run time (a backend by its enum member), never by name. Returns whether it took one in.
 */
async function takeRegisteredFunctions(walk: RegistrationWalk): Promise<boolean> {
  let added = false;
  for (const node of [...walk.units.values()]) {
    const { rec } = node;
    if (walk.scannedFunctions.has(rec.fileId)) continue;
    const candidates = rec.facts.units.flatMap((u, i) => (u.kind === 'function' && !walk.units.has(unitKey(rec, i)) ? [{ u, i }] : []));
    let waiting = false;
    if (candidates.length) {
      const { text } = await walk.ctx.parse(rec);
      for (const { u, i } of candidates) {
        const head = REGISTERED_FUNCTION.exec(text.slice(u.start, u.end))?.[1];
        if (!head) continue;
        if (!needed(walk, rec, head)) {
          waiting = true; // its registry may be needed later: looked at again then
          continue;
        }
        walk.depend(node, walk.need(rec, i), 'call');
        added = true;
      }
    }
    if (!waiting) walk.scannedFunctions.add(rec.fileId);
  }
  return added;
}

/**
 * Visits the queue until it is empty, then keeps the registrations into registries the file needs (and the
 * module-level registration calls into them), which may need more: until nothing changes. The registrations left
 * become comments that say why.
 */
export async function settleRegistrations(walk: RegistrationWalk): Promise<void> {
  for (;;) {
    while (walk.queue.length) await walk.visit(walk.queue.shift()!);
    // a registry that something else needs keeps every registration into it
    const keep = walk.registrations.filter((r) => needed(walk, r.node.rec, r.registry));
    // `MODELS.register_module('BN', module=nn.BatchNorm2d)` at module level: a registry the file builds from keeps
    // the registrations the modules in the file make into it (a name looked up by string is among them)
    let added = false;
    for (const node of [...walk.units.values()]) {
      const { rec } = node;
      if (walk.scanned.has(rec.fileId)) continue;
      // the registries the module registers into, by call or by decorator
      const registriesUsed = [...rec.facts.registrations, ...rec.facts.classes.flatMap((c) => (c.registry ? [c.registry] : []))];
      if (!registriesUsed.length) continue;
      const heads = [...new Set(registriesUsed.map((r) => r.registry.split('.')[0]))].filter((head) => needed(walk, rec, head));
      if (!heads.length) continue; // the registry may become needed later: looked at again then
      walk.scanned.add(rec.fileId);
      rec.facts.units.forEach((u, i) => {
        if ((u.kind === 'expr' || u.kind === 'compound') && heads.some((h) => u.defNames.includes(h)) && !walk.units.has(unitKey(rec, i))) {
          walk.depend(node, walk.need(rec, i), 'call');
          added = true;
        }
      });
    }
    if (await takeRegisteredFunctions(walk)) added = true;
    if (!keep.length && !added) break;
    walk.registrations = walk.registrations.filter((r) => !keep.includes(r));
    for (const r of keep) for (const ref of r.refs) walk.placeRef(r.node, ref, r.where);
  }
  for (const r of walk.registrations) {
    const registered = r.node.rec.module;
    r.node.edits.push({
      start: r.start,
      end: r.end,
      text: `# ${oneLine(r.text.replace(/\s*\n\s*/g, ' '))}: registration left out by NN-RAG (nothing here builds from ${r.registry}; registered in ${registered})\n`,
    });
  }
}
