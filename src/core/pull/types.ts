/** The pull's types: its options, its report, and what each stage hands the next (resolve → emit → judge → record). */
import type { ClassRef } from '../store/target';
import { emitFile } from '../emit/emit';
import type { DependencyGraph, EmitResult } from '../emit/emit';
import type { Provenance } from '../emit/pulledFile';
import type { FileSizes } from '../emit/why';
import type { PythonParser } from '../parse/parser';
import { computeClosure } from '../resolve/closure';
import type { ClosureResult, ExtraRoot, Problem } from '../resolve/closure';
import type { ModuleRecord } from '../resolve/moduleTable';
import type { NativeBuild } from '../validate/native';
import type { FailureCategory, Requirement, Tier, ValidationReport, ValidatorPoolLike } from '../validate/runner';
import type { JudgeTimings } from '../validate/runner';

export type PullStatus = 'validated' | 'extracted' | 'failed';

export interface PullReport {
  status: PullStatus;
  target: string;
  out: string | null;
  category?: FailureCategory;
  message?: string;
  tier: Tier | null;
  validation?: ValidationReport;
  /** How far the original got with the tool's arguments (null: not imported; absent: not run). */
  originalReached?: ValidationReport['original_reached'];
  problems: Problem[];
  definitions: number;
  imports: string[];
  /** Other repositories whose code the file inlines (not installed, or asked for). */
  inlinedRepos?: string[];
  requirements?: Requirement[];
  provenance?: Provenance;
  /** The file's dependency graph by name. */
  graph?: DependencyGraph;
  /** Lines of the block, lines pulled in, and the largest definitions pulled in with why each is there. */
  sizes?: FileSizes;
  /** `.nnrag/NAME.manifest.json` beside the file (per definition: SWHID, license...). */
  manifest?: string;
  /** The folder's `.nnrag/required_repos.json`. */
  requiredRepos?: string;
  /** Compiled operators built for the file and placed beside it (`--build-native`). */
  natives?: { module: string; file: string; sources: string[]; cached: boolean; seconds: number }[];
  timings: { resolve_ms: number; emit_ms: number; validate_ms: number };
  /**
   * Each time the judge ran for this pull, by stage, and why a stage after the first needed it: the file as pulled
   * (`judge`), the repository's builders (`builder`), the builder's arguments on the file (`replay`), the block pulled
   * again with a compiled operator built (`native`), the file without what the original never ran (`slim`).
   */
  judged?: JudgeRun[];
  /** The slim stage (stageSlim.ts), when it ran: the file's lines with and without what the original never ran, how
   * many definitions that left out, and which file was written. */
  slim?: SlimSizes;
}

export interface SlimSizes {
  fullLines: number;
  slimLines: number;
  leftOut: number;
  kept: 'slim' | 'full';
}

/** One run of the judge in a pull: its stage, why it ran, and where its seconds went. */
export interface JudgeRun {
  stage: 'judge' | 'builder' | 'replay' | 'native' | 'follow' | 'slim';
  why: string;
  /** The judge's wall seconds for the stage (every builder tried, for `builder`). */
  seconds?: number;
  /** Where the seconds of the stage's verdict went (the judge's measure; informative only). */
  timings?: JudgeTimings;
  /** The builders tried, in order, each with its seconds and how it ended; those left untried for time. */
  builders?: { name: string; seconds: number; ended: string }[];
  untried?: string[];
}

export interface PullOptions {
  parser: PythonParser;
  /** Where the originals' runs are kept (validate/originalCache.ts): a block validated again runs only its copy. */
  originalCache?: string;
  /** Where to write the file; undefined: emit in memory only (benchmarks). */
  out?: string;
  /** The folder the user chose to write under: no link below it is followed (default: the file's own folder). */
  root?: string;
  python?: string;
  runner?: string;
  validate: boolean;
  timeoutMs?: number;
  memoryMb?: number;
  signal?: AbortSignal;
  /** Validate in this pool of warm interpreters instead of a fresh process per block. */
  pool?: ValidatorPoolLike;
  /**
   * Code of other indexed repositories: 'auto' (default) inlines a repository whose packages the interpreter
   * (`python`) cannot import and keeps imports of one it can; 'all' inlines every one; 'none' keeps imports. A
   * repository's own `inline` setting wins. Without an interpreter, 'auto' keeps imports.
   */
  inline?: 'auto' | 'all' | 'none';
  /** Replace an existing file that was not pulled, or was edited since (default: refuse). */
  force?: boolean;
  /** false: do not run the block's code when only a weaker sandbox than bubblewrap's is available (an error). */
  allowWeakSandbox?: boolean;
  /** Write the file's manifest and the folder's required_repos.json into `.nnrag/` beside `out` (default true). */
  manifest?: boolean;
  /** How many of the largest definitions pulled in the report names (default 10). */
  largest?: number;
  /** Copy every class the block needs whole (by default, classes other than the block keep the methods reached). */
  wholeClasses?: boolean;
  /** Keep every definition the block's code reaches (by default, a validated file leaves out the definitions of
   * other modules that its original never ran: stageSlim.ts). */
  full?: boolean;
  /**
   * How long the fallback through the repository's builders may take, in ms (default: no limit). The editor sets one:
   * a block that guessed arguments cannot build then fails in seconds, saying which builders were not tried.
   */
  builderBudgetMs?: number;
  /**
   * For a block whose file cannot run (a compiled module missing, a name unresolved): run its original alone, to
   * know how far it gets with the tool's arguments (`originalReached`). A batch sets it: its figures count the
   * blocks whose original reaches forward, the ones the tool failed before running included.
   */
  probeOriginal?: boolean;
  /** Keep the whole docstrings of the definitions pulled in (by default they keep their first paragraph). */
  fullDocstrings?: boolean;
  /** Write PEP 723 inline script metadata (the file's dependencies) into the header. */
  inlineMetadata?: boolean;
  /** Definitions a module of shared helpers beside the file provides (shared.ts): imported from `file`, not written. */
  shared?: { module: string; ids: ReadonlySet<string>; file: string };
  /** Build the repository's compiled operators the block needs from their C++ sources (cached under `cacheDir`). */
  buildNative?: { cacheDir: string };
  /** Compiled modules the block's code loads by name at run time (`importlib.import_module("pkg._ext")`), found by a
   * first validation: built with `buildNative` and registered under those names by the pulled file. */
  runtimeNatives?: string[];
}

/** What the resolve stage found of a block: its closure, the other repositories it inlines, the compiled operators
 * built for it, and how the closure was computed (the builder stage computes another with the builder's). */
export interface Resolution {
  ref: ClassRef;
  target: string;
  rec: ModuleRecord;
  unit: number;
  closure: ClosureResult;
  inlined: Set<number>;
  closureCtx: Parameters<typeof computeClosure>[0];
  /** What the closure takes in beside the block: its configuration classes and what its repository's tests built it
   * with (every later closure of the block starts from them too). */
  extraRoots: ExtraRoot[];
  /** Compiled operators built for the file (`--build-native`). */
  natives: NativeBuild[];
  timings: { t0: number; t1: number };
}

/** A block's file, made in memory by the emit stage: the resolution, the file's text and what was inlined. */
export interface Emission extends Omit<Resolution, 'timings'> {
  emitted: EmitResult;
  inlinedRepos: string[];
  emitCtx: Parameters<typeof emitFile>[1];
  timings: { t0: number; t1: number; t2: number };
}
