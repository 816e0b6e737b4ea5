/**
 * Every custom request and notification between the extension (client) and the language server, declared once.
 * Method names are `nnrag/verbNoun`; call sites use these constants, never string literals.
 */
import type { ObserveSummary } from '../core/pull/observe';
import type { ClassDetails } from '../core/resolve/describe';
import type { PullReport } from '../core/pull/types';
import type { PullRequest } from '../core/workspace/request';
import type { PulledFileStatus, UpdateState } from '../core/pull/update';
import type { Requirement, ValidationReport } from '../core/validate/runner';
import type { SearchHit, SearchQuery } from '../core/search/search';
import type { IndexStatus } from '../core/service/indexService';
import type { SourceConfig } from '../core/sources/types';
import type { IndexStats } from '../core/store/stats';
import type { DependencyGraph } from '../core/emit/emit';
import type { Provenance } from '../core/emit/pulledFile';
import type { FileSizes } from '../core/emit/why';
import type { GitCredentials } from '../core/sources/git';
import type { SandboxDescription } from '../core/validate/bubblewrap';

/** A typed method name: `P` the params, `R` the result. */
export interface Method<P, R> {
  method: string;
  /** Phantom fields, for typing only. */
  readonly params?: P;
  readonly result?: R;
}

function method<P, R>(name: string): Method<P, R> {
  return { method: name };
}

/** Paths and settings the client computes and hands to the server at start (no guessing inside the server). */
export interface InitOptions {
  storageDir: string;
  treeSitterWasm: string;
  pythonWasm: string;
  sqlWasm: string;
  /** The parse worker script (dist/parseWorker.js); without it the server parses in its own thread. */
  parseWorker?: string;
  runner: string;
  cacheDir: string;
  repositories: SourceConfig[];
  maxFileKb: number;
  /** Fetch git repositories for new commits this often (minutes); 0 or absent: only at start and on demand. */
  gitFetchIntervalMinutes?: number;
  /** A team's published index (an `nn-rag export` archive: a path or an http(s) URL) the window starts from. */
  sharedIndex?: string;
  /** The most a shared index may download and unpack to (MB), and whether a redirect to another origin is followed. */
  sharedIndexMaxSizeMB?: number;
  sharedIndexFollowRedirects?: boolean;
}

export type { IndexState, IndexStatus } from '../core/service/indexService';

export interface TreeNode {
  kind: 'repo' | 'category' | 'block';
  label: string;
  repo: string;
  category?: string;
  hit?: SearchHit;
  count?: number;
  /** A repository of the shared index (`nnrag.sharedIndex`): read-only here, not re-indexed or removed. */
  shared?: boolean;
  /** The user's own repository, under a name the shared index holds too: this one is used, the shared copy is not. */
  shadowsShared?: boolean;
  /** A repository whose last index run failed: why (its node offers Retry, Remove and Open Settings). */
  error?: string;
  /** Installed packages: the version indexed, the interpreter they come from and the folder they are in. */
  installed?: { version?: string; python?: string; folder: string };
  /** How much of the repository observation covers ("observed N of M entries (K blocks fed)"), once observed. */
  observed?: { observed: number; entries: number; fed: number };
}

/** The editor's pull: the core's request (`core/workspace/request.ts`) for one block and the file it is written to. */
export type PullParams = PullRequest & { target: string; out: string };

/**
 * In the editor a pull answers in seconds: trying the repository's builders, for a block that guessed arguments do not
 * build, stops after this long (the command line's pull tries them all).
 */
export const EDITOR_BUILDER_BUDGET_S = 1.5;

/** Client -> server: the index state (also pushed by `IndexStatusChanged`). */
export const GetIndexStatus = method<void, IndexStatus>('nnrag/getIndexStatus');
/** Server -> client: the index state changed (progress while indexing, counts when done). */
export const IndexStatusChanged = method<IndexStatus, void>('nnrag/indexStatusChanged');
/** Client -> server: index the configured repositories again (on demand or after a settings change); `only`: that one. */
/** Use the shared index at `location` (none: stop using one); fetched again only when it changed (ETag). */
export const UseSharedIndex = method<{ location?: string }, IndexStatus>('nnrag/useSharedIndex');
/** Client -> server: run the local repositories' tests, builders and configs under the observer (all, or `repos`). */
export const ObserveRepositories = method<{ python: string; memoryMb: number; repos?: string[]; allowWeakSandbox?: boolean }, ObserveSummary[]>(
  'nnrag/observeRepositories',
);
export const ReindexRepositories = method<{ repositories?: SourceConfig[]; gitFetchIntervalMinutes?: number; only?: string }, IndexStatus>(
  'nnrag/reindexRepositories',
);
/** Client -> server: search blocks for the QuickPick and the tree. */
/** A search of the index, ranked again by the user's embedding model (`embeddings`) or merged with the team's search
 * servers' answers (`servers`: nnrag.search.servers). */
