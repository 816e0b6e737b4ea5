/**
 * The use-case API over one open index, for every front (the command line, the language server through the index
 * service's `workspace()`, the MCP server, the bench): one method per use case (pull, pull several together, explain,
 * describe, run a batch in lanes, validate a pulled file, plan an update, observe). A front reads its input into a
 * `PullRequest` (request.ts), calls one method, and displays; the sequence (load the module table, open a pull
 * session, find the target, start validators, pull, judge) is here. The parser and the pull session are made once,
 * on first use, or handed in by the index service, which keeps them while its index does not change.
 */
import { performance } from 'perf_hooks';
import type { IndexDb } from '../store/database';
import { PythonParser } from '../parse/parser';
import type { WasmPaths } from '../parse/parser';
import { findTarget } from '../store/target';
import type { ClassRef } from '../store/target';
import { loadModuleTable } from '../resolve/loadTable';
import { judgingPulled, pullBlock } from '../pull/pull';
import { originalOf } from '../pull/original';
import { interpreterFailure, validationRecord } from '../pull/stageRecord';
import { openPullSession } from '../pull/session';
import { mountRoot } from '../pull/roots';
import { readProvenance } from '../emit/pulledFile';
import { validateFile } from '../validate/runner';
import { keptIn } from '../validate/originalCache';
import type { ValidationReport } from '../validate/runner';
import type { ValidateOptions } from '../validate/report';
import { validatePulled } from '../pull/validatePulled';
import type { PulledVerdict } from '../pull/validatePulled';
import type { PullOptions, PullReport } from '../pull/types';
import type { PullSession } from '../pull/session';
import type { OriginalClass } from '../validate/report';
import { ValidatorPool } from '../validate/validatorPool';
import { DEFAULT_MEMORY_MB } from '../validate/limits';
import { observeRepositories } from '../pull/observe';
import type { ObserveOptions, ObserveSummary } from '../pull/observe';
import { freshEntries, observedCallsOf } from '../store/observed';
import type { ObservedCall } from '../store/observed';
import { originalsDir, pullOptionsFor } from './request';
import type { Front, PullRequest } from './request';
import type { ValidatorPoolLike } from '../validate/runner';
import { isToolFault } from '../validate/runner';
import { pullTogether } from '../pull/shared';
import type { PulledTogether } from '../pull/shared';
import { describeClass } from '../resolve/describe';
import { blockSpec } from '../specification/specification';
import type { BlockSpec } from '../specification/specification';
import type { ClassDetails } from '../resolve/describe';
import { planUpdate } from '../pull/update';
import { batchStages, inLanes } from '../pull/batch';
import type { BatchItem } from '../pull/batch';
import { joinInside } from '../emit/writeSafe';
import { CancelledError, errorMessage, NnragError } from '../base/errors';

/** What the front running the tool hands a workspace besides its request data. */
export interface WorkspaceFront extends Front {
  /** The parser, when the front holds one already. */
  parser?: PythonParser;
  /** The pull session, when the front keeps one (the index service drops it after every index run). */
  session?: () => PullSession;
  /** A warm validator for single pulls (the index service's: torch imported once per interpreter). */
  warm?: (python: string, memoryMb: number, roots: string[]) => ValidatorPoolLike;
}

/** How one pull is written and run, beyond its request: where, under which folder, cancelled by what. */
export interface PullHow {
  out?: string;
  root?: string;
  manifest?: boolean;
  largest?: number;
  signal?: AbortSignal;
  pool?: ValidatorPoolLike;
  probeOriginal?: boolean;
  /**
   * An interpreter that cannot run the judge (missing, not Python, no sandbox for it): 'report' makes it the pull's
   * failed report (`stageRecord.interpreterFailure`: the command line prints it); by default it is thrown, and a batch
   * stops on it (every block would fail the same way).
   */
  interpreterFailure?: 'report' | 'throw';
}

