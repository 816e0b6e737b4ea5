/** What a validation says and what it is asked (the types the judge's protocol maps to), apart from running it. */

/** Tiers in order; python-runner/nnrag_judge/wire/protocol.py has the same list (TIERS, a test checks). */
export const TIERS = ['parsed', 'compiled', 'names-closed', 'imported', 'instantiated', 'forward', 'equivalent'] as const;
export type Tier = (typeof TIERS)[number];
/** Failure categories of a report; python-runner/nnrag_judge/wire/protocol.py has the same list (REPORT_CATEGORIES, a test checks). */
export const FAILURE_CATEGORIES = [
  'syntax',
  'unresolved',
  'native-extension',
  'missing-package',
  'import-error',
  'instantiate',
  'forward',
  'timeout',
  'memory',
  'interpreter',
  /** the block wrote to the validator's own channel */
  'tampered',
  /** the block printed more than the output cap */
  'output',
  /** the copy's parameters or outputs differ from the original's on an argument set tried */
  'differs',
  /** a base class with no forward of its own (abstract methods, forward not implemented): not runnable alone */
  'abstract',
] as const;
export type FailureCategory = (typeof FAILURE_CATEGORIES)[number];

export interface Requirement {
  module: string;
  distribution: string | null;
  version: string | null;
  /** Where the interpreter has it installed (site-packages folder). */
  location?: string | null;
  /** Who installed it (`pip`, `conda`...; null for system packages such as Debian's). */
  installer?: string | null;
  /** PEP 610 direct URL (a VCS or local install), when recorded. */
  url?: string | null;
}

/** One worker's run: wall and own seconds, and by step (`import`, `search` = `build` + `forward` as the worker counted
 * them, `probes`, `exit`), each present only when the run reached it. */
export interface SideTimings {
  seconds?: number;
  own_seconds?: number;
  steps?: Partial<Record<'import' | 'search' | 'build' | 'forward' | 'probes' | 'exit', number>>;
  /** The original's run was replayed from the cache (nothing of it ran). */
  cached?: boolean;
}

/** Where a validation's seconds went: the static tiers, each side's worker, the comparison of their probes. */
export interface JudgeTimings {
  /** Set by the pull, not the judge: the seconds before the judge's own work (the sandbox started, a warm judge reached). */
  starting?: number;
  static?: number;
  original?: SideTimings;
  copy?: SideTimings;
  comparing?: number;
  /** The original run again to check whether its own gradients repeat, after the copy's differed (judge.py
   * `steadiness_checked`). */
  steadiness?: number;
  /** Set by validateFile, not the judge: the failure was answered from an identical earlier job's (nothing ran:
   * originalCache.ts `keptFailure`). */
  reused?: boolean;
}

export interface ValidationReport {
  /** The file the judge read. */
  file?: string;
  ok: boolean;
  tier: Tier | null;
  category?: FailureCategory;
  message?: string;
  /** On an `unresolved` failure: the names the file reads and never defines. */
  names?: string[];
  /** On a `missing-package` failure: the package the interpreter lacks. */
  package?: string;
  class?: string;
  args?: unknown[];
  kwargs?: Record<string, unknown>;
  input_shapes?: unknown[];
  output_shapes?: unknown;
  requirements?: Requirement[];
  /** Set when the block was built by a builder function of its repository. */
  builder?: string;
  /** The model the builder made, when the block was taken from inside it. */
  inside?: string;
  /** Where the repository's own code built the block this way and fed it (`tests/test_x.py::test_conv`). */
  observed?: string;
  /**
   * How the builder built the block, as an argument set the pulled file replays without it (`{"$name": "BasicBlock"}`,
   * `{"$call": "StageConfig", args, kwargs}`, `{"$partial": ...}`, `{"$tuple": [...]}`): set when it can be so written.
   */
  recipe?: { args: unknown[]; kwargs: Record<string, unknown> };
  /** The comparison with the original class: equivalent on the argument sets named, differs, or why not done. */
  equivalence?: {
    status: 'equivalent' | 'differs' | 'unavailable';
    variants?: string[];
    differences?: string[];
    reason?: string;
    /** Values compared (outputs, parameters, buffers, gradients), and the probes of the original's plan. */
    compared_values?: number;
    probes?: number;
    largest_difference?: number;
    /** How values were compared ("bit-identical"). */
    tolerance?: string;
    /** How the original was imported when not plainly (without its package's __init__). */
    original?: string;
    /** Top-level definitions of the pulled file none of whose code ran while the copy was probed. */
    not_exercised?: string[];
    /** Compiled libraries the original's process loaded that the judge saw the copy's process lack (its probes that
     * needed them were left out; the verdict is then `native-extension`). */
    native?: string[];
    /** Train steps whose gradients were not compared: the original's own vary between two backward passes of one
     * step (a kernel reading memory it never wrote); `reason` says so on an equivalent verdict. */
    unstable?: string[];
  };
  /** On a failure: the highest tier the original class reached with the same arguments and inputs. */
  original_passes?: 'instantiated' | 'forward';
  /** How far the original got with the tool's arguments (null: it was not imported), when it was run. */
  original_reached?: 'imported' | 'instantiated' | 'forward' | null;
  /** The original's run was not run again: kept from an identical earlier job (`ValidateOptions.originalCache`). */
  original_cached?: boolean;
  /** The original's run as the judge sends it to be kept: JSON text never parsed here, so no key changes its order
   * (taken out of the report by `validateFile`). */
  original_frames?: string;
  /** The first lines of the functions the original ran while it was built, run and probed, per absolute file (its
   * worker's trace, written by the repository's own code: the pull's slim copy checks each against the index). */
  executed?: Record<string, number[]>;
  /** Of those, the functions that first ran once the original was imported (its building, forward and probes): what a
   * copy that fails where the original runs may lack (the pull's follow stage). */
  executed_after_import?: Record<string, number[]>;
  /** Why the original was not imported (with `original_reached: null`, from a run of the original alone). */
  original_reason?: string;
  /** The module the code asked for at run time (`importlib.import_module("pkg." + name)`) when an import failed
   * on a part of it (`pkg`): a compiled module loaded by name, when `pkg` is inlined. */
  requested_module?: string;
  /** Names the file reads and never defines because the original's module does not either (its bug, not the copy's). */
  upstream_undefined?: string[];
  /** Whether every output value the judge received was finite. */
  output_finite?: boolean;
  /** How many output values the judge checked itself. */
  checked_values?: number;
  /** The last lines the block printed, on some failures. */
  output?: string;
  seconds: number;
  /** The workers' own time in seconds (not the time they waited for a CPU): what a pull's time limit counts. */
  own_seconds?: number;
  /** Where the seconds went, as the judge measured them (informative: no verdict reads it). */
  timings?: JudgeTimings;
  /** Which sandbox held the block. */
  sandbox?: string;
  /** Set when that sandbox is weaker than bubblewrap's: what it does not protect. */
  weakSandbox?: string;
}

