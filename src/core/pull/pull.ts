/**
 * Pull a block: resolve its dependency closure, emit one dependency-closed file, validate it with the
 * chosen interpreter, record the result. The same pipeline serves the CLI, the server and batch runs.
 */
import { tierRank } from './pulledState';
import type { PullSession } from './session';
import { dependencies, importRoots, localRoots } from './roots';
import { configRoots, observedRoots, repositoryUses } from './uses';
import { registryIndex } from '../resolve/closureRegistrations';
import { firstLine } from '../base/text';
import * as fs from 'fs';
import { promises as fsp } from 'fs';
import * as os from 'os';
import { createHash } from 'crypto';
import * as path from 'path';
import { performance } from 'perf_hooks';
import type { ClassRef } from '../store/target';
import { emitFile } from '../emit/emit';
import { bodyHash, recordedArguments, replaceProvenance, splitPulled, withInlineMetadata } from '../emit/pulledFile';
import type { DependencyGraph, EmitResult } from '../emit/emit';
import type { Provenance } from '../emit/pulledFile';
import { fileSizes } from '../emit/why';
import type { FileSizes } from '../emit/why';
import { writeManifests } from '../emit/manifest';
import { errorMessage, NnragError } from '../base/errors';
import { findTarget } from '../store/target';
import type { IndexDb } from '../store/database';
import { setValidation } from '../store/files';
import { unitsDirOf } from '../store/unitsCache';
import { loadUnits, saveUnits } from '../store/unitsCache';
import { decodePython } from '../parse/decode';
import type { PythonParser } from '../parse/parser';
import type { ParsedModule } from '../parse/types';
import { BuilderIndex } from '../resolve/builders';
import { shortenDocstrings } from '../emit/docstrings';
import { inlineMetadata } from '../validate/requirements';
import { computeClosure } from '../resolve/closure';
import type { ClosureContext, ClosureResult, Problem } from '../resolve/closure';
import type { ModuleRecord } from '../resolve/moduleTable';
import { isImported, readIndexedFile } from '../store/sourceText';
import { committedBlob } from '../sources/open';
import { importableModules, stdlibModules } from '../validate/sandbox';
import { writeSafely, writeText } from '../emit/writeSafe';
import { isValidated, validateFile } from '../validate/runner';
import { keptIn } from '../validate/originalCache';
import { DEFAULT_TIMEOUT_S } from '../validate/limits';
import type { NativeBuild } from '../validate/native';
import { buildNatives, nativeNote, nativeSourcesOf, placeNatives } from './natives';
import type { FailureCategory, OriginalClass, Requirement, Tier, ValidationReport, ValidatorPoolLike } from '../validate/runner';
import type { ValidateOptions } from '../validate/report';

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
   * again with a compiled operator built (`native`).
   */
  judged?: JudgeRun[];
}

