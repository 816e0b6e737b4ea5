/**
 * What a front asks of a pull, as plain data (seconds, flags): the command line's flags, the editor's request and an
 * assistant's tool call are each read into one `PullRequest`, and only the core turns it into the pull's options.
 */
import * as path from 'path';
import type { PythonParser } from '../parse/parser';
import type { PullOptions } from '../pull/types';

export interface PullRequest {
  /** Validate (run the block in the sandbox and compare it with its original); false: extract only. */
  validate: boolean;
  /** The interpreter that validates (the user's). */
  python?: string;
  timeoutSeconds?: number;
  memoryMb?: number;
  /** Replace a file that was not pulled, or was edited since. */
  force?: boolean;
  /** Code of other indexed repositories: inlined where the interpreter cannot import it ('auto'), always, or never. */
  inline?: 'auto' | 'all' | 'none';
  /** The user agreed to run the block's code in a weaker sandbox than bubblewrap's (else such a pull fails). */
  allowWeakSandbox?: boolean;
  /** Copy every class the block needs whole (by default they keep only the methods reached). */
  wholeClasses?: boolean;
  /** Keep the whole docstrings of what is pulled in (by default they keep their first paragraph). */
  fullDocstrings?: boolean;
  /** Keep every definition the block reaches (by default a validated file leaves out what its original never ran). */
  full?: boolean;
  /** Write PEP 723 inline metadata (the file's dependencies) into the header. */
  inlineMetadata?: boolean;
  /** How long trying the repository's builders may take when guessed arguments do not build the block (default: no limit). */
  builderBudgetSeconds?: number;
  /** Build the repository's compiled operators the block needs from their C++ sources. */
  buildNative?: boolean;
}

/** What the front running the tool gives every pull: the judge's script and the tool's cache folder. */
export interface Front {
  /** python-runner/judge.py */
  runner?: string;
  /** The tool's cache: the originals' runs (`originals/`) and compiled operators (`native/`) are kept under it. */
  cacheDir?: string;
}

/** Where a front keeps the originals' runs (validate/originalCache.ts), when it has a cache folder. */
export function originalsDir(front: Front): string | undefined {
  return front.cacheDir ? path.join(front.cacheDir, 'originals') : undefined;
}

/** Where a front keeps the compiled operators it built (pull/natives.ts), when it has a cache folder. */
export function nativeDir(front: Front): string | undefined {
  return front.cacheDir ? path.join(front.cacheDir, 'native') : undefined;
}

/** The pull options a request means, for a front. */
export function pullOptionsFor(request: PullRequest, front: Front, parser: PythonParser): Omit<PullOptions, 'out'> {
  const seconds = (s: number | undefined): number | undefined => (s === undefined ? undefined : s * 1000);
  return {
    parser,
    python: request.python,
    runner: front.runner,
    validate: request.validate,
    timeoutMs: seconds(request.timeoutSeconds),
    memoryMb: request.memoryMb,
    force: request.force,
    inline: request.inline,
    allowWeakSandbox: request.allowWeakSandbox,
    wholeClasses: request.wholeClasses,
    fullDocstrings: request.fullDocstrings,
    full: request.full,
    inlineMetadata: request.inlineMetadata,
    builderBudgetMs: seconds(request.builderBudgetSeconds),
    buildNative: request.buildNative && nativeDir(front) ? { cacheDir: nativeDir(front)! } : undefined,
    // a block validated again (the same original, interpreter and arguments) runs only its copy
    originalCache: originalsDir(front),
  };
}
