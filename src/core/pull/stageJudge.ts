/** Stage 3 of a pull, judge: the file judged against its original, then the builder and replay stages when needed. */
import type { Emission, JudgeRun, PullOptions, SlimSizes } from './types';
import { explained, originalOf } from './original';
import { failureOf, runtimeNativeDetail } from './stageResolve';
import type { PullSession } from './session';
import { dependencies } from './roots';
import { repositoryUses } from './uses';
import { promises as fsp } from 'fs';
import { performance } from 'perf_hooks';
import * as os from 'os';
import * as path from 'path';
import type { ClassRef } from '../store/target';
import { emitFile } from '../emit/emit';
import { NnragError } from '../base/errors';
import { BuilderIndex, modulesTaken, namesTheBlock } from '../resolve/builders';
import { computeClosure } from '../resolve/closure';
import type { ModuleRecord } from '../resolve/moduleTable';
import { validateFile } from '../validate/runner';
import { keptIn } from '../validate/originalCache';
import { DEFAULT_TIMEOUT_S } from '../validate/limits';
import { nativeSourcesOf } from './natives';
import { followStage } from './stageFollow';
import { slimStage, withoutTrace } from './stageSlim';
import { round3, spentOn } from './judgeTime';
import type { OriginalClass, ValidationReport } from '../validate/runner';
import type { ValidateOptions } from '../validate/report';

/** The largest recipe (in JSON characters) a pulled file's header keeps. */
const MAX_RECIPE_CHARS = 20_000;

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

/** What the judge stage concluded: the verdict, each run of the judge and why, and a compiled module to build first
 * (the pull then runs again with it). */
export interface Judgement {
  verdict: ValidationReport;
  judged: JudgeRun[];
  native?: string;
  /** The slim file's emission, when it is the file written (stageSlim.ts). */
  slim?: Emission;
  /** The slim stage's sizes, when it ran. */
  slimSizes?: SlimSizes;
  /** The constructor's parameters that take a module, when a builder, asked before any guess, built the block. */
  moduleArguments?: string[];
}

/** The judge's time for one block, counted in its own time (a loaded machine does not leave a stage untried). */
class JudgeClock {
  usedMs = 0;
  constructor(readonly limitMs: number) {}
  spent(v: ValidationReport | number): void {
    this.usedMs += typeof v === 'number' ? v : ownMs(v);
  }
  left(): number {
    return this.limitMs - this.usedMs;
  }
}

/**
 * Stage 3 of a pull, judge: the file as written, judged against its original; when no guessed argument set builds
 * the block or runs its forward, the builder stage (and its replay); a compiled module the code loads by name is
 * handed back to build (`native`) or named in the verdict.
 */
