/**
 * The catalog of observed calls: each local repository's own entry points are run in the sandbox under the observer
 * (python-runner's observe.py), which records how each of the repository's blocks was built and what its forward got.
 * Entry points: its tests (`test_*` functions with the first values of their parametrize marks, the test methods of
 * its test classes and of their mixins), its builders (argument-free functions that reach a block, composite blocks
 * that need no argument: built, then fed once), its configuration files' `model` dicts (built by its registry) and
 * its README's Python code blocks that use it (run as written).
 * The judge then builds and feeds a block as its repository did (uses.ts `repositoryUses`: observed calls first).
 * An entry is run again only when a file it imported or read changed, or the interpreter or the observer did.
 */
import { repoKind } from '../sources/kinds';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { performance } from 'node:perf_hooks';
import {
  blobsOf,
  forgetObserved,
  observedClasses,
  observedEntries,
  observedBytesBut,
  observedCoverage,
  observedSize,
  recordObserved,
  recordObserveTotal,
  stillTrue,
  type ObservedCall,
  type ObservedEntry,
} from '../store/observed';
import type { ObservedCoverage } from '../store/observed';
import type { IndexDb } from '../store/database';
import type { ModuleRecord, ModuleTable } from '../resolve/moduleTable';
import { plainText } from '../base/text';
import { BuilderIndex, callableWithoutArguments } from '../resolve/builders';
import type { ClassFact } from '../parse/types';
import { loadRepoRows, type RepoRow } from '../store/sourceText';
import { checkSandbox } from '../validate/runner';
import type { PythonParser } from '../parse/parser';
import { readmeBlocks } from './readmeExamples';
import { Judge } from '../validate/judge';
import { torchVersionKey } from '../validate/interpreter';
import { type ObserveEntry, type ObserveSpec } from '../validate/judgeRequests';
import { DEFAULT_MEMORY_MB } from '../validate/limits';
import { companionRoots } from './stageResolve';
import { type PullSession } from './session';
import { importRoots, mountRoot } from './roots';
import { buildNatives } from './natives';
import type { NativeBuild } from '../validate/native';
import { CancelledError } from '../base/errors';

/** Bumped when what the observer records changes: every entry is then observed again. */
export const OBSERVER_VERSION = '9';

/** A file of tests, as repositories lay them out. */
const TEST_FILE = /(?:^|\/)(?:tests?|testing)\/|(?:^|\/)test_[^/]*\.py$|_test\.py$/;

export interface ObserveOptions {
  python: string;
  runner: string;
  /** Reads the README's code blocks: with it, those that import the repository are run too. */
  parser?: PythonParser;
  memoryMb?: number;
  /** Seconds one entry may run (20). */
  entrySeconds?: number;
  /** Seconds one repository's entries may run in all (600). */
  repositorySeconds?: number;
  /** Entries run per repository, at most (400). */
  maxEntries?: number;
  /** Judges that run the entries side by side (default: two, or one on a machine of one core). */
  lanes?: number;
  /**
   * The blocks a batch is about to pull (class names): the entries of files that name one of them (an import, a
   * call) run first, so that a cap spent on a large repository's other tests does not leave them unobserved.
   */
  focus?: ReadonlySet<string>;
  /**
   * Build the repository's compiled operators its entries fail without (`No module named 'pkg._ext'`, a module of
   * its own package with C++ sources and no Python one), cached under `cacheDir`, and run those entries again with
   * them loaded (`pull --build-native`, `observe --build-native`).
   */
  buildNative?: { cacheDir: string };
  /** Run every entry again, cached or not. */
  force?: boolean;
  allowWeakSandbox?: boolean;
  signal?: AbortSignal;
  onProgress?: (message: string) => void;
}

export interface ObserveSummary {
  repo: string;
  /** Entry points found, run now, kept from before (unchanged), and those that stopped with an error. */
  entries: number;
  ran: number;
  cached: number;
  failed: number;
  /** Classes with at least one observed call, and those with observed inputs. */
  classes: number;
  fed: number;
  seconds: number;
  /** The catalog's rows for the repository, in bytes. */
  bytes: number;
  /** Why the repository was not observed. */
  skipped?: string;
  /** Entries not run: the time for the repository ran out first (run observe again to run them). */
  notRun?: number;
  /** The entries that failed now, by cause ("ModuleNotFoundError: pycocotools", "time", "AssertionError"). */
  failedBy?: Record<string, number>;
  /** Entries with a record of those the repository has, and its blocks seen fed (now or before). */
  coverage?: ObservedCoverage;
}

