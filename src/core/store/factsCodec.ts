/**
 * Module facts as stored: trimmed to what resolution and `show` need, JSON, deflated. Beside them, each file keeps
 * its slim facts: only what discovery reads of every module (top-level imports, what each unit binds, `__all__`) and
 * how often each name is used, so a discovery neither inflates nor parses whole facts (a fifth of their size).
 */
import { deflateRawSync, inflateRawSync } from 'zlib';
import type { ImportFact, ModuleFacts, Unit, UnitKind } from '../parse/types';

export function encodeFacts(facts: ModuleFacts): Uint8Array {
  const lean: ModuleFacts = {
    ...facts,
    docstring: facts.docstring.slice(0, 300),
    // class docstrings and comments live in the `classes` table, not twice
    classes: facts.classes.map((c) => ({ ...c, docstring: '', comments: '' })),
    functions: facts.functions.map((f) => ({ ...f, docstring: f.docstring.slice(0, 160) })),
  };
  return deflateRawSync(Buffer.from(JSON.stringify(lean)), { level: 1 });
}

export function decodeFacts(blob: unknown): ModuleFacts {
  const bytes = blob instanceof Uint8Array ? blob : Buffer.from(String(blob));
  return JSON.parse(inflateRawSync(bytes).toString('utf8')) as ModuleFacts;
}

/** What discovery reads of a module: slim facts, and each name with the number of its units that use it. */
export interface SlimModule {
  facts: ModuleFacts;
  uses: [string, number][];
}

/** Shared by every slim unit (nothing writes to a unit's names). */
const NO_NAMES: string[] = [];

/**
 * Gives one copy of each string to a whole table: the modules of an index import and bind the same names again and
 * again (`torch`, `nn`, `Optional`; every name of a fork), and each decoded module had its own copies.
 */
export type Intern = (s: string) => string;

export function interner(): Intern {
  const seen = new Map<string, string>();
  return (s) => {
    const kept = seen.get(s);
    if (kept !== undefined) return kept;
    seen.set(s, s);
    return s;
  };
}

const same: Intern = (s) => s;

/**
 * A unit as a slim table keeps it: its kind, what it binds and under which guard. Nothing reads the rest of a slim
 * unit, so the rest is the same for all of them: three fields a unit instead of nine, the names interned (a module
 * table of hundreds of thousands of units is held for the life of the server).
 */
class SlimUnit implements Unit {
  constructor(
    readonly kind: UnitKind,
    readonly binds: string[],
    readonly guard: Unit['guard'],
  ) {}
  get defNames(): string[] {
    return NO_NAMES;
  }
  get callNames(): string[] {
    return NO_NAMES;
  }
  get start(): number {
    return 0;
  }
  get end(): number {
    return 0;
  }
  get startLine(): number {
    return 0;
  }
  get endLine(): number {
    return 0;
  }
}

/** Units that bind nothing, one per kind and guard (a tenth of all units). */
const BINDING_NOTHING = new Map<string, SlimUnit>();

function slimUnit(u: Pick<Unit, 'kind' | 'binds' | 'guard'>, intern: Intern): Unit {
  if (!u.binds.length) {
    const key = `${u.kind} ${u.guard ?? ''}`;
    let shared = BINDING_NOTHING.get(key);
    if (!shared) BINDING_NOTHING.set(key, (shared = new SlimUnit(u.kind, NO_NAMES, u.guard)));
    return shared;
  }
  return new SlimUnit(u.kind, u.binds.map(intern), u.guard);
}

/** `i` with its names interned (in place: every caller hands over facts it has just decoded). */
function slimImport(i: ImportFact, intern: Intern): ImportFact {
  i.module = intern(i.module);
  if (i.name !== undefined) i.name = intern(i.name);
  if (i.bound !== undefined) i.bound = intern(i.bound);
  return i;
}

/**
 * `facts` with only what resolving module-level names needs (the shape the module table reads). Takes over the import
 * objects of `f` (their names are interned in place).
 */
export function slimFacts(
  f: Pick<ModuleFacts, 'all' | 'futureAnnotations' | 'imports'> & { units: Pick<Unit, 'kind' | 'binds' | 'guard'>[] },
  intern: Intern = same,
): ModuleFacts {
  return {
    docstring: '',
    all: f.all,
    futureAnnotations: f.futureAnnotations,
    imports: f.imports.filter((i) => !i.inFunction).map((i) => slimImport(i, intern)),
    units: f.units.map((u) => slimUnit(u, intern)),
    classes: [],
    functions: [],
    registrations: [],
    calls: [],
  };
}

/** Each name the units of `facts` use (at definition or call time), with the number of units that do. */
export function usesOf(facts: Pick<ModuleFacts, 'units'>): [string, number][] {
  const uses = new Map<string, number>();
  for (const u of facts.units) {
    for (const n of u.defNames) uses.set(n, (uses.get(n) ?? 0) + 1);
    for (const n of u.callNames) uses.set(n, (uses.get(n) ?? 0) + 1);
  }
  return [...uses];
}

interface StoredSlim {
  all: string[] | null;
  futureAnnotations: boolean;
  imports: ImportFact[];
  units: Pick<Unit, 'kind' | 'binds' | 'guard'>[];
  uses: [string, number][];
}

export function encodeSlim(facts: ModuleFacts): Uint8Array {
  const stored: StoredSlim = {
    all: facts.all,
    futureAnnotations: facts.futureAnnotations,
    imports: facts.imports.filter((i) => !i.inFunction),
    units: facts.units.map((u) => ({ kind: u.kind, binds: u.binds, guard: u.guard })),
    uses: usesOf(facts),
  };
  return deflateRawSync(Buffer.from(JSON.stringify(stored)), { level: 1 });
}

export function decodeSlim(blob: Uint8Array, intern: Intern = same): SlimModule {
  const s = JSON.parse(inflateRawSync(blob).toString('utf8')) as StoredSlim;
  if (!Array.isArray(s.imports) || !Array.isArray(s.units) || !Array.isArray(s.uses)) throw new Error('slim facts: not this format');
  return { facts: slimFacts(s, intern), uses: s.uses };
}