export async function judgeEmission(session: PullSession, emission: Emission, options: PullOptions): Promise<Judgement> {
  const { ref, rec, closure, emitted, inlined, natives } = emission;
  if (!options.out || !options.python || !options.runner) throw new NnragError('usage', 'validation needs an output file, an interpreter and the runner');
  const found = originalOf(session, ref, dependencies(session, ref.repoId, inlined));
  const original = 'module' in found ? found : undefined;
  const request: ValidateOptions = {
    ...(await judging(session, rec, ref.name, options)),
    original,
    native: [...closure.problems.filter((p) => p.kind === 'native-extension').map((p) => p.name), ...closure.keptMissing],
    upstreamUndefined: [...new Set(closure.problems.filter((p) => p.kind === 'unresolved' && /^\w+$/.test(p.name)).map((p) => p.name))],
    companions: emitted.provenance.shared && options.shared ? [options.shared.file] : undefined,
    natives: natives.map((b) => ({ module: b.module, name: b.buildName, file: b.file, fileName: b.fileName })),
    ...keptIn(options.originalCache, emitted.provenance.definitions),
  };
  // one time limit for the whole block: its argument sets, its builders and the replay of a builder's arguments
  const clock = new JudgeClock(options.timeoutMs ?? DEFAULT_TIMEOUT_S * 1000);
  const judged: JudgeRun[] = [];
  // a constructor that takes a module (`features: nn.Module`) gets only an Identity from a guess: where the
  // repository's calls and examples say nothing, its builders first, whose model stands where it is equivalent;
  // otherwise the file as pulled, as for any block
  const said = (request.candidates?.length ?? 0) + (request.examples?.length ?? 0) > 0;
  const modules = said ? [] : modulesTaken(emission.rec.facts.classes.find((c) => c.unit === emission.unit)?.signature ?? '');
  const first = modules.length
    ? await tryBuilders(
        session,
        emission,
        options,
        original,
        clock,
        `its constructor takes ${modules.join(', ')}, a module a guess only stands in for: the repository's builders first`,
      )
    : undefined;
  let v: ValidationReport;
  // (a builder asked first built it: the verdict says so)
  const asked = first?.built.report?.ok === true && first.built.report.tier === 'equivalent';
  if (asked && first?.built.report) {
    judged.push(first.stage);
    v = await builderVerdict(first.built, options, request, clock, judged, first.built.report);
  } else {
    const began = performance.now();
    // (after the builders, within what is left of the block's time)
    v = await validateFile(options.out, first ? { ...request, timeoutMs: Math.max(MIN_JUDGE_MS, clock.left()) } : request);
    clock.spent(v);
    judged.push({ stage: 'judge', why: 'the file as pulled', ...spentOn(v, began) });
    if (!v.ok && (v.category === 'instantiate' || v.category === 'forward')) {
      const why = `no guessed argument set ${v.category === 'instantiate' ? 'built the block' : 'ran its forward'}: the repository's builders`;
      // (the builders already tried are not tried again)
      const tried = first ?? (await tryBuilders(session, emission, options, original, clock, why, { file: options.out, request }));
      if (first) first.stage.why = `${why} (tried first: the constructor takes ${modules.join(', ')})`;
      judged.push(tried.stage);
      v = await builderVerdict(tried.built, options, request, clock, judged, v);
    }
  }
  const runtime = runtimeNativeOf(session, v, ref.repoId, inlined);
  if (runtime && options.buildNative && !options.runtimeNatives?.includes(runtime)) return { verdict: v, judged, native: runtime };
  if (runtime) {
    const buildable = !options.buildNative && (await nativeSourcesOf(session, ref.repoId, runtime));
    v = {
      ...v,
      category: 'native-extension',
      message: `${runtimeNativeDetail(runtime)} in the indexed package ${runtime.split('.')[0]}${buildable ? ' (nn-rag pull --build-native builds it from the C++ sources of the repository)' : ''}; ${v.message ?? ''}`,
    };
  }
  // a copy that fails where its original runs: with what the original ran that the file lacks, where it gets further
  let written = emission;
  const follow = !runtime && !v.ok ? await followStage(session, emission, options, request, v, clock.left()) : undefined;
  if (follow) {
    judged.push(follow.run);
    if (follow.judged) clock.spent(follow.judged);
    v = follow.verdict;
    if (follow.emission) written = follow.emission;
  }
  // the file without what the original never ran, where it gets as far
  const slim = !runtime ? await slimStage(session, written, options, request, v, clock.left()) : undefined;
  if (slim) {
    judged.push(slim.run);
    v = slim.verdict;
  }
  const kept = slim?.emission ?? (written !== emission ? written : undefined);
  return {
    verdict: explained(withoutTrace(v), found),
    judged,
    ...(asked ? { moduleArguments: modules } : {}),
    ...(kept ? { slim: kept } : {}),
    ...(slim ? { slimSizes: slim.sizes } : {}),
  };
}

/** What the repository's builders gave (`validateWithBuilder`), and the builder stage's record of it. */
interface BuildersTried {
  built: Awaited<ReturnType<typeof validateWithBuilder>>;
  stage: JudgeRun;
}

