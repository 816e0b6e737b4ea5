/** What a dependency closure is made of (closure.ts computes it, emit.ts writes it), and the keys of its parts. */
import { lowerBound } from '../base/sorted';
import type { DirectedGraph } from 'graphology';
import type { Member, ParsedModule, Timing } from '../parse/types';
import type { ModuleRecord, ModuleTable } from './moduleTable';

/** A unit closed over with the block: copied whole, or (`methodsOnDemand`) with only the methods something reaches. */
export interface ExtraRoot {
  rec: ModuleRecord;
  unit: number;
  methodsOnDemand?: boolean;
}

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
  /** Methods of a class of another module that the original's run never ran (a slim copy): left out, each stood in
   * for by a function that says so when called. */
  leftOut?: Member[];
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
  /** For an import inside a function: the repository modules it imports (their module-level code runs then). */
  modules?: ModuleRecord[];
  /** The functions running the statements that import runs in the original, to call first (closureLazy.ts). */
  loads?: string[];
}

export interface ExternalImport {
  key: string;
  module: string;
  name?: string;
  plainDotted: boolean;
  /** The name the original code binds it to. */
  bound: string;
  /** A compiled module built from the repository's sources (`--build-native`): loaded from this file beside the
   * pulled one under this module name, not imported; `register`: also made importable by its own name (`module`),
   * for code that loads it at run time (`importlib.import_module`). */
  native?: { file: string; name: string; register?: boolean };
  /** When the file first needs it: `def` when a definition needs it as the file is imported (a base class, a
   * decorator, a default), `call` when only code inside functions uses it. */
  timing?: Timing;
  /** Code of an indexed repository the file imports (an installed package the user indexed), not inlined. */
  indexed?: boolean;
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
  /** Symbols read through a module attribute (`pkg.backend.flag`) inside code that binds the same name locally
   * (`flag = pkg.backend.flag`): written as plain names they would read the local, so they are given another name. */
  shadowed?: Set<string>;
  problems: Problem[];
  /** Inlined modules used as objects: each with the symbols of its definitions taken in (name, symbol key). */
  modulesAsObjects: Map<string, { name: string; key: string }[]>;
  /** Modules that exist nowhere (compiled, or gone), imported inside functions without a handler of the failed
   * import: kept as written, failing only where the code runs them, as the original's do. */
  keptMissing: string[];
  /** Statements the original runs only when a function imports their module: by unit key, the function that runs
   * each (closureLazy.ts); written inside it, called where that import was. */
  lazy: Map<string, string>;
  /** Definitions left out because the original's run never ran them (`ClosureContext.ran`): `module.name` or
   * `module.Class.method`, in the order found. */
  leftOut: string[];
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
  /** What the original's run ran (a slim copy, `pull/stageSlim.ts`): the definitions of other modules it never ran are left out. */
  ran?: RanTrace;
}

/** The original's trace as the closure reads it: per module, the first lines of its functions that ran. */
export interface RanTrace {
  /** The sorted first lines of the functions of `rec`'s file that ran; undefined when the trace covers no such file
   * (a repository it did not record: nothing is left out of it). */
  linesOf(rec: ModuleRecord): readonly number[] | undefined;
  /** Units kept whatever the trace says (a function the file needs while it is imported: the trace starts later). */
  keep: ReadonlySet<string>;
}

/** Whether a function that starts at one of `lines` lies within lines `start` to `end` (sorted `lines`). */
export function ranWithin(lines: readonly number[], start: number, end: number): boolean {
  const lo = lowerBound(lines, start);
  return lo < lines.length && lines[lo] <= end;
}

export function unitKey(rec: ModuleRecord, unit: number): string {
  return `${rec.fileId}:${unit}`;
}

export function symbolKey(rec: ModuleRecord, name: string): string {
  return `${rec.fileId}:${name}`;
}

export function externalKey(e: Omit<ExternalImport, 'key'>): string {
  return `${e.module}|${e.name ?? ''}|${e.plainDotted ? 1 : 0}|${e.bound}`;
}

/**
 * An inlined module used as an object (`getattr(litgpt.model, name)`, `vars(aggr)`) is stood in for by a module
 * object of the file (`moduleObjectName`): made empty after the imports, and given at the end of the file every
 * definition of that module taken in, under the module's own names (closureWalk `place`, emit.ts).
 */
export const MODULE_OBJECT = '\u0000module:';

export function moduleObjectName(module: string): string {
  return `_nnrag_module_${module.replace(/\W/g, '_')}`;
}