export interface ValidateOptions {
  python: string;
  runner: string;
  timeoutMs?: number;
  memoryMb?: number;
  className?: string;
  /** Constructor arguments to try first (how the repository itself builds the block). */
  candidates?: {
    args: unknown[];
    kwargs: Record<string, unknown>;
    documented?: boolean;
    /** Where the repository's own code was seen making this call (store/observed.ts), and its forward's inputs there. */
    observed?: string;
    inputs?: { args: unknown[]; kwargs: Record<string, unknown> };
  }[];
  /** The repository's own code that builds and calls the block (tests, examples): the judge reads inputs from it. */
  examples?: string[];
  /** Modules known to be compiled extensions, for the failure category. */
  native?: string[];
  /** A function of the file that builds the block without arguments (the repository's own builder). */
  builder?: string;
  signal?: AbortSignal;
  /**
   * Where the original's runs are kept (`dir`), keyed by what the original's run depends on: the judge's code, the
   * interpreter, the original, the arguments and inputs asked for, and `blobs`, the source the block's code comes
   * from. An identical job runs only the copy (the judge checks the Python and torch versions the run was made with).
   */
  originalCache?: { dir: string; blobs: string[] };
  /** The original's run kept from an identical earlier job, and whether to send it back to be kept (originalCache.ts). */
  originalFrames?: string;
  keepOriginal?: boolean;
  /** Validate in a warm interpreter of this pool instead of a fresh process. */
  pool?: ValidatorPoolLike;
  /** false: refuse (an error, nothing run) when only a weaker sandbox than bubblewrap's is available. */
  allowWeakSandbox?: boolean;
  /** The class the file was pulled from, to build beside the copy and compare (`path`: a folder for sys.path). */
  original?: OriginalClass;
  /** Files the file imports from beside it (a module of shared helpers), copied next to it for the run. */
  companions?: string[];
  /** Compiled operators built for the file (`--build-native`): copied into its `_nnrag_native` folder for the run,
   * and loaded for the original as the module it imports. Undefined: those the file's own loader calls name, from
   * the `_nnrag_native` folder beside it. */
  natives?: NativeFile[];
  /** Names the original's own modules read and never define (an upstream bug): the file may read them too. */
  upstreamUndefined?: string[];
  /** Run only the original (how far it gets with the tool's arguments), nothing of the file: for a copy that cannot
   * run, so that a batch counts the blocks whose original reaches forward. */
  originalOnly?: boolean;
}

/** The folder beside a pulled file that holds the compiled operators it loads (`--build-native`). */
export const NATIVE_FOLDER = '_nnrag_native';

/** A compiled operator a pulled file loads: the module the code imports, the name it is loaded under, the file. */
export interface NativeFile {
  module: string;
  name: string;
  /** The shared object on this machine. */
  file: string;
  /** Its name in the `_nnrag_native` folder. */
  fileName: string;
}

export interface OriginalClass {
  module: string;
  class: string;
  path: string | null;
  /** The folders of other indexed repositories whose code the copy inlines (mmcv beside mmpretrain): on the
   * original's path after `path`, ahead of site-packages, so that the original uses the same code. */
  also?: string[];
  /** The folders the sandbox shows for it, read-only: each repository's own folder, never the one above it (a
   * package-root repository is imported from its parent, which the sandbox holds with nothing else in it). */
  mounts?: string[];
  /** The indexed source file of the class and its blob id: the judge refuses an original imported from elsewhere or
   * changed since. */
  file?: string;
  blob?: string;
  /** A digest of the blob of every indexed file of the repositories mounted for it: a kept run of the original
   * (originalCache.ts, whose key holds the whole original) is run again when any file it could import changed. */
  state?: string;
  /** For a block built by a builder function: that function in the original repository. */
  builder?: { module: string; name: string };
}

/** What validateFile needs of a pool (the pool lives in validatorPool.ts). */
export interface ValidatorPoolLike {
  validate(file: string, options: ValidateOptions): Promise<ValidationReport>;
}