/**
 * The builder stage: the repository's own builder builds what no guessed argument set builds (or what takes a module,
 * asked first), and a block taken from inside the model it makes runs on the inputs that model really gives it.
 */
async function tryBuilders(
  session: PullSession,
  emission: Emission,
  options: PullOptions,
  original: OriginalClass | undefined,
  clock: JudgeClock,
  why: string,
  replay?: Replay,
): Promise<BuildersTried> {
  const { ref, rec, unit, target, closureCtx, emitCtx, inlined } = emission;
  // the builder's model must be made of the copy's classes: everything of the repository is inlined for it (an
  // installed package's builders would build, and register, the installed classes)
  const builderCtx = { ...closureCtx, inlines: (r: ModuleRecord, rootRepo: number) => r.repoId === rootRepo || inlined.has(r.repoId) };
  const budgetMs = Math.min(options.builderBudgetMs ?? Infinity, clock.left() - MIN_JUDGE_MS);
  const stage: JudgeRun = { stage: 'builder', why };
  const built = await validateWithBuilder(
    session,
    builderCtx,
    emitCtx,
    rec,
    unit,
    ref.name,
    target,
    { ...options, builderBudgetMs: budgetMs },
    original,
    replay,
  );
  clock.spent(built.ownMs);
  Object.assign(stage, {
    seconds: round3(built.tried.reduce((sum, b) => sum + b.seconds, 0)),
    builders: built.tried,
    ...(built.untried.length ? { untried: built.untried } : {}),
    // (a replay's verdict has its own stage and timings)
    ...(built.report?.timings && !built.replayed?.stands ? { timings: built.report.timings } : {}),
  });
  return { built, stage };
}

/**
 * The verdict that stands after the builders: the replay stage judges the builder's arguments on the file written;
 * without a builder's report, `v` (the file as pulled) with what the builders ended in.
 */
async function builderVerdict(
  built: BuildersTried['built'],
  options: PullOptions,
  request: ValidateOptions,
  clock: JudgeClock,
  judged: JudgeRun[],
  v: ValidationReport,
): Promise<ValidationReport> {
  if (built.report && built.replayed) {
    // (run before the builder's own: its verdict, or the builder's where the file alone did not get as far)
    judged.push(built.replayed.run);
    return asFarAs(built.replayed.report, built.report, built.replayed.recipe);
  }
  if (built.report && clock.left() > MIN_JUDGE_MS) {
    const replay: JudgeRun = { stage: 'replay', why: "the builder's arguments, judged again on the file written" };
    judged.push(replay);
    return replayed(built.report, options.out!, { ...request, timeoutMs: clock.left() }, replay);
  }
  if (built.report) return { ...built.report, recipe: undefined };
  const ended = built.tried.length ? `; the repository's builders ended: ${built.tried.map((b) => `${b.name}() ${b.ended}`).join(', ')}` : '';
  if (!built.untried.length) return ended ? { ...v, message: `${v.message ?? ''}${ended}` } : v;
  const within =
    options.builderBudgetMs !== undefined && options.builderBudgetMs <= clock.left()
      ? `${Math.round(options.builderBudgetMs / 100) / 10} s (nn-rag pull tries them all)`
      : `the block's time limit of ${Math.round(clock.limitMs / 1000)} s`;
  return { ...v, message: `${v.message ?? ''}; the repository's builders ${built.untried.map((b) => `${b}()`).join(', ')} were not tried within ${within}` };
}

/** Below this many milliseconds of the block's time limit, no further judge is started for it. */
const MIN_JUDGE_MS = 2000;

/**
 * The builder's verdict judged again on the file written: built from the arguments the builder gave the block (its
 * recipe) where they can be written, so that the verdict is about the file itself and `nn-rag validate` can repeat
 * it. The builder's verdict stays where the file alone does not get as far.
 */
