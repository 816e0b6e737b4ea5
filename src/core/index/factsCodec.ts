/**
 * Module facts as stored: trimmed to what resolution and `show` need, JSON, deflated. Beside them, each file keeps
 * its slim facts: only what discovery reads of every module (top-level imports, what each unit binds, `__all__`) and
 * how often each name is used, so a discovery neither inflates nor parses whole facts (a fifth of their size).
 */
import { deflateRawSync, inflateRawSync } from 'zlib';
import type { ImportFact, ModuleFacts, Unit } from '../parse/types';

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

/** `facts` with only what resolving module-level names needs (the shape the module table reads). */
export function slimFacts(f: Pick<ModuleFacts, 'all' | 'futureAnnotations' | 'imports'> & { units: Pick<Unit, 'kind' | 'binds' | 'guard'>[] }): ModuleFacts {
  return {
    docstring: '',
    all: f.all,
    futureAnnotations: f.futureAnnotations,
    imports: f.imports.filter((i) => !i.inFunction),
    units: f.units.map((u) => ({ kind: u.kind, binds: u.binds, guard: u.guard, defNames: NO_NAMES, callNames: NO_NAMES, start: 0, end: 0, startLine: 0, endLine: 0 })),
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

export function decodeSlim(blob: Uint8Array): SlimModule {
  const s = JSON.parse(inflateRawSync(blob).toString('utf8')) as StoredSlim;
  if (!Array.isArray(s.imports) || !Array.isArray(s.units) || !Array.isArray(s.uses)) throw new Error('slim facts: not this format');
  return { facts: slimFacts(s), uses: s.uses };
}