/** A batch: every block into its own file under `outDir`, `jobs` at a time. */
export interface BatchHow {
  outDir: string;
  jobs: number;
  /** Validate in a pool of `jobs` warm interpreters (else a fresh one per block). */
  pooled: boolean;
  /** Keep each block's verdict as the index records it (a shard's, merged into the index later). */
  records?: boolean;
  signal?: AbortSignal;
  /** Called after each block, in the order they finish. */
  onItem?: (item: BatchItem, done: number) => void;
}

export class Workspace {
  private parserMade: Promise<PythonParser> | undefined;
  private sessionMade: PullSession | undefined;

  private constructor(
    readonly db: IndexDb,
    private readonly assets: WasmPaths,
    private readonly front: WorkspaceFront,
  ) {
    if (front.parser) this.parserMade = Promise.resolve(front.parser);
  }

  /** A workspace over an open index; `assets` locate the parser's grammar, `front` is what every pull is given. */
  static over(db: IndexDb, assets: WasmPaths, front: WorkspaceFront = {}): Workspace {
    return new Workspace(db, assets, front);
  }

  /** The Python parser (made once). */
  parser(): Promise<PythonParser> {
    this.parserMade ??= PythonParser.create(this.assets);
    return this.parserMade;
  }

  /** What pulls read from the index, loaded once (ask again with `fresh` after the index changed). */
  session(fresh = false): PullSession {
    if (this.front.session && !fresh) return this.front.session();
    if (fresh || !this.sessionMade) this.sessionMade = openPullSession(this.db, loadModuleTable(this.db));
    return this.sessionMade;
  }

  /** The pull options `request` means for this workspace's front (a single validating pull takes its warm validator). */
  async options(request: PullRequest, how: PullHow = {}): Promise<PullOptions> {
    const base = pullOptionsFor(request, this.front, await this.parser());
    const warm = !how.pool && request.validate && request.python ? this.warm(request.python, request.memoryMb) : undefined;
    return { ...base, ...how, pool: how.pool ?? warm };
  }

  /** The front's warm validator for `python` (the index service's), able to import every original; none without one. */
  private warm(python: string, memoryMb: number | undefined): ValidatorPoolLike | undefined {
    return this.front.warm?.(python, memoryMb ?? DEFAULT_MEMORY_MB, this.originalRoots());
  }

  /** The block a target names (`repo:module.Class`, `module.Class` or `Class`); a clear error when none or several. */
  target(name: string): ClassRef {
    return findTarget(this.db, name);
  }

  /** Pulls one block (a target or a found block) as `request` asks, written where `how` says. */
  async pull(target: string | ClassRef, request: PullRequest, how: PullHow = {}): Promise<PullReport> {
    const ref = typeof target === 'string' ? this.target(target) : target;
    // a validating pull with no warm validator gets one judge of its own for all its stages (the file, builders,
    // follow, slim): starting a sandboxed judge with torch costs seconds each time
    const own =
      !how.pool && !this.front.warm && request.validate && request.python && this.front.runner
        ? this.validatorPool(request.python, this.front.runner, 1, request.memoryMb ?? DEFAULT_MEMORY_MB)
        : undefined;
    try {
      return await pullBlock(this.session(), ref, await this.options(request, own ? { ...how, pool: own } : how));
    } catch (err) {
      if (how.interpreterFailure !== 'report' || !(err instanceof NnragError) || err.code !== 'interpreter' || !how.out) throw err;
      return interpreterFailure(ref, how.out, err.message);
    } finally {
      await own?.close();
    }
  }

  /** The file a pull would write, in memory, with its sizes, its dependency graph and its `largest` definitions. */
  async explain(target: string | ClassRef, request: Omit<PullRequest, 'validate'> = {}, largest?: number): Promise<PullReport> {
    // (the interpreter decides which repositories are inlined: those it cannot import)
    return this.pull(target, { ...request, validate: false }, { manifest: false, largest });
  }

  /** What the index holds of a block: its signature, documentation, methods, repository. */
  describe(target: string | ClassRef): ClassDetails {
    return describeClass(this.db, typeof target === 'string' ? this.target(target) : target, this.session().table);
  }