async function replayed(byBuilder: ValidationReport, file: string, request: ValidateOptions, run: JudgeRun): Promise<ValidationReport> {
  const recipe = writable(byBuilder.recipe);
  if (!recipe) {
    run.why += ' (not run: the arguments cannot be written)';
    return { ...byBuilder, recipe: undefined };
  }
  return asFarAs(await judgedWith(recipe, file, request, run), byBuilder, recipe);
}

/** The file written judged with a builder's arguments first (the replay), its seconds said in `run`. */
async function judgedWith(recipe: Recipe, file: string, request: ValidateOptions, run: JudgeRun): Promise<ValidationReport> {
  const began = performance.now();
  const again = await validateFile(file, { ...request, candidates: [recipe, ...(request.candidates ?? [])] });
  Object.assign(run, spentOn(again, began));
  return again;
}

/** The replay's verdict where it gets as far as the builder's, else the builder's. */
function asFarAs(again: ValidationReport, byBuilder: ValidationReport, recipe: Recipe): ValidationReport {
  const asFar = again.ok && (again.tier === 'equivalent' || byBuilder.tier !== 'equivalent');
  return asFar ? { ...again, builder: byBuilder.builder, recipe } : { ...byBuilder, recipe: undefined };
}

/** The arguments a builder gave the block, as the copy's worker recorded them. */
type Recipe = NonNullable<ValidationReport['recipe']>;

/** The file written and its judge's request: what the replay stage judges again with a builder's arguments. */
interface Replay {
  file: string;
  request: ValidateOptions;
}

/** A replay run inside the builder stage, before the builder's own run (`validateWithBuilder`). */
interface EarlyReplay {
  run: JudgeRun;
  report: ValidationReport;
  recipe: Recipe;
  /** It is equivalent: the builder's own run was not needed. */
  stands: boolean;
}

/** The recipe when it can be written into a request (a block built from modules leaves none). */
function writable(recipe: ValidationReport['recipe']): Recipe | undefined {
  return recipe && JSON.stringify(recipe).length <= MAX_RECIPE_CHARS ? recipe : undefined;
}