/** What stopped an entry, as a short cause to count by: the exception's class, a missing package's name, time. */
export function failureCause(error: string): string {
  if (/^stopped after /.test(error) || /time for the repository ran out/.test(error)) return 'time';
  const missing = /^ModuleNotFoundError: No module named '([\w.]+)'/.exec(error);
  if (missing) return `ModuleNotFoundError: ${missing[1].split('.')[0]}`;
  return /^([A-Za-z_][\w.]*)(?::|$)/.exec(error)?.[1] ?? 'other';
}

export type EntryPoint = ObserveEntry;

/** A configuration file, as OpenMMLab-style repositories lay them out (`configs/**.py`). */
const CONFIG_FILE = /(?:^|\/)configs?\/.*\.py$/;

/** Functions that run a program rather than build a block, whatever they call. */
const NOT_A_BUILDER = /^(?:main|train|fit|evaluate|eval|run|cli|demo|benchmark|bench|profile|parse|download|export|convert|test|setup|launch|serve)(?:_|$)/i;

/** The entry points of a repository, by id: its test functions and its test classes' test methods (their mixins'
 * too); its builders (argument-free functions that reach one of its blocks, as `resnet50()` or `vit_small()` do) and
 * its composite blocks that need no argument (a class that builds two of its blocks or more, as a whole model does);
 * its config files that bind `model` (built by the registries its blocks register in). `blocks` names the
 * repository's block classes. (README code blocks are added by `readmeEntries`.) */
