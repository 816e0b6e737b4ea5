/**
 * The judge's requests as its client (judge.ts) writes them (python-runner/judge.schema.json describes them; the judge
 * refuses a field it does not know; test/unit/validate/judgeProtocol.test.ts checks these against the same file), and what the
 * observer answers.
 */
import type { NativeFile, ValidateOptions } from './report';
import { DEFAULT_MEMORY_MB } from './limits';
import type { SandboxKind } from './bubblewrap';

/** What the observer is asked to run (python-runner's `jobs.ObserveJob`). */
/** One runnable entry point of a repository: a test, a builder (a function or a composite block's class that needs no
 * argument, run and then fed once) or a configuration file's `model`, built by the repository's registry. */
export interface ObserveEntry {
  id: string;
  module: string;
  function: string;
  class?: string;
  kind?: 'build' | 'config' | 'example';
  /** For a config: the file (relative to the repository's folder) and the registries its `model` may be built by,
   * as [module, name] (the one that knows the model's `type` is used). */
  file?: string;
  registries?: [string, string][];
  /** For a config: the modules that register classes in those registries. */
  modules?: string[];
  /** For an example: the README's code block, run as it is written (in the sandbox, as a test is). */
  code?: string;
}

export interface ObserveSpec {
  /** The repository's folder (mounted read-only) and the folder its modules import from. */
  root: string;
  path: string;
  /** Other folders its modules import from (its root, when `path` is a `src/` layout's folder). */
  also: string[];
  /** Seconds one entry may run. */
  entry_s: number;
  entries: ObserveEntry[];
  /** The repository's compiled operators built for it (`--build-native`), in `native_folder`'s `_nnrag_native/`. */
  natives?: { module: string; name: string; file: string }[];
  native_folder?: string;
  /** The repository's own package, imported once by a template the observer's workers are forked from (a worker that
   * dies is replaced without importing it again). */
  package?: string;
  /** The root is a private copy (set by the judge): the repository's `setup.py` runs there as an editable install
   * would, without building, so that the package data it places (links into the package) is there. */
  install?: boolean;
}

/** What the observer answers: per entry, what it saw (see store/observed.ts), or why the run stopped. */
export interface ObserveAnswer {
  ok: boolean;
  category?: string;
  message?: string;
  observed: { entry: string; seconds?: number; error?: string | null; calls?: unknown[]; files?: unknown[] }[];
}

/** What a sandbox's judge may write into besides its work folder, emptied before each worker. */
const scratchOf = (kind: SandboxKind): string[] => (kind === 'bubblewrap' ? ['/tmp', '/dev/shm'] : []);

/**
 * A `validate` request to the judge, as python-runner/judge.schema.json describes it (the judge refuses a field it does
 * not know; test/unit/validate/judgeProtocol.test.ts checks these against the same file).
 */
export function validateRequest(
  id: number,
  file: string,
  work: string,
  kind: SandboxKind,
  options: ValidateOptions,
  natives: NativeFile[],
): Record<string, unknown> {
  return {
    kind: 'validate',
    id,
    file,
    work,
    scratch: scratchOf(kind),
    class: options.className,
    candidates: options.candidates ?? [],
    examples: options.examples ?? [],
    native: options.native ?? [],
    builder: options.builder,
    memory_mb: options.memoryMb ?? DEFAULT_MEMORY_MB,
    timeout_s: (options.timeoutMs ?? 60_000) / 1000,
    original: options.original,
    ...(options.originalOnly ? { original_only: true } : {}),
    ...(options.upstreamUndefined?.length ? { upstream_undefined: options.upstreamUndefined } : {}),
    ...(options.originalFrames !== undefined ? { original_frames: options.originalFrames } : {}),
    ...(options.keepOriginal ? { keep_original: true } : {}),
    natives: natives.map((n) => ({ module: n.module, name: n.name, file: n.fileName })),
  };
}

/** An `observe` request to the judge (python-runner/judge.schema.json). */
export function observeRequest(
  id: number,
  spec: ObserveSpec,
  work: string,
  kind: SandboxKind,
  options: { timeoutMs: number; memoryMb?: number },
): Record<string, unknown> {
  return {
    kind: 'observe',
    id,
    observe: spec,
    work,
    scratch: scratchOf(kind),
    memory_mb: options.memoryMb ?? DEFAULT_MEMORY_MB,
    timeout_s: options.timeoutMs / 1000,
  };
}