/** How far `ref`'s original gets with the tool's arguments when run alone (null: it is not imported). */
export async function originalAlone(
  session: PullSession,
  ref: ClassRef,
  options: PullOptions,
  inlined: Set<number>,
): Promise<ValidationReport['original_reached']> {
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
  replay?: Replay,
): Promise<{ report?: ValidationReport; untried: string[]; ownMs: number; tried: { name: string; seconds: number; ended: string }[]; replayed?: EarlyReplay }> {
  // the budget counts the judge's own time (ownMs), not the machine's
  let used = 0;
  const tried: { name: string; seconds: number; ended: string }[] = [];
  let index = session.builders.get(rec.repoId);
  if (!index) {
    index = new BuilderIndex(session.table, rec.repoId);
    session.builders.set(rec.repoId, index);
  }
  // a builder may make a model without this block inside (efficientnet_b0 has no FusedMBConv): try a few
  const builders = index.buildersOf(rec, name).slice(0, 4);
  for (const [i, b] of builders.entries()) {
    if (options.builderBudgetMs !== undefined && used > options.builderBudgetMs - MIN_JUDGE_MS / 2)
      return { untried: builders.slice(i).map((u) => u.name), ownMs: used, tried };
    const combined = await computeClosure(closureCtx, rec, unit, [{ rec: b.rec, unit: b.unit }]);
    if (failureOf(combined.problems)) continue;
    const emitted = emitFile(combined, emitCtx, target);
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-builder-'));
    try {
      const file = path.join(dir, 'block_with_builder.py');
      const began = performance.now();
      await fsp.writeFile(file, emitted.code, 'utf8');
      const builder = emitted.provenance.renamed[`${b.rec.module}.${b.name}`] ?? b.name;
      // within the budget: a builder's run is a forked worker of the judge, stopped at no cost to the next pull
      const timeoutMs = (): number | undefined =>
        options.builderBudgetMs === undefined ? options.timeoutMs : Math.max(1000, Math.min(options.timeoutMs ?? Infinity, options.builderBudgetMs - used));
      const common = {
        python: options.python!,
        runner: options.runner!,
        memoryMb: options.memoryMb,
        signal: options.signal,
        pool: options.pool,
        allowWeakSandbox: options.allowWeakSandbox,
      };
      // how a builder's failure ends the search: stopped by the budget, it was not really tried; the copy's process
      // lacks compiled operators the model needs, a fact of the process, which another builder of the same block
      // meets again (MaskRCNN's two builders, a minute each)
      const stops = (failed: ValidationReport): Awaited<ReturnType<typeof validateWithBuilder>> | undefined =>
        options.builderBudgetMs !== undefined && failed.category === 'timeout'
          ? { untried: builders.slice(i).map((u) => u.name), ownMs: used, tried }
          : failed.category === 'native-extension'
            ? { untried: [], ownMs: used, tried }
            : undefined;
      let early: EarlyReplay | undefined;
      if (replay && namesTheBlock(b.name, name)) {
        // the arguments the builder gives the block, from the copy's side alone (no original, no probes): the file
        // written, built from them, judged against its original is the replay stage's verdict, which stands where it
        // is equivalent; the builder's own run of both sides (the whole model, probed) is needed only where it is not
        const scout = await validateFile(file, { ...common, className: name, builder, timeoutMs: timeoutMs() });
        used += ownMs(scout);
        if (!scout.ok) {
          // the same copy with the same single argument set fails the same way beside its original
          tried.push({ name: b.name, seconds: round3((performance.now() - began) / 1000), ended: scout.category ?? 'failed' });
          const stop = stops(scout);
          if (stop) return stop;
          continue;
        }
        const recipe = writable(scout.recipe);
        // (the builder's seconds are the copy's build; the replay's are its own stage's)
        const scouted = round3((performance.now() - began) / 1000);
        if (recipe) {
          const run: JudgeRun = { stage: 'replay', why: "the builder's arguments (from the copy's build alone), judged on the file written" };
          const again = await judgedWith(recipe, replay.file, { ...replay.request, timeoutMs: timeoutMs() }, run);
          used += ownMs(again);
          early = { run, report: again, recipe, stands: again.ok && again.tier === 'equivalent' };
          if (early.stands) {
            tried.push({ name: b.name, seconds: scouted, ended: 'equivalent' });
            return { report: { ...again, builder: `${b.rec.module}.${b.name}`, recipe }, untried: [], ownMs: used, tried, replayed: early };
          }
        }
      }
      const v = await validateFile(file, {
        ...common,
        className: name,
        builder,
        timeoutMs: timeoutMs(),
        original: original && { ...original, builder: { module: b.rec.module, name: b.name } },
        // the builder's original run is kept as a block's is: pulled again, only the copy's side runs
        ...keptIn(options.originalCache, emitted.provenance.definitions),
      });
      // a copy that differs from its original is a finding, never hidden behind the failure before it
      used += ownMs(v);
      tried.push({ name: b.name, seconds: round3((performance.now() - began) / 1000), ended: v.ok ? (v.tier ?? 'ok') : (v.category ?? 'failed') });
      if (v.ok || v.category === 'differs')
        return { report: { ...v, builder: `${b.rec.module}.${b.name}` }, untried: [], ownMs: used, tried, ...(early ? { replayed: early } : {}) };
      const stop = stops(v);
      if (stop) return stop;
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  }
  return { untried: [], ownMs: used, tried };
}

/** The judge's own time for a validation, in ms (its wall time where an older judge did not say). */
function ownMs(v: ValidationReport): number {
  return (v.own_seconds ?? v.seconds ?? 0) * 1000;
}