export function entryPoints(table: ModuleTable, repoId: number, blocks: ReadonlySet<string> = new Set()): EntryPoint[] {
  const out = new Map<string, EntryPoint>();
  const add = (e: EntryPoint): void => void out.set(e.id, e);
  const builders = blocks.size ? new BuilderIndex(table, repoId) : null;
  const registries = registriesOf(table, repoId);
  for (const list of table.modules()) {
    for (const m of list) {
      if (m.repoId !== repoId || !/^[\w.]+$/.test(m.module)) continue;
      if (CONFIG_FILE.test(m.path)) {
        if (registries.registries.length && m.facts.units.some((u) => u.kind === 'assign' && u.binds.includes('model'))) {
          add({ id: `${m.path}::model`, module: m.module, function: 'model', kind: 'config', file: m.path, ...registries });
        }
        continue;
      }
      if (!TEST_FILE.test(m.path)) {
        if (builders) for (const e of buildersIn(table, m, blocks, builders)) add(e);
        continue;
      }
      for (const f of m.facts.functions) if (/^test/.test(f.name)) add({ id: `${m.path}::${f.name}`, module: m.module, function: f.name });
      for (const c of m.facts.classes) {
        const chain = classChain(table, m, c);
        if (!/^Test/.test(c.name) && !chain.some((k) => k.bases.some((b) => /TestCase$/.test(b)))) continue;
        const methods = new Set(chain.flatMap((k) => k.methods).filter((n) => /^test/.test(n)));
        for (const method of methods) add({ id: `${m.path}::${c.name}::${method}`, module: m.module, function: method, class: c.name });
      }
    }
  }
  return [...out.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The registries a repository's blocks are registered in (`@MODELS.register_module()`), as [module, name] where
 * they are defined, the most used first (at most 4), and the modules that register classes in them (imported when
 * a registry does not know a type yet, as a framework's registry imports its locations). */
function registriesOf(table: ModuleTable, repoId: number): { registries: [string, string][]; modules: string[] } {
  const count = new Map<string, { at: [string, string]; n: number; modules: Set<string> }>();
  for (const list of table.modules()) {
    for (const m of list) {
      if (m.repoId !== repoId) continue;
      for (const c of m.facts.classes) {
        const name = c.registry?.registry;
        if (!name || !/^[A-Za-z_]\w*$/.test(name)) continue;
        const t = table.resolveName(m, name);
        if (t.kind !== 'symbol' || !/^[\w.]+$/.test(t.mod.module)) continue;
        const key = `${t.mod.module}:${t.name}`;
        const got = count.get(key) ?? { at: [t.mod.module, t.name], n: 0, modules: new Set<string>() };
        got.n++;
        if (/^[\w.]+$/.test(m.module)) got.modules.add(m.module);
        count.set(key, got);
      }
    }
  }
  const top = [...count.values()].sort((a, b) => b.n - a.n).slice(0, 4);
  return { registries: top.map((c) => c.at), modules: [...new Set(top.flatMap((c) => [...c.modules]))].sort().slice(0, 400) };
}

/** A class and the repository's classes it derives from, nearest first: a test class's tests include those of its
 * mixins (`class UNetTests(ModelTesterMixin, unittest.TestCase)` runs the mixin's `test_output`). */
function classChain(table: ModuleTable, m: ModuleRecord, c: ClassFact, depth = 0, seen = new Set<string>()): ClassFact[] {
  const key = `${m.fileId}:${c.name}`;
  if (seen.has(key) || depth > 6) return [];
  seen.add(key);
  const out = [c];
  for (const base of c.bases) {
    if (!/^[A-Za-z_]\w*$/.test(base)) continue;
    const t = table.resolveNameBefore(m, base, c.unit);
    if (t.kind !== 'symbol') continue;
    const fact = t.mod.facts.classes.find((k) => k.name === t.name);
    if (fact) out.push(...classChain(table, t.mod, fact, depth + 1, seen));
  }
  return out;
}

/** The builders of a module's blocks (resolve/builders.ts: argument-free functions that reach the class), outside
 * the tests, and the module's composite blocks that need no argument. */
function buildersIn(table: ModuleTable, m: ModuleRecord, blocks: ReadonlySet<string>, builders: BuilderIndex): EntryPoint[] {
  const out: EntryPoint[] = [];
  for (const c of m.facts.classes) {
    if (!blocks.has(c.name)) continue;
    for (const b of builders.buildersOf(m, c.name)) {
      if (TEST_FILE.test(b.rec.path) || NOT_A_BUILDER.test(b.name) || !/^[\w.]+$/.test(b.rec.module)) continue;
      out.push({ id: `${b.rec.path}::${b.name}`, module: b.rec.module, function: b.name, kind: 'build' });
    }
    if (c.name.startsWith('_') || c.abstract || !callableWithoutArguments(c.signature)) continue;
    const parts = new Set<string>();
    for (const n of m.facts.units[c.unit]?.callNames ?? []) {
      const t = table.resolveName(m, n);
      if (t.kind === 'symbol' && t.name !== c.name && blocks.has(t.name)) parts.add(t.name);
    }
    if (parts.size >= 2) out.push({ id: `${m.path}::${c.name}`, module: m.module, function: c.name, kind: 'build' });
  }
  return out;
}

/** Entries in turn across files (the first of each file, then the second...; configs by folder, where a repository
 * keeps the variants of one model), so that a cap still reaches them all; in each turn the files that name more of
 * the repository's blocks first (`weight`: by file; a test of a model's classes before one of its tokenizer). */
export function spreadAcrossFiles(entries: EntryPoint[], weight: (file: string) => number = () => 0): EntryPoint[] {
  const byFile = new Map<string, EntryPoint[]>();
  for (const e of entries) {
    const file = e.id.slice(0, e.id.indexOf('::'));
    const group = e.kind === 'config' ? file.slice(0, file.lastIndexOf('/') + 1) : file;
    byFile.set(group, [...(byFile.get(group) ?? []), e]);
  }
  const weights = new Map([...byFile.keys()].map((g) => [g, weight(g)]));
  const lists = [...byFile.entries()].sort((a, b) => weights.get(b[0])! - weights.get(a[0])!).map(([, list]) => list);
  const out: EntryPoint[] = [];
  for (let i = 0; out.length < entries.length; i++) for (const list of lists) if (i < list.length) out.push(list[i]);
  return out;
}

/** The README's code blocks that import the repository's own modules, each an entry run as it is written. Its id
 * carries the code's hash: an edited block is another entry (what the old one saw is forgotten). */
export async function readmeEntries(session: PullSession, repo: RepoRow, parser: PythonParser): Promise<EntryPoint[]> {
  const out: EntryPoint[] = [];
  for (const [i, b] of (await readmeBlocks(repo, parser)).entries()) {
    const own = b.imports.find((imp) => session.table.lookup(imp.module, repo.id) && /^[\w.]+$/.test(imp.module));
    if (!own || b.text.length > MAX_EXAMPLE_CHARS) continue;
    const hash = createHash('sha256').update(b.text).digest('hex').slice(0, 12);
    out.push({ id: `README.md::example-${i + 1}-${hash}`, module: own.module, function: 'example', kind: 'example', code: b.text });
  }
  return out;
}

/**
 * The entries in the order they run, in turn across files; in each turn the files that name a block of `focus` come
 * first, then those that name more of the repository's blocks: every file keeps its turn, since the tests of whole
 * models build and feed the blocks inside them.
 */
function focusedFirst(entries: EntryPoint[], table: ModuleTable, repoId: number, blocks: ReadonlySet<string>, focus?: ReadonlySet<string>): EntryPoint[] {
  const weight = blocksNamedBy(table, repoId, blocks);
  if (!focus?.size) return spreadAcrossFiles(entries, weight);
  const naming = filesNaming(table, repoId, focus);
  // (a file's weight counts its blocks; naming a block about to be pulled outweighs any count)
  return spreadAcrossFiles(entries, (file) => (naming.has(file) ? 1_000_000 : 0) + weight(file));
}

/** The repository's files (by path) that import or call one of `names`. */
function filesNaming(table: ModuleTable, repoId: number, names: ReadonlySet<string>): Set<string> {
  const out = new Set<string>();
  for (const list of table.modules()) {
    for (const m of list) {
      if (m.repoId !== repoId) continue;
      const named = m.facts.imports.some((i) => i.name && names.has(i.name)) || m.facts.calls.some((c) => names.has(c.callee.split('.').pop()!));
      if (named) out.add(m.path);
    }
  }
  return out;
}

/** A README code block longer than this is not run. */
const MAX_EXAMPLE_CHARS = 20_000;

/** How many of the repository's blocks each of its files imports by name (by path). */
function blocksNamedBy(table: ModuleTable, repoId: number, blocks: ReadonlySet<string>): (file: string) => number {
  const counts = new Map<string, number>();
  for (const list of table.modules()) {
    for (const m of list) {
      if (m.repoId !== repoId) continue;
      counts.set(m.path, new Set(m.facts.imports.filter((i) => i.name && blocks.has(i.name)).map((i) => i.name)).size);
    }
  }
  return (file) => counts.get(file) ?? 0;
}

/** What an entry's observations depend on: the interpreter, the observer, and the files it imported as they are now. */
function keyOf(interpreter: string, files: Record<string, string>): string {
  const sorted = Object.keys(files)
    .sort()
    .map((p) => [p, files[p]]);
  return createHash('sha256')
    .update(JSON.stringify([OBSERVER_VERSION, interpreter, sorted]))
    .digest('hex');
}

/**
 * Observes the local repositories named (all when none): runs their entry points that changed since their last
 * observation, in the sandbox, and records what they saw in the index. The caller saves the index.
 */
export async function observeRepositories(session: PullSession, options: ObserveOptions, names?: string[]): Promise<ObserveSummary[]> {
  await checkSandbox(options);
  const interpreter = `${options.python}:${await torchVersionKey(options.python)}`;
  const out: ObserveSummary[] = [];
  for (const repo of loadRepoRows(session.db).values()) {
    if (names?.length && !names.includes(repo.name)) continue;
    out.push(await observeRepository(session, repo, interpreter, options));
  }
  return out;
}

async function observeRepository(session: PullSession, repo: RepoRow, interpreter: string, options: ObserveOptions): Promise<ObserveSummary> {
  const { db, table } = session;
  const t0 = performance.now();
  const summary: ObserveSummary = { repo: repo.name, entries: 0, ran: 0, cached: 0, failed: 0, classes: 0, fed: 0, seconds: 0, bytes: 0 };
  const [folder, ...also] = importRoots(repo);
  const mount = mountRoot(repo);
  if (!folder || !mount || !fs.existsSync(repo.root)) {
    summary.skipped = repoKind(repo.kind).workingTree ? 'its folder is not on this machine' : `a ${repoKind(repo.kind).noun} has no tests to run`;
    return summary;
  }
  const blocks = new Set(db.all('SELECT name FROM classes WHERE repo_id = ? AND is_block = 1', [repo.id]).map((r) => String(r.name)));
  const all = [...entryPoints(table, repo.id, blocks), ...(options.parser ? await readmeEntries(session, repo, options.parser) : [])];
  summary.entries = all.length;
  recordObserveTotal(db, repo.id, all.length);
  const blobs = blobsOf(db, repo.id);
  forgetObserved(db, repo.id, new Set(all.map((e) => e.id)));
  const before = new Map(observedEntries(db, repo.id, blobs).map((e) => [e.entry, e]));
  const stale = all.filter((e) => {
    const prior = before.get(e.id);
    return options.force || !prior || !stillTrue(prior, blobs) || prior.key !== keyOf(interpreter, prior.files);
  });
  summary.cached = all.length - stale.length;
  // every entry by default (a cap is the user's choice): the entries that build blocks not yet observed first
  const chosen = focusedFirst(stale, table, repo.id, blocks, options.focus).slice(0, options.maxEntries ?? Infinity);
  if (chosen.length) {
    options.onProgress?.(`${repo.name}: running ${chosen.length} of its ${all.length} tests and builders under the observer`);
    // the other indexed repositories it imports that the interpreter does not have: after its own folders
    const companions = await companionRoots(session, repo.id, options.python);
    const spec: ObserveSpec = {
      root: repo.root,
      path: folder,
      also: [...also, ...companions.roots.filter((r) => r !== folder && !also.includes(r))],
      entry_s: options.entrySeconds ?? 20,
      entries: chosen,
      ...ownPackage(db, repo.id),
    };
    // in lanes, one judge each (a core each by default), the entries dealt out in turn so each lane gets the first ones
    const lanes = Math.max(1, Math.min(options.lanes ?? Math.min(2, os.cpus().length), chosen.length));
    const mounts = [mount, ...companions.mounts.filter((m) => m !== mount)];
    const judges = await Promise.all(
      // a test that writes into its repository (a dataset's processed files) writes into a private copy of it
      Array.from({ length: lanes }, () => Judge.start(options.python, options.runner, options.memoryMb ?? DEFAULT_MEMORY_MB, mounts, { writable: [mount] })),
    );
    const judge = judges[0];
    try {
      const limits = { timeoutMs: (options.repositorySeconds ?? 3600) * 1000, memoryMb: options.memoryMb, signal: options.signal };
      const answers = await Promise.all(judges.map((j, lane) => j.observe({ ...spec, entries: chosen.filter((_e, i) => i % lanes === lane) }, limits)));
      const answer = { ...(answers.find((a) => !a.ok) ?? answers[0]), ok: answers.every((a) => a.ok), observed: answers.flatMap((a) => a.observed) };
      const known = new Set(chosen.map((e) => e.id));
      // what other entries of the repository keep counts against its catalog's size
      const budget: CatalogBudget = { bytes: observedBytesBut(db, repo.id, known), perClass: new Map(), dropped: 0 };
      // the files an entry depends on, as the index knows them (the worker's list is the repository's to write)
      const entryModules = new Map(chosen.map((e) => [e.id, e.module]));
      const needed = filesImported(session, repo.id);
      // an entry the repository's time ran out before is not recorded: the next run runs it (and it is not observed)
      const notRun = new Set(answer.observed.filter((o) => typeof o.error === 'string' && o.error.startsWith('not run:')));
      if (notRun.size) summary.notRun = notRun.size;
      const records = answer.observed
        .filter((o) => typeof o.entry === 'string' && known.has(o.entry) && !notRun.has(o))
        .map((o) => recordOf({ ...o, entry: plainText(o.entry, 500) }, blobs, interpreter, budget, needed(entryModules.get(o.entry))));
      const built = options.buildNative
        ? await nativesMissing(
            session,
            repo,
            records.map((r) => r.entry.error ?? ''),
            { ...options, buildNative: options.buildNative },
          )
        : [];
      if (built.length) {
        // every entry that stopped, again, with them loaded (a test may say only "skipped: requires compilation")
        const again = new Set(records.filter((r) => r.entry.error).map((r) => r.entry.entry));
        const second = await judge.observe({ ...spec, entries: chosen.filter((e) => again.has(e.id)), ...(await judge.stageNatives(built)) }, limits);
        for (const o of second.observed) {
          const at = records.findIndex((r) => r.entry.entry === o.entry);
          if (at >= 0 && again.has(o.entry)) records[at] = recordOf(o, blobs, interpreter, budget, needed(entryModules.get(o.entry)));
        }
      }
      recordObserved(db, repo.id, records);
      summary.ran = records.length;
      summary.failed = records.filter((r) => r.entry.error).length;
      summary.failedBy = {};
      for (const r of records) {
        if (!r.entry.error) continue;
        const cause = failureCause(r.entry.error);
        summary.failedBy[cause] = (summary.failedBy[cause] ?? 0) + 1;
      }
      if (budget.dropped)
        options.onProgress?.(
          `${repo.name}: ${budget.dropped} observed calls not kept: over the catalog's limits (${CATALOG_LIMITS.callsPerClass} calls a class, ${CATALOG_LIMITS.callBytes >> 10} KB a call, ${CATALOG_LIMITS.entryBytes >> 10} KB an entry, ${CATALOG_LIMITS.repositoryBytes >> 20} MB a repository)`,
        );
      if (!answer.ok) options.onProgress?.(`${repo.name}: the observer stopped: ${plainText(answer.message ?? answer.category ?? 'no reason given', 300)}`);
    } finally {
      await Promise.all(judges.map((j) => j.close()));
    }
  }
  // the session's pulls read the catalog as it is now
  session.observed.delete(repo.id);
  const classes = observedClasses(db, repo.id);
  summary.classes = classes.length;
  summary.fed = classes.filter((c) => c.fed).length;
  summary.bytes = observedSize(db, repo.id).bytes;
  summary.coverage = observedCoverage(db, repo.id);
  summary.seconds = Math.round(performance.now() - t0) / 1000;
  return summary;
}

/**
 * The compiled operators of `repo`'s own package that its entries stopped without (`No module named 'pkg._ext'`: a
 * module of the package that the index has no Python source for), built from its C++ sources (nativeSources.ts);
 * one that does not build is said and left out.
 */
async function nativesMissing(
  session: PullSession,
  repo: RepoRow,
  errors: string[],
  options: ObserveOptions & { buildNative: { cacheDir: string } },
): Promise<NativeBuild[]> {
  const wanted = new Set<string>();
  for (const error of errors) {
    for (const m of error.matchAll(/No module named '([\w.]+)'/g)) {
      const name = m[1];
      // the repository's own package only: an error text (the repository's to write) never builds another's modules
      if (name.includes('.') && session.table.isInternal(name, repo.id) && !session.table.lookupIn(name, repo.id)) wanted.add(name);
    }
  }
  if (!wanted.size) return [];
  // (found and built as a pull's are: the session's scans, the block's own repository first)
  const problems = [...wanted].sort().map((name) => ({ kind: 'native-extension' as const, name, detail: `${repo.name} stopped without ${name}` }));
  const { builds, failed } = await buildNatives(session, repo.id, problems, { ...options, cacheDir: options.buildNative.cacheDir });
  if (options.signal?.aborted) throw new CancelledError('observation cancelled');
  for (const b of builds) {
    options.onProgress?.(
      `${repo.name}: ${b.module} ${b.cached ? 'taken from the cache' : `built in ${b.seconds.toFixed(1)} s`}; its entries run again with it`,
    );
  }
  for (const [name, why] of failed) options.onProgress?.(`${repo.name}: ${name} did not build: ${why}`);
  return builds;
}

/**
 * For a module of the repository (an entry's), the paths of the repository's files its import runs, as the index
 * reads them: the module, its packages' `__init__`s, and what each imports (at module level or in a function), in turn.
 */
function filesImported(session: PullSession, repoId: number): (module: string | undefined) => string[] {
  const { table } = session;
  const memo = new Map<string, string[]>();
  return (module) => {
    if (!module) return [];
    let known = memo.get(module);
    if (known) return known;
    const seen = new Set<ModuleRecord>();
    const visit = (name: string): void => {
      const parts = name.split('.');
      for (let i = 1; i <= parts.length; i++) {
        const rec = table.lookupIn(parts.slice(0, i).join('.'), repoId);
        if (!rec || seen.has(rec) || seen.size >= 5000) continue;
        seen.add(rec);
        for (const imp of rec.facts.imports) {
          const abs = table.absoluteModule(rec, imp.level, imp.module);
          if (abs) visit(abs);
          if (imp.name && abs) visit(`${abs}.${imp.name}`);
        }
      }
    };
    visit(module);
    memo.set(module, (known = [...seen].map((r) => r.path)));
    return known;
  };
}

/**
 * The catalog's limits, kept here on the trusted side (the worker that reports the calls runs the repository's code):
 * bytes of one call's JSON, of one entry's calls, calls kept per class in one run, and bytes of a repository's
 * catalog. What is over them is dropped, and the run says so.
 */
export const CATALOG_LIMITS = { callBytes: 16 << 10, entryBytes: 256 << 10, callsPerClass: 32, repositoryBytes: 4 << 20, errorChars: 300 };

/** What the catalog kept of a run against its limits. */
interface CatalogBudget {
  bytes: number;
  perClass: Map<string, number>;
  dropped: number;
}

/** One entry's answer as the catalog keeps it: its calls checked for shape and limits, its files with their blob ids
 * now, its error as one line of plain text. */
function recordOf(
  o: { entry: string; seconds?: number; error?: string | null; calls?: unknown[]; files?: unknown[] },
  blobs: Map<string, string>,
  interpreter: string,
  budget: CatalogBudget,
  trusted: Iterable<string> = [],
): { entry: ObservedEntry; calls: ObservedCall[] } {
  const files: Record<string, string> = {};
  for (const f of [...(Array.isArray(o.files) ? o.files : []), ...trusted]) if (typeof f === 'string' && blobs.has(f)) files[f] = blobs.get(f)!;
  const calls: ObservedCall[] = [];
  let entryBytes = 0;
  for (const c of Array.isArray(o.calls) ? o.calls : []) {
    const call = c as Partial<ObservedCall>;
    if (
      typeof call.module !== 'string' ||
      typeof call.name !== 'string' ||
      !Array.isArray(call.args) ||
      typeof call.kwargs !== 'object' ||
      call.kwargs === null
    )
      continue;
    const kept: ObservedCall = {
      entry: o.entry,
      module: call.module,
      name: call.name,
      args: call.args,
      kwargs: call.kwargs,
      ...(call.inputs ? { inputs: call.inputs } : {}),
    };
    const bytes = JSON.stringify(kept).length;
    const cls = `${call.module}.${call.name}`;
    const seen = budget.perClass.get(cls) ?? 0;
    if (
      bytes > CATALOG_LIMITS.callBytes ||
      entryBytes + bytes > CATALOG_LIMITS.entryBytes ||
      seen >= CATALOG_LIMITS.callsPerClass ||
      budget.bytes + bytes > CATALOG_LIMITS.repositoryBytes
    ) {
      budget.dropped++;
      continue;
    }
    budget.perClass.set(cls, seen + 1);
    entryBytes += bytes;
    budget.bytes += bytes;
    calls.push(kept);
  }
  const error = typeof o.error === 'string' ? plainText(o.error, CATALOG_LIMITS.errorChars) : null;
  return { entry: { entry: o.entry, key: keyOf(interpreter, files), files, seconds: typeof o.seconds === 'number' ? o.seconds : null, error }, calls };
}

/**
 * The package most of a repository's blocks are defined in (`diffusers`, `torch_geometric`), when it is not a test
 * folder: the observer's workers are forked from a template that imported it once.
 */
export function ownPackage(db: IndexDb, repoId: number): { package?: string } {
  const counts = new Map<string, number>();
  for (const r of db.all('SELECT module FROM classes WHERE repo_id = ? AND is_block = 1', [repoId])) {
    const top = String(r.module).split('.')[0];
    counts.set(top, (counts.get(top) ?? 0) + 1);
  }
  const [top] = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0] ?? [];
  return top && /^[A-Za-z_]\w*$/.test(top) && !/^(tests?|testing|examples?|docs?|scripts?|benchmarks?|setup|conftest)$/i.test(top) ? { package: top } : {};
}