  /** A block's neutral specification: its parameters, forward, tensors and provenance (specification/specification.ts). */
  async spec(target: string | ClassRef): Promise<BlockSpec> {
    return blockSpec(this.db, typeof target === 'string' ? this.target(target) : target, await this.parser(), this.session());
  }

  /**
   * Pulls several blocks into `dir`, each into its own file, the definitions several need written once into a
   * module of shared helpers beside them; then validates each.
   */
  async pullTogether(targets: (string | ClassRef)[], dir: string, request: PullRequest, how: PullHow = {}): Promise<PulledTogether> {
    const refs = targets.map((t) => (typeof t === 'string' ? this.target(t) : t));
    const reported = how.interpreterFailure === 'report';
    return pullTogether(this.session(), refs, dir, await this.options(request, how), { force: request.force === true, interpreterFailure: reported });
  }

  /**
   * A batch: every target pulled into its own file under `outDir` (`<repo>/<module>__<Class>.py`), `jobs` at a time,
   * validated in a pool of warm interpreters; a failure of one block is its item, a broken interpreter stops all.
   * Items come back in the order of `targets` (those left when cancelled are absent).
   */
  async batch(targets: string[], request: PullRequest, how: BatchHow): Promise<BatchItem[]> {
    const { outDir, jobs, signal } = how;
    const pool =
      request.validate && how.pooled && request.python && this.front.runner
        ? this.validatorPool(request.python, this.front.runner, jobs, request.memoryMb ?? DEFAULT_MEMORY_MB)
        : undefined;
    const items: BatchItem[] = new Array(targets.length);
    let done = 0;
    let fatal: unknown;
    const one = async (i: number): Promise<void> => {
      const target = targets[i];
      const t0 = performance.now();
      try {
        const ref = this.target(target);
        const out = joinInside(outDir, ref.repo, `${ref.module.replace(/\./g, '_')}__${ref.name}.py`);
        const r = await this.pull(ref, request, { out, root: outDir, pool, probeOriginal: true, signal });
        items[i] = batchItem(target, r, (performance.now() - t0) / 1000, how.records === true);
      } catch (err) {
        if (err instanceof CancelledError) return;
        if (err instanceof NnragError && err.code === 'interpreter') {
          fatal ??= err;
          return;
        }
        items[i] = { target, status: 'error', tier: null, category: 'error', message: errorMessage(err), seconds: (performance.now() - t0) / 1000 };
      }
      how.onItem?.(items[i], ++done);
    };
    try {
      await inLanes(targets.length, jobs, one, () => !!signal?.aborted || !!fatal);
    } finally {
      await pool?.close();
    }
    if (fatal) throw fatal;
    return items.filter((x): x is BatchItem => x !== undefined);
  }

  /** The folders the originals of blocks are imported from (shown read-only to every sandbox that compares). */
  originalRoots(): string[] {
    return [...new Set([...this.session().repos.values()].flatMap((r) => mountRoot(r) ?? []))].sort();
  }

  /** A pool of `jobs` warm validators with `python`, able to import every original of this index. */
  validatorPool(python: string, runner: string, jobs: number, memoryMb = DEFAULT_MEMORY_MB): ValidatorPool {
    return new ValidatorPool(python, runner, jobs, memoryMb, this.originalRoots());
  }

  /** The original class of a block, to compare a copy with (or why there is none). */
  originalOf(ref: ClassRef): OriginalClass | { unavailable: string } {
    return originalOf(this.session(), ref);
  }

  /**
   * Validates a pulled file (`text`, written at `file`) as its pull judged it, compared with the original its header
   * names, through the builder again when unedited (`pull/validatePulled.ts`).
   */
  async validatePulled(file: string, text: string, given: Omit<Parameters<typeof validatePulled>[3], 'runner'> & { runner?: string }): Promise<PulledVerdict> {
    const runner = given.runner ?? this.front.runner;
    if (!runner) throw new NnragError('usage', "validating needs the judge's runner script");
    const options = { ...given, runner };
    const warm = options.pool ? undefined : this.warm(options.python, options.memoryMb);
    const originalCacheDir = options.originalCacheDir ?? originalsDir(this.front);
    return validatePulled({ session: this.session(), parser: await this.parser() }, file, text, { ...options, pool: options.pool ?? warm, originalCacheDir });
  }

