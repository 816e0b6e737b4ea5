/** Stage 1 of a pull, resolve: the block's closure, the repositories it inlines, the compiled operators built for it. */
import { repoKind } from '../sources/kinds';
import type { PullOptions, Resolution } from './types';
import type { PullSession } from './session';
import { dependencies, localRoots } from './roots';
import { configRoots, observedRoots } from './uses';
import { registryIndex } from '../resolve/closureRegistrations';
import { performance } from 'perf_hooks';
import type { ClassRef } from '../store/target';
import { NnragError } from '../base/errors';
import { unitsDirOf } from '../store/unitsCache';
import { loadUnits, saveUnits } from '../store/unitsCache';
import { decodePython } from '../parse/decode';
import type { PythonParser } from '../parse/parser';
import type { ParsedModule } from '../parse/types';
import { computeClosure } from '../resolve/closure';
import type { ClosureContext, ClosureResult, Problem } from '../resolve/closure';
import type { ModuleRecord } from '../resolve/moduleTable';
import { readIndexedFile } from '../store/sourceText';
import { importableModules } from '../validate/interpreter';
import type { NativeBuild } from '../validate/native';
import { buildNatives, nativeSourcesOf } from './natives';
import type { FailureCategory } from '../validate/runner';

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

/** Whether the block's repository is an installed package the interpreter imports, so that it stays an import. */
async function rootIsInstalled(session: PullSession, rootRepo: number, options: PullOptions): Promise<boolean> {
  const repo = session.repos.get(rootRepo);
  if (!repo || (options.inline ?? 'auto') !== 'auto' || repo.config.inline === true) return false;
  const tops = session.table.topLevelNames(rootRepo);
  // torch is where every pulled file runs (each imports it): an indexed torch, installed or a folder of its sources, is
  // imported from the torch installed, whatever interpreter is named (its Python needs that torch's compiled part)
  if (tops.includes('torch')) return true;
  if (!repoKind(repo.kind).installed || !options.python) return false;
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
  return localRoots(session, await companionRepos(session, repoId, python));
}

/** The other repositories of the index a repository's code runs with under `python` (those a pull inlines that it
 * depends on): the original's worker imports them from their folders, in a pull and in `validate FILE` alike. */
export async function companionRepos(session: PullSession, repoId: number, python: string): Promise<Set<number>> {
  return dependencies(session, repoId, await reposToInline(session, repoId, { python } as PullOptions));
}

export function failureOf(problems: Problem[]): { category: FailureCategory; message: string } | undefined {
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

/** Stage 1 of a pull, resolve: the block's dependency closure, which other repositories it inlines, and the compiled
 * operators built for it (`--build-native`). Nothing is written or run. */
export async function resolveBlock(session: PullSession, ref: ClassRef, options: PullOptions): Promise<Resolution> {
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
  return { ref, target, rec, unit: fact.unit, closure, inlined, closureCtx, extraRoots: configs, natives, timings: { t0, t1: performance.now() } };
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

export function runtimeNativeDetail(module: string): string {
  return `the code loads the compiled module ${module} by name at run time (importlib.import_module), and it has no Python source`;
}