export const SearchBlocks = method<SearchQuery & { embeddings?: { url: string; model: string }; servers?: string[] }, SearchHit[]>('nnrag/searchBlocks');
/** Client -> server: for a search that found nothing, the query as the index would spell it (typos corrected). */
export const SuggestSearch = method<{ text: string }, { meant?: string }>('nnrag/suggestSearch');
/** Client -> server: children of a tree node (repositories, then categories, then blocks). */
export const ListTree = method<{ parent?: TreeNode; query?: string }, TreeNode[]>('nnrag/listTree');
/** Client -> server: facts, bases and dependencies of one block. */
export const GetBlockDetails = method<{ target: string }, ClassDetails>('nnrag/getBlockDetails');
/** Client -> server: the file a pull would write, in memory: its lines, its dependency graph, why the largest are there. */
export const ExplainDependencies = method<{ target: string; python?: string }, { target: string; sizes: FileSizes; graph: DependencyGraph }>(
  'nnrag/explainDependencies',
);
/** Client -> server: pull a block into a file and validate it (cancellable). */
export const PullBlock = method<PullParams, PullReport>('nnrag/pullBlock');
/** Client -> server: the state of pulled files (texts as the editor holds them); files that were not pulled are left out. */
export const GetPulledStatus = method<{ files: { uri: string; text: string }[] }, (PulledFileStatus & { uri: string })[]>('nnrag/getPulledStatus');
/**
 * Client -> server: what an update gives a pulled file (`file` names it, for the manifest that keeps the body as
 * pulled; `text` is its content in the editor). Writes nothing: the client applies `next` as one edit.
 */
export const PlanUpdate = method<
  { file: string; text: string },
  /** `pulled`: the file as it was pulled (upstream's header over the body kept in the manifest), when the manifest has it */
  {
    state: UpdateState;
    next?: string;
    upstream: string;
    base?: string;
    conflicts: number;
    pulled?: string;
    /** For a merge: upstream's changes taken, the user's edits kept. */
    upstreamChanges?: number;
    yourEdits?: number;
  }
>('nnrag/planUpdate');
/**
 * Client -> server: after the client wrote a pulled file (a pull, an update, a validation), record it in the `.nnrag/`
 * folder beside the file from its header (NAME.manifest.json, required_repos.json). `text`: what the client just wrote (read from disk when
 * absent; a save may not have reached it yet). `base`: the body later updates merge against (a pull's `report`
 * without one: the body as written; else the manifest's base is kept). `requirements`: what a validation found (else
 * the report's, else what the last one found is kept).
 */
export const WriteManifests = method<{ file: string; report?: PullReport; base?: string; text?: string; requirements?: Requirement[] }, void>(
  'nnrag/writeManifests',
);
/** Client -> server: a pulled file was deleted: its manifest goes, and it leaves required_repos.json. */
export const RemoveManifests = method<{ file: string }, void>('nnrag/removeManifests');
/**
 * Client -> server: validate a pulled file's `text` (the editor's, or what an update gives it) in a scratch copy, in the
 * warm validator (cancellable); `text` comes back with the verdict recorded in its header, for the client to apply.
 */
export const ValidatePulled = method<
  { file: string; text: string; python: string; timeoutSeconds: number; memoryMb: number; allowWeakSandbox?: boolean },
  { validation: ValidationReport; text: string }
>('nnrag/validatePulled');
/**
 * Client -> server: several blocks pulled into `dir` (a scratch folder), each into its own file, what they share once
 * in `_nnrag_common.py`, and validated; refused when `dest` (the folder they are for) holds a shared module that is
 * not an untouched one of ours.
 */
export const PullTogether = method<
  Omit<PullParams, 'target' | 'out'> & { targets: string[]; dir: string; dest: string },
  { reports: PullReport[]; files: string[]; shared?: { file: string; definitions: number; names: string[] } }
>('nnrag/pullTogether');
/** Client -> server: which sandbox validation would run in, asked before running a block's code. */
export const GetSandbox = method<{ memoryMb: number }, SandboxDescription>('nnrag/getSandbox');
/** Client -> server: the provenance recorded in a pulled file's text. */
export const GetProvenance = method<{ text: string }, Provenance | null>('nnrag/getProvenance');
/** Client -> server: the source text of a block's file (git sources have no checkout to open). */
export const ReadSource = method<{ target: string }, { text: string; path: string; line: number; repo: string }>('nnrag/readSource');
/** Client -> server: statistics for the log and the status bar tooltip. */
export const GetStats = method<void, IndexStats>('nnrag/getStats');
/** Server -> client: credentials for a git URL that asked for them (answered from VS Code's secrets, or null). */
export const GetGitCredentials = method<{ url: string }, GitCredentials | null>('nnrag/getGitCredentials');
/** Server -> client: the credentials given for a git URL were refused; forget them. */
export const GitCredentialsRejected = method<{ url: string }, void>('nnrag/gitCredentialsRejected');