  /** Validates a pulled file whose original no index names (`reason` says why): the header's recipe alone. */
  static validateUnindexed(reason: string, file: string, text: string, options: Parameters<typeof validatePulled>[3]): Promise<PulledVerdict> {
    return validatePulled({ unavailable: reason }, file, text, options);
  }

  /**
   * Validates a file an update just wrote (`text`, holding block `ref`), judged as its pull was; compared with the
   * block's current original when `compare` (an update that kept the user's edits is meant to differ: not compared).
   */
  async validateUpdated(
    file: string,
    text: string,
    ref: ClassRef | undefined,
    compare: boolean,
    options: Omit<ValidateOptions, 'original' | 'className'>,
  ): Promise<ValidationReport> {
    const original = ref && compare ? this.originalOf(ref) : undefined;
    const prov = readProvenance(text);
    return validateFile(file, {
      ...(await judgingPulled(this.session(), prov, await this.parser())),
      // kept as a pull's is, by the blobs the updated header names: validated again, only the copy runs
      ...keptIn(originalsDir(this.front), prov?.definitions),
      ...options,
      original: original && 'module' in original ? original : undefined,
      className: ref?.name,
    });
  }

  /** What an update gives a pulled file (`text`, named `label`, in `folder`): nothing is written. */
  async planUpdate(text: string, baseBody: string | undefined, scratch: string, label?: string, folder?: string): ReturnType<typeof planUpdate> {
    return planUpdate({ db: this.db, parser: await this.parser(), session: this.session(), scratch }, text, baseBody, label, folder);
  }

  /**
   * Runs the local repositories' tests under the observer (all when `repos` is empty) and records how they built and
   * called their blocks; the next pulls build and feed those blocks that way. The caller saves the index.
   */
  async observe(options: Omit<ObserveOptions, 'runner'> & { runner?: string }, repos: string[] = []): Promise<ObserveSummary[]> {
    const runner = options.runner ?? this.front.runner;
    if (!runner) throw new NnragError('usage', "observing needs the judge's runner script");
    const summaries = await observeRepositories(this.session(), { parser: await this.parser(), ...options, runner }, repos);
    if (!this.front.session) this.session(true);
    return summaries;
  }

  /** The calls of a block its repository's tests made, each marked whether the files its test imported changed since. */
  observedCalls(ref: ClassRef): (ObservedCall & { stale: boolean })[] {
    const entries = freshEntries(this.db, ref.repoId);
    return observedCallsOf(this.db, ref.repoId, ref.module, ref.name).map((c) => ({ ...c, stale: entries.get(c.entry) !== true }));
  }
}

/** One block's line in a batch's report. */
function batchItem(target: string, r: PullReport, seconds: number, record: boolean): BatchItem {
  return {
    target,
    status: r.status,
    tier: r.tier,
    category: r.category,
    message: r.message,
    out: r.out,
    seconds,
    equivalence: r.validation?.equivalence?.status,
    ...(r.validation?.equivalence?.reason ? { equivalence_reason: r.validation.equivalence.reason } : {}),
    lines: r.sizes?.total,
    ...(r.slim ? { full_lines: r.slim.kept === 'slim' ? r.sizes?.total && r.sizes.total + r.slim.fullLines - r.slim.slimLines : r.sizes?.total } : {}),
    ...(r.originalReached !== undefined ? { original_reached: r.originalReached } : {}),
    ...(r.judged?.length ? { stages: batchStages(r.judged) } : {}),
    ...(record ? { record: validationRecord(r) } : {}),
    ...(r.validation && isToolFault(r.validation) ? { tool_fault: `the original reaches ${r.validation.original_passes} with the same arguments` } : {}),
  };
}
