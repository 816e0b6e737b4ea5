/**
 * The use-case API over one open index, for every front (the command line, the MCP server, the bench; the language
 * server reaches the same through the index service): the parser and the pull session are made once, on first use,
 * and a pull, a batch's validator pool and the original of a pulled file are asked of it. Fronts parse arguments,
 * wire and display; the sequence (open the database, load the module table, open a pull session, find the target,
 * start validators, pull) is here.
 */
import type { IndexDb } from '../store/database';
import { PythonParser } from '../parse/parser';
import type { WasmPaths } from '../parse/parser';
import { findTarget } from '../store/target';
import type { ClassRef } from '../store/target';
import { loadModuleTable } from '../resolve/loadTable';
import { mountRoot, openPullSession, originalOf, pullBlock } from '../pull/pull';
import { validatePulled } from '../pull/validatePulled';
import type { PulledVerdict } from '../pull/validatePulled';
import type { PullOptions, PullReport, PullSession } from '../pull/pull';
import type { OriginalClass } from '../validate/report';
import { ValidatorPool } from '../validate/validatorPool';
import { DEFAULT_MEMORY_MB } from '../validate/limits';
import { observeRepositories } from '../pull/observe';
import type { ObserveOptions, ObserveSummary } from '../pull/observe';
import { freshEntries, observedCallsOf } from '../store/observed';
import type { ObservedCall } from '../store/observed';

export class Workspace {
  private parserMade: Promise<PythonParser> | undefined;
  private sessionMade: PullSession | undefined;

  private constructor(
    readonly db: IndexDb,
    private readonly assets: WasmPaths,
  ) {}

  /** A workspace over an open index; `assets` locate the parser's grammar. */
  static over(db: IndexDb, assets: WasmPaths): Workspace {
    return new Workspace(db, assets);
  }

  /** The Python parser (made once). */
  parser(): Promise<PythonParser> {
    this.parserMade ??= PythonParser.create(this.assets);
    return this.parserMade;
  }

  /** What pulls read from the index, loaded once (ask again with `fresh` after the index changed). */
  session(fresh = false): PullSession {
    if (fresh || !this.sessionMade) this.sessionMade = openPullSession(this.db, loadModuleTable(this.db));
    return this.sessionMade;
  }

  /** The block a target names (`repo:module.Class`, `module.Class` or `Class`); a clear error when none or several. */
  target(name: string): ClassRef {
    return findTarget(this.db, name);
  }

  /** Pulls one block (a target or a found block) with `options` (the parser is the workspace's). */
  async pull(target: string | ClassRef, options: Omit<PullOptions, 'parser'>): Promise<PullReport> {
    const ref = typeof target === 'string' ? this.target(target) : target;
    return pullBlock(this.session(), ref, { ...options, parser: await this.parser() });
  }

  /** The folders the originals of blocks are imported from (shown read-only to every sandbox that compares). */
  originalRoots(): string[] {
    return [...new Set([...this.session().repos.values()].flatMap((r) => mountRoot(r) ?? []))];
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
  async validatePulled(file: string, text: string, options: Parameters<typeof validatePulled>[3]): Promise<PulledVerdict> {
    return validatePulled({ session: this.session(), parser: await this.parser() }, file, text, options);
  }

  /**
   * Runs the local repositories' tests under the observer (all when `repos` is empty) and records how they built and
   * called their blocks; the next pulls build and feed those blocks that way. The caller saves the index.
   */
  async observe(options: ObserveOptions, repos: string[] = []): Promise<ObserveSummary[]> {
    const summaries = await observeRepositories(this.session(), { parser: await this.parser(), ...options }, repos);
    this.session(true);
    return summaries;
  }

  /** The calls of a block its repository's tests made, each marked whether the files its test imported changed since. */
  observedCalls(ref: ClassRef): (ObservedCall & { stale: boolean })[] {
    const entries = freshEntries(this.db, ref.repoId);
    return observedCallsOf(this.db, ref.repoId, ref.module, ref.name).map((c) => ({ ...c, stale: entries.get(c.entry) !== true }));
  }
}