/** One run of the judge in a pull: its stage, and why it ran. */
export interface JudgeRun {
  stage: 'judge' | 'builder' | 'replay' | 'native';
  why: string;
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

/** The largest recipe (in JSON characters) a pulled file's header keeps. */
const MAX_RECIPE_CHARS = 20_000;

async function parseRecord(session: PullSession, parser: PythonParser, rec: ModuleRecord): Promise<ParsedModule> {
  const cached = session.parsed.get(rec.fileId);
  if (cached) return cached;
  const repo = session.repos.get(rec.repoId)!;
  const file = session.files.get(rec.fileId)!;
  const bytes = await readIndexedFile(repo, file.path, file.hash, session.sources);
  // what the index's parse kept of this very content (its blob id) saves parsing it again
  const units = unitsDirOf(session.db);
  const kept = units && loadUnits(units.dir, file.hash, rec.facts.units.length);
  const decoded = kept && decodePython(bytes);
  if (kept && decoded?.ok) {
    const parsed: ParsedModule = { facts: rec.facts, text: decoded.text, ...kept };
    session.parsed.set(rec.fileId, parsed);
    return parsed;
  }
  const outcome = parser.parse(bytes, Number.MAX_SAFE_INTEGER);
  if (!outcome.ok) throw new NnragError('not-found', `${repo.name}/${file.path} no longer parses: ${outcome.detail}`);
  if (units) saveUnits(units.dir, file.hash, outcome, true);
  session.parsed.set(rec.fileId, outcome);
  return outcome;
}

/** `text` with its docstrings cut (docstrings.ts), from the session's memory when it was cut before. */
function shortened(session: PullSession, text: string, parser: PythonParser): string {
  if (!text.includes('"""') && !text.includes("'''")) return text;
  const key = createHash('sha1').update(text).digest('hex');
  let out = session.shortened.get(key);
  if (out === undefined) {
    if (session.shortened.size > 20_000) session.shortened.clear();
    out = shortenDocstrings(text, (t) => parser.docstrings(t));
    session.shortened.set(key, out);
  }
  return out;
}

/** Names of the other repositories whose code the closure inlines. */
function inlinedNames(session: PullSession, closure: ClosureResult, rootRepo: number): string[] {
  const ids = new Set<number>();
  for (const n of closure.units.values()) if (n.rec.repoId !== rootRepo) ids.add(n.rec.repoId);
  return [...ids].map((id) => session.repos.get(id)?.name ?? String(id)).sort();
}

/** Whether the block's repository is an installed package the interpreter imports, so that it stays an import. */
async function rootIsInstalled(session: PullSession, rootRepo: number, options: PullOptions): Promise<boolean> {
  const repo = session.repos.get(rootRepo);
  if (!repo || (options.inline ?? 'auto') !== 'auto' || repo.config.inline === true) return false;
  const tops = session.table.topLevelNames(rootRepo);
  // torch is where every pulled file runs (each imports it): an indexed torch, installed or a folder of its sources, is
  // imported from the torch installed, whatever interpreter is named (its Python needs that torch's compiled part)
  if (tops.includes('torch')) return true;
  if (repo.kind !== 'python-env' || !options.python) return false;
  const importable = await importableModules(options.python, tops);
  return tops.some((n) => importable.has(n));
}

/** The other repositories whose code a pull from `rootRepo` inlines (see PullOptions.inline). */
async function reposToInline(session: PullSession, rootRepo: number, options: PullOptions): Promise<Set<number>> {
  const mode = options.inline ?? 'auto';
  const out = new Set<number>();
  const undecided: number[] = [];
  for (const [id, repo] of session.repos) {
    if (id === rootRepo) continue;
    const own = repo.config.inline;
    if (own === true || (own === undefined && mode === 'all')) out.add(id);
    else if (own === undefined && mode === 'auto' && options.python) undecided.push(id);
  }
  if (undecided.length) {
    const names = undecided.flatMap((id) => session.table.topLevelNames(id));
    const importable = await importableModules(options.python!, names);
    for (const id of undecided) {
      const tops = session.table.topLevelNames(id);
      if (tops.length && !tops.some((n) => importable.has(n))) out.add(id);
    }
  }
  return out;
}

/**
 * The other local repositories a repository's code runs with when the interpreter cannot import them (those a pull
 * from it inlines): the folders they import from (after its own) and the folders to mount. The observer runs the
 * repository's own entry points with them, as the original's worker does.
 */
export async function companionRoots(session: PullSession, repoId: number, python: string): Promise<{ roots: string[]; mounts: string[] }> {
  return localRoots(session, dependencies(session, repoId, await reposToInline(session, repoId, { python } as PullOptions)));
}

const committed = new WeakMap<PullSession, Map<string, Promise<string | undefined>>>();

/** Of the modules `recs`, the files of a local git checkout whose indexed blob is not the one its commit holds at that
 * path (changed or added and not committed); each asked of the checkout once a session. */
async function uncommittedFiles(session: PullSession, recs: ModuleRecord[]): Promise<Set<number>> {
  let known = committed.get(session);
  if (!known) committed.set(session, (known = new Map()));
  const out = new Set<number>();
  for (const rec of recs) {
    const repo = session.repos.get(rec.repoId);
    const file = session.files.get(rec.fileId);
    if (!repo || !file || repo.kind !== 'folder' || isImported(repo) || !repo.commit || !/^[0-9a-f]{40}$/.test(repo.commit)) continue;
    const key = `${repo.root}\0${repo.commit}\0${file.path}`;
    let blob = known.get(key);
    if (!blob) known.set(key, (blob = committedBlob(repo.root, repo.commit, file.path)));
    if ((await blob) !== file.hash) out.add(rec.fileId);
  }
  return out;
}

const states = new WeakMap<PullSession, Map<number, string>>();

/** A digest of the path and blob of every indexed file of the repositories `ids` (each read once a session). */
function repositoryState(session: PullSession, ids: Iterable<number>): string {
  let known = states.get(session);
  if (!known) states.set(session, (known = new Map()));
  const h = createHash('sha256');
  for (const id of [...new Set(ids)].sort((a, b) => a - b)) {
    let one = known.get(id);
    if (one === undefined) {
      const files = createHash('sha256');
      session.db.each("SELECT path, hash FROM files WHERE repo_id = ? AND status != 'skipped' ORDER BY path", [id], (r) =>
        files.update(`${String(r.path)}\0${String(r.hash)}\n`),
      );
      known.set(id, (one = files.digest('hex')));
    }
    h.update(`${id}:${one}\n`);
  }
  return h.digest('hex');
}

/** Where the original class can be imported from for the equivalence check, or why it cannot. `inlined`: the
 * other repositories whose code the copy inlines (their folders go on the original's path too). */
export function originalOf(session: PullSession, ref: ClassRef, inlined: Iterable<number> = []): OriginalClass | { unavailable: string } {
  const repo = session.repos.get(ref.repoId);
  if (!repo) return { unavailable: 'its repository is not in the index' };
  if (repo.kind === 'python-env') return { module: ref.module, class: ref.name, path: null };
  if (isImported(repo) && repo.kind === 'folder')
    return { unavailable: 'its repository came with an imported index, which names no folder on this machine to import the original from' };
  const [folder, ...rest] = importRoots(repo);
  if (!folder) return { unavailable: `a ${repo.kind} source has no checkout to import the original from` };
  if (!fs.existsSync(repo.root)) return { unavailable: `its repository's folder ${repo.root} is not on this machine` };
  // the judge checks that the class it imports comes from this file, unchanged since it was indexed
  const file = session.files.get(ref.fileId);
  const source = file ? path.join(repo.root, file.path) : undefined;
  const others = localRoots(session, inlined);
  const also = [...new Set([...rest, ...others.roots])].filter((f) => f !== folder);
  const mounts = [...new Set([repo.root, ...others.mounts])];
  return {
    module: ref.module,
    class: ref.name,
    path: folder,
    ...(also.length ? { also } : {}),
    mounts,
    state: repositoryState(session, [ref.repoId, ...inlined]),
    ...(source && fs.existsSync(source) ? { file: source, blob: file!.hash } : {}),
  };
}

/**
 * A validation report as the user reads it: why the block was not compared when its original is unavailable, and
 * for a file holding the user's edits that differs, that the difference is theirs.
 */
export function explained(report: ValidationReport, original: OriginalClass | { unavailable: string } | undefined, edited = false): ValidationReport {
  let out = report;
  if (original && 'unavailable' in original && out.ok && !out.equivalence)
    out = { ...out, equivalence: { status: 'unavailable', reason: original.unavailable } };
  if (edited && out.category === 'differs') out = { ...out, message: `differs from the original (your edits): ${out.message ?? ''}` };
  return out;
}

/**
 * The original of a pulled file, as its header names it: the class in its repository, at the blob it was pulled
 * from (the judge refuses a file that changed since), or why it cannot be compared.
 */
export function originalOfPulled(session: PullSession, prov: Provenance): OriginalClass | { unavailable: string } {
  let ref: ClassRef;
  try {
    ref = findTarget(session.db, prov.target);
  } catch (err) {
    return { unavailable: `its original ${prov.target} is not in the index: ${errorMessage(err)}` };
  }
  const named = new Set(prov.definitions.map((d) => d.repo));
  const inlined = [...session.repos.values()].filter((r) => r.id !== ref.repoId && named.has(r.name)).map((r) => r.id);
  const found = originalOf(session, ref, inlined);
  if (!('module' in found)) return found;
  const own = prov.definitions.find((d) => d.module === ref.module && d.names.includes(ref.name));
  return own && found.file ? { ...found, blob: own.blob } : found;
}

function failureOf(problems: Problem[]): { category: FailureCategory; message: string } | undefined {
  const native = problems.filter((p) => p.kind === 'native-extension');
  if (native.length) return { category: 'native-extension', message: native.map((p) => p.detail).join('; ') };
  const unparsed = problems.filter((p) => p.kind === 'unparsed');
  if (unparsed.length) return { category: 'unresolved', message: unparsed.map((p) => p.detail).join('; ') };
  // `import pkg` then `pkg` itself as a value (`pkg.__dict__`, passed along): its code is inlined, no module remains
  const objects = problems.filter((p) => p.kind === 'module-object');
  if (objects.length)
    return {
      category: 'unresolved',
      message: objects
        .map((p) => `${p.detail}: its code is inlined into this file, so no module ${p.name} exists to use (the names it defines are used directly)`)
        .join('; '),
    };
  return undefined;
}

/** A block's file, made in memory: its closure, the file's text and what was inlined. */
export interface Emission {
  target: string;
  rec: ModuleRecord;
  unit: number;
  closure: ClosureResult;
  emitted: EmitResult;
  inlined: Set<number>;
  inlinedRepos: string[];
  closureCtx: Parameters<typeof computeClosure>[0];
  emitCtx: Parameters<typeof emitFile>[1];
  /** Compiled operators built for the file (`--build-native`). */
  natives: NativeBuild[];
  timings: { t0: number; t1: number; t2: number };
}

/** Resolves and emits `ref`'s file in memory (nothing written, nothing run). */
export async function emitBlock(session: PullSession, ref: ClassRef, options: PullOptions): Promise<Emission> {
  const t0 = performance.now();
  const target = `${ref.repo}:${ref.module}.${ref.name}`;
  const rec = session.table.lookupIn(ref.module, ref.repoId);
  const fact = rec?.facts.classes.filter((c) => c.name === ref.name).pop();
  if (!rec || !fact) throw new NnragError('not-found', `${target} is not in the index any more; run 'nn-rag index' again`);

  const inlined = await reposToInline(session, ref.repoId, options);
  // a block of an installed package the interpreter imports (torch from an indexed torch): its own module is
  // inlined, what it uses of the package is imported from where the package defines it
  const installed = await rootIsInstalled(session, ref.repoId, options);
  const closureCtx = {
    table: session.table,
    parse: (r: ModuleRecord) => parseRecord(session, options.parser, r),
    inlines: (r: ModuleRecord, rootRepo: number) => (r.repoId === rootRepo && (!installed || r.fileId === rec.fileId)) || inlined.has(r.repoId),
    skippedReason: (module: string, repoId: number) => session.skipped.get(`${repoId}:${module}`),
    wholeClasses: options.wholeClasses,
    natives: undefined as ClosureContext['natives'],
  };
  // the files of a git checkout that its commit does not hold as indexed (changes not committed): said in provenance
  const uncommitted = new Set<number>();
  const emitCtx = {
    parsed: (r: ModuleRecord) => session.parsed.get(r.fileId)!,
    source: (r: ModuleRecord) => {
      const repo = session.repos.get(r.repoId)!;
      const file = session.files.get(r.fileId)!;
      return {
        repo: repo.name,
        url: repo.url,
        location: repo.location,
        commit: repo.commit,
        license: repo.license,
        path: file.path,
        blob: file.hash,
        ...(uncommitted.has(r.fileId) ? { uncommitted: true } : {}),
      };
    },
    // the interpreter's own standard library, when there is one to ask
    stdlib: options.python ? await stdlibModules(options.python) : undefined,
    shorten: options.fullDocstrings ? undefined : (text: string) => shortened(session, text, options.parser),
  };
  // a configuration class the block is built from goes in whole: the judge builds one from its defaults on both sides
  const configs = [...configRoots(session.table, rec, fact)];
  // and the classes and functions the repository's own tests built it with (an observed call's `$call`, `$name`)
  const registries = registryIndex(session.table, ref.repoId, (r) => r.repoId === ref.repoId || inlined.has(r.repoId));
  for (const r of observedRoots(session, rec, ref.name, registries)) if (!configs.some((c) => c.rec === r.rec && c.unit === r.unit)) configs.push(r);
  let closure = await computeClosure(closureCtx, rec, fact.unit, configs);
  let natives: NativeBuild[] = [];
  // what --build-native builds: the compiled modules the file needs, and those imported inside functions (kept as
  // written without it: they fail only where the code runs them)
  const compiled = [
    ...closure.problems,
    ...closure.keptMissing.map((name): Problem => ({ kind: 'native-extension', name, detail: `${name} is imported inside a function` })),
  ];
  if (options.buildNative && compiled.some((p) => p.kind === 'native-extension')) {
    const made = await buildNatives(session, ref.repoId, compiled, { ...options, cacheDir: options.buildNative.cacheDir });
    natives = made.builds;
    if (natives.length) {
      closureCtx.natives = new Map(natives.map((b) => [b.module, { file: b.fileName, name: b.buildName }]));
      closure = await computeClosure(closureCtx, rec, fact.unit, configs);
    }
    for (const p of closure.problems) if (p.kind === 'native-extension' && made.failed.has(p.name)) p.detail = made.failed.get(p.name)!;
  } else if (!options.buildNative) {
    for (const p of closure.problems.filter((q) => q.kind === 'native-extension')) {
      if (await nativeSourcesOf(session, ref.repoId, p.name)) p.detail += ' (nn-rag pull --build-native builds it from the C++ sources of the repository)';
    }
  }
  if (options.buildNative && options.runtimeNatives?.length) natives.push(...(await runtimeNativesOf(session, ref.repoId, closure, options)));
  const t1 = performance.now();
  const inlinedRepos = inlinedNames(session, closure, ref.repoId);
  const notes = inlinedRepos.length
    ? [
        `also inlined: code of ${inlinedRepos.join(', ')} (${options.inline === 'all' ? 'as asked' : `indexed, and not importable by ${options.python ?? 'the interpreter'}`})`,
      ]
    : [];
  notes.push(...natives.map(nativeNote));
  if (closure.keptMissing.length)
    notes.push(
      `imported inside functions as written, found nowhere (compiled, or gone): ${closure.keptMissing.join(', ')}; only code that runs them needs them`,
    );
  for (const id of await uncommittedFiles(
    session,
    [...closure.units.values()].map((n) => n.rec),
  ))
    uncommitted.add(id);
  const emitted = emitFile(closure, { ...emitCtx, notes, provided: options.shared }, target);
  const t2 = performance.now();
  return { target, rec, unit: fact.unit, closure, emitted, inlined, inlinedRepos, closureCtx, emitCtx, natives, timings: { t0, t1, t2 } };
}

/**
 * Builds the compiled modules the code loads by name at run time (`options.runtimeNatives`) and makes the file
 * register them under those names; one that cannot be built becomes the file's problem, with the reason.
 */
async function runtimeNativesOf(session: PullSession, rootRepo: number, closure: ClosureResult, options: PullOptions): Promise<NativeBuild[]> {
  const problems: Problem[] = options.runtimeNatives!.map((m) => ({ kind: 'native-extension', name: m, detail: runtimeNativeDetail(m) }));
  const made = await buildNatives(session, rootRepo, problems, { ...options, cacheDir: options.buildNative!.cacheDir });
  for (const b of made.builds) {
    const e = { module: b.module, plainDotted: false, bound: '', native: { file: b.fileName, name: b.buildName, register: true } };
    closure.externals.set(`native:${b.module}`, { ...e, key: `native:${b.module}` });
  }
  for (const p of problems) if (made.failed.has(p.name)) closure.problems.push({ ...p, detail: made.failed.get(p.name)! });
  return made.builds;
}

function runtimeNativeDetail(module: string): string {
  return `the code loads the compiled module ${module} by name at run time (importlib.import_module), and it has no Python source`;
}

/**
 * A compiled module the code loads by name at run time, learnt from a failed validation: the import asked for
 * `pkg._ext` and failed on `pkg`, a package of an indexed repository whose code the file inlines, which has no
 * Python module of that name. Undefined for any other failure.
 */
function runtimeNativeOf(session: PullSession, v: ValidationReport, rootRepo: number, inlined: Set<number>): string | undefined {
  const asked = v.requested_module;
  if (v.ok || !asked || !/^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$/.test(asked) || (v.category !== 'missing-package' && v.category !== 'import-error')) return undefined;
  const top = asked.split('.')[0];
  const repos = [rootRepo, ...inlined].filter((id) => session.table.topLevelNames(id).includes(top));
  if (!repos.length || repos.some((id) => session.table.lookupIn(asked, id))) return undefined;
  return asked;
}

export async function pullBlock(session: PullSession, ref: ClassRef, options: PullOptions): Promise<PullReport> {
  const { target, rec, unit, closure, emitted, inlined, inlinedRepos, closureCtx, emitCtx, natives, timings } = await emitBlock(session, ref, options);
  const { t0, t1, t2 } = timings;
  const report: PullReport = {
    status: 'extracted',
    target,
    out: options.out ? path.resolve(options.out) : null,
    tier: null,
    problems: closure.problems,
    definitions: emitted.order.length,
    imports: emitted.thirdParty,
    ...(inlinedRepos.length ? { inlinedRepos } : {}),
    graph: emitted.graph,
    sizes: fileSizes(emitted.graph, ref.module, ref.name, emitted.code, options.largest),
    provenance: emitted.provenance,
    timings: { resolve_ms: round(t1 - t0), emit_ms: round(t2 - t1), validate_ms: 0 },
  };
  if (options.out) {
    await writeSafely(path.resolve(options.out), emitted.code, options.force, options.root);
    if (natives.length) {
      await placeNatives(natives, path.resolve(options.out), options.root);
      report.natives = natives.map((b) => ({ module: b.module, file: b.fileName, sources: b.sources, cached: b.cached, seconds: b.seconds }));
    }
  }
  /** The file's text, when its header changes after the write above (the verdict, the inline metadata). */
  let final: string | undefined;
  const blocked = failureOf(closure.problems);
  if (blocked) {
    // the file is written for the user to read, but it cannot run: never validate or report success
    Object.assign(report, { status: 'failed', ...blocked });
    if (options.probeOriginal && options.validate && options.out && options.python && options.runner) {
      report.originalReached = await originalAlone(session, ref, options, inlined);
    }
  } else if (options.validate) {
    if (!options.out || !options.python || !options.runner) throw new NnragError('usage', 'validation needs an output file, an interpreter and the runner');
    const original = originalOf(session, ref, dependencies(session, ref.repoId, inlined));
    const request: ValidateOptions = {
      ...(await judging(session, rec, ref.name, options)),
      original: 'module' in original ? original : undefined,
      native: [...closure.problems.filter((p) => p.kind === 'native-extension').map((p) => p.name), ...closure.keptMissing],
      upstreamUndefined: [...new Set(closure.problems.filter((p) => p.kind === 'unresolved' && /^\w+$/.test(p.name)).map((p) => p.name))],
      companions: emitted.provenance.shared && options.shared ? [options.shared.file] : undefined,
      natives: natives.map((b) => ({ module: b.module, name: b.buildName, file: b.file, fileName: b.fileName })),
      ...keptIn(options.originalCache, emitted.provenance.definitions),
    };
    // one time limit for the whole block: its argument sets, its builders and the replay of a builder's arguments,
    // counted in the judge's own time, so that a loaded machine does not leave a stage untried (a verdict that
    // depended on the load)
    const limitMs = options.timeoutMs ?? DEFAULT_TIMEOUT_S * 1000;
    let usedMs = 0;
    const left = (): number => limitMs - usedMs;
    let v = await validateFile(options.out, request);
    usedMs += ownMs(v);
    const judged: JudgeRun[] = [{ stage: 'judge', why: 'the file as pulled' }];
    // the repository's own builder: it builds what no guessed argument set builds, and a block taken from inside
    // the model it makes runs on the inputs that model really gives it
    if (!v.ok && (v.category === 'instantiate' || v.category === 'forward')) {
      // the builder's model must be made of the copy's classes: everything of the repository is inlined for it (an
      // installed package's builders would build, and register, the installed classes)
      const builderCtx = { ...closureCtx, inlines: (r: ModuleRecord, rootRepo: number) => r.repoId === rootRepo || inlined.has(r.repoId) };
      const budgetMs = Math.min(options.builderBudgetMs ?? Infinity, left() - MIN_JUDGE_MS);
      judged.push({
        stage: 'builder',
        why: `no guessed argument set ${v.category === 'instantiate' ? 'built the block' : 'ran its forward'}: the repository's builders`,
      });
      const built = await validateWithBuilder(
        session,
        builderCtx,
        emitCtx,
        rec,
        unit,
        ref.name,
        target,
        { ...options, builderBudgetMs: budgetMs },
        'module' in original ? original : undefined,
      );
      usedMs += built.ownMs;
      if (built.report && left() > MIN_JUDGE_MS) {
        judged.push({ stage: 'replay', why: "the builder's arguments, judged again on the file written" });
        v = await replayed(built.report, options.out, { ...request, timeoutMs: left() });
      } else if (built.report) v = { ...built.report, recipe: undefined };
      else if (built.untried.length) {
        const within =
          options.builderBudgetMs !== undefined && options.builderBudgetMs <= left()
            ? `${Math.round(options.builderBudgetMs / 100) / 10} s (nn-rag pull tries them all)`
            : `the block's time limit of ${Math.round(limitMs / 1000)} s`;
        v = { ...v, message: `${v.message ?? ''}; the repository's builders ${built.untried.map((b) => `${b}()`).join(', ')} were not tried within ${within}` };
      }
    }
    const runtime = runtimeNativeOf(session, v, ref.repoId, inlined);
    if (runtime && options.buildNative && !options.runtimeNatives?.includes(runtime)) {
      // the operator it loads by name, built and registered: the block pulled and judged again with it
      const again = await pullBlock(session, ref, { ...options, runtimeNatives: [...(options.runtimeNatives ?? []), runtime] });
      return {
        ...again,
        judged: [...judged, { stage: 'native', why: `${runtime} built: the block pulled and judged again with it` }, ...(again.judged ?? [])],
      };
    }
    if (runtime) {
      const buildable = !options.buildNative && (await nativeSourcesOf(session, ref.repoId, runtime));
      v = {
        ...v,
        category: 'native-extension',
        message: `${runtimeNativeDetail(runtime)} in the indexed package ${runtime.split('.')[0]}${buildable ? ' (nn-rag pull --build-native builds it from the C++ sources of the repository)' : ''}; ${v.message ?? ''}`,
      };
    }
    v = explained(v, original);
    report.judged = judged;
    settleVerdict(report, v, emitted.provenance);
    recordValidation(session.db, ref.id, report);
    final = replaceProvenance(emitted.code, emitted.provenance);
  }
  if (options.out && options.inlineMetadata) {
    // PEP 723: what `uv run` or `pipx run` installs to run the file (versions from the validating interpreter)
    final = withInlineMetadata(final ?? emitted.code, inlineMetadata(report.requirements, emitted.thirdParty));
  }
  if (options.out && final !== undefined) await writeText(path.resolve(options.out), final, options.root);
  if (options.out && options.manifest !== false) {
    // the reviewer's record next to the file, and the distributions it needs (validation tells the versions)
    const written = await writeManifests(path.resolve(options.out), emitted.provenance, report.requirements, splitPulled(emitted.code).body, options.root);
    report.manifest = written.manifest;
    report.requiredRepos = written.requiredRepos;
  }
  if (report.status !== 'failed' && closure.problems.length) {
    report.message = [report.message, ...closure.problems.map((p) => p.detail)].filter(Boolean).join('; ');
  }
  return report;
}

/** The report as verdict `v` says (its status, tier, message), and the file's provenance record (for hovers). */
function settleVerdict(report: PullReport, v: ValidationReport, provenance: Provenance): void {
  report.validation = v;
  if (v.original_reached !== undefined) report.originalReached = v.original_reached;
  report.tier = v.tier;
  report.requirements = v.requirements;
  report.timings.validate_ms = round(v.seconds * 1000);
  if (isValidated(v)) {
    report.status = 'validated';
    if (v.observed) {
      report.message = `built and fed as the repository's own ${v.observed} does`;
    } else if (v.recipe) {
      report.message = `built with the arguments the repository's builder ${v.builder}() gives it (in the file's header, for nn-rag validate): no guessed argument set builds it alone`;
    } else if (v.builder) {
      report.message = v.inside
        ? `built inside the ${v.inside} that the repository's ${v.builder}() makes, and run on the inputs that model gives it: no guessed argument set builds it alone`
        : `built through the repository's own builder ${v.builder}(): no guessed argument set builds it alone`;
    }
  } else {
    report.status = 'failed';
    report.category = v.category ?? 'forward';
    report.message = v.message ?? 'validation did not reach forward';
  }
  // the validation result goes into the file's provenance record, for hovers
  provenance.validation = {
    status: report.status,
    tier: v.tier,
    category: report.category,
    args: v.args,
    kwargs: v.kwargs,
    input_shapes: v.input_shapes,
    output_shapes: v.output_shapes,
    builder: v.builder,
    ...(v.observed ? { observed: v.observed } : {}),
    ...(report.status === 'failed' && report.message ? { message: firstLine(report.message) } : {}),
    ...(report.status === 'validated' && v.tier !== 'equivalent' && v.equivalence?.reason ? { notCompared: firstLine(v.equivalence.reason) } : {}),
  };
  if (v.recipe && v.builder) provenance.builtWith = { builder: v.builder, ...v.recipe };
}

/** Below this many milliseconds of the block's time limit, no further judge is started for it. */
const MIN_JUDGE_MS = 2000;

/**
 * The builder's verdict judged again on the file written: built from the arguments the builder gave the block (its
 * recipe) where they can be written, so that the verdict is about the file itself and `nn-rag validate` can repeat
 * it. The builder's verdict stays where the file alone does not get as far.
 */
async function replayed(byBuilder: ValidationReport, file: string, request: ValidateOptions): Promise<ValidationReport> {
  const recipe = byBuilder.recipe;
  if (!recipe || JSON.stringify(recipe).length > MAX_RECIPE_CHARS) return { ...byBuilder, recipe: undefined };
  const again = await validateFile(file, { ...request, candidates: [recipe, ...(request.candidates ?? [])] });
  const asFar = again.ok && (again.tier === 'equivalent' || byBuilder.tier !== 'equivalent');
  return asFar ? { ...again, builder: byBuilder.builder, recipe } : { ...byBuilder, recipe: undefined };
}

/** How far `ref`'s original gets with the tool's arguments when run alone (null: it is not imported). */
async function originalAlone(session: PullSession, ref: ClassRef, options: PullOptions, inlined: Set<number>): Promise<ValidationReport['original_reached']> {
  const original = originalOf(session, ref, dependencies(session, ref.repoId, inlined));
  const rec = session.table.lookupIn(ref.module, ref.repoId);
  if (!('module' in original) || !rec) return null;
  const v = await validateFile(options.out!, { ...(await judging(session, rec, ref.name, options)), original, originalOnly: true });
  return v.original_reached ?? null;
}

/** What the judge is told of block `name` of `rec` whichever side it runs: the interpreter and limits, and how the
 * repository builds and calls it (its call sites' arguments, its tests). */
async function judging(session: PullSession, rec: ModuleRecord, name: string, options: PullOptions): Promise<ValidateOptions> {
  return {
    python: options.python!,
    runner: options.runner!,
    className: name,
    ...(await repositoryUses(session, rec, name, options.parser)),
    timeoutMs: options.timeoutMs,
    memoryMb: options.memoryMb,
    signal: options.signal,
    pool: options.pool,
    allowWeakSandbox: options.allowWeakSandbox,
  };
}

/**
 * How a pulled file is judged again (`validate FILE`, the editor's Validate, Update): as its pull judged it, with the
 * arguments its header records first, then the repository's own calls and examples of its original (when the index
 * still holds it), so that an unedited file gets the verdict its pull gave.
 */
export async function judgingPulled(
  session: PullSession,
  prov: Provenance | undefined,
  parser: PythonParser,
): Promise<Pick<ValidateOptions, 'candidates' | 'examples'>> {
  const recorded = recordedArguments(prov) ?? [];
  if (!prov) return {};
  let uses: Pick<ValidateOptions, 'candidates' | 'examples'> = {};
  try {
    const ref = findTarget(session.db, prov.target);
    const rec = session.table.lookupIn(ref.module, ref.repoId);
    if (rec) uses = await repositoryUses(session, rec, ref.name, parser);
  } catch {
    // the original is no longer in the index: the header's record alone
  }
  const candidates = [...recorded, ...(uses.candidates ?? [])];
  return { ...(candidates.length ? { candidates } : {}), ...(uses.examples?.length ? { examples: uses.examples } : {}) };
}

/**
 * `judged`, the verdict `validate FILE` or the editor's Validate gave a pulled file, or a better one: an unedited
 * file whose pull judged it inside its repository's builder's model (`validation.builder`, no `builtWith` the judge
 * can replay) and that got less now is pulled again into a scratch folder with validation, as its pull was; that
 * verdict is the file's when the code pulled again is the file's (its body hash) and it got further.
 */
export async function judgedByBuilderAgain(
  session: PullSession,
  parser: PythonParser,
  prov: Provenance,
  text: string,
  judged: ValidationReport,
  options: Omit<PullOptions, 'parser' | 'out' | 'validate'>,
): Promise<ValidationReport> {
  if (!prov.validation?.builder || prov.builtWith || bodyHash(text) !== prov.hash || tierRank(judged.tier) >= tierRank(prov.validation.tier)) return judged;
  const scratch = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-again-'));
  try {
    const out = path.join(scratch, 'block.py');
    const report = await pullBlock(session, findTarget(session.db, prov.target), { ...options, parser, out, manifest: false, validate: true });
    const again = await fsp.readFile(out, 'utf8').catch(() => '');
    const v = report.validation;
    return v && bodyHash(again) === prov.hash && tierRank(v.tier) > tierRank(judged.tier) ? { ...v, builder: prov.validation.builder } : judged;
  } finally {
    await fsp.rm(scratch, { recursive: true, force: true });
  }
}

/**
 * When guessed arguments cannot build the block, the repository's own builder function can (`resnet18()`):
 * the block's closure plus the builder's is emitted to a scratch file and validated through the builder.
 */
async function validateWithBuilder(
  session: PullSession,
  closureCtx: Parameters<typeof computeClosure>[0],
  emitCtx: Parameters<typeof emitFile>[1],
  rec: ModuleRecord,
  unit: number,
  name: string,
  target: string,
  options: PullOptions,
  original: OriginalClass | undefined,
): Promise<{ report?: ValidationReport; untried: string[]; ownMs: number }> {
  // the budget counts the judge's own time (ownMs), not the machine's
  let used = 0;
  let index = session.builders.get(rec.repoId);
  if (!index) {
    index = new BuilderIndex(session.table, rec.repoId);
    session.builders.set(rec.repoId, index);
  }
  // a builder may make a model without this block inside (efficientnet_b0 has no FusedMBConv): try a few
  const builders = index.buildersOf(rec, name).slice(0, 4);
  for (const [i, b] of builders.entries()) {
    if (options.builderBudgetMs !== undefined && used > options.builderBudgetMs - MIN_JUDGE_MS / 2)
      return { untried: builders.slice(i).map((u) => u.name), ownMs: used };
    const combined = await computeClosure(closureCtx, rec, unit, [{ rec: b.rec, unit: b.unit }]);
    if (failureOf(combined.problems)) continue;
    const emitted = emitFile(combined, emitCtx, target);
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-builder-'));
    try {
      const file = path.join(dir, 'block_with_builder.py');
      await fsp.writeFile(file, emitted.code, 'utf8');
      const builder = emitted.provenance.renamed[`${b.rec.module}.${b.name}`] ?? b.name;
      const v = await validateFile(file, {
        python: options.python!,
        runner: options.runner!,
        className: name,
        builder,
        // within the budget: a builder's run is a forked worker of the judge, stopped at no cost to the next pull
        timeoutMs:
          options.builderBudgetMs === undefined ? options.timeoutMs : Math.max(1000, Math.min(options.timeoutMs ?? Infinity, options.builderBudgetMs - used)),
        memoryMb: options.memoryMb,
        signal: options.signal,
        pool: options.pool,
        allowWeakSandbox: options.allowWeakSandbox,
        original: original && { ...original, builder: { module: b.rec.module, name: b.name } },
        // the builder's original run is kept as a block's is: pulled again, only the copy's side runs
        ...keptIn(options.originalCache, emitted.provenance.definitions),
      });
      // a copy that differs from its original is a finding, never hidden behind the failure before it
      used += ownMs(v);
      if (v.ok || v.category === 'differs') return { report: { ...v, builder: `${b.rec.module}.${b.name}` }, untried: [], ownMs: used };
      // stopped by the budget, it was not really tried
      if (options.builderBudgetMs !== undefined && v.category === 'timeout') return { untried: builders.slice(i).map((u) => u.name), ownMs: used };
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  }
  return { untried: [], ownMs: used };
}

/** The judge's own time for a validation, in ms (its wall time where an older judge did not say). */
function ownMs(v: ValidationReport): number {
  return (v.own_seconds ?? v.seconds ?? 0) * 1000;
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

function recordValidation(db: IndexDb, classId: number, report: PullReport): void {
  setValidation(db, classId, validationRecord(report));
}

/** The verdict as the index records it: what the validator observed, for specs (how it was built, the tensors). */
export function validationRecord(report: PullReport): string {
  return JSON.stringify({
    status: report.status,
    tier: report.tier,
    category: report.category ?? null,
    at: new Date().toISOString(),
    args: report.validation?.args ?? null,
    kwargs: report.validation?.kwargs ?? null,
    input_shapes: report.validation?.input_shapes ?? null,
    output_shapes: report.validation?.output_shapes ?? null,
    builder: report.validation?.builder ?? null,
  });
}

export { requirementsText } from '../validate/requirements';
