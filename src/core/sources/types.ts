/** Where code comes from: a source lists its files (with a cheap change key) and reads them. */

export type SourceKind = 'folder' | 'git' | 'python-env';

/** A repository as the user configures it (CLI arguments or the `nnrag.repositories` setting). */
export interface SourceConfig {
  /** Local folder, http(s) git URL, or (for `python-env`) the package name. */
  location: string;
  kind?: SourceKind;
  /** The repository's name in the index; defaults to the folder, URL or package basename. */
  name?: string;
  /** Branch, tag or commit for git sources. */
  ref?: string;
  /** Path globs (relative, `/`-separated) to index; all `.py` files when empty. */
  include?: string[];
  exclude?: string[];
  /** Class-name globs: only matching classes become blocks (all when empty). */
  symbols?: string[];
  /** Higher wins when two repositories define the same module path. */
  priority?: number;
  /** Inline this repository's code into files pulled from other repositories (else keep it an import). */
  inline?: boolean;
  /** For `python-env`: the interpreter whose site-packages hold the package. */
  python?: string;
  /** false: kept in the settings but not indexed (its blocks leave the index until it is enabled again). */
  enabled?: boolean;
}

export interface SourceFile {
  /** `/`-separated path relative to the source root. */
  path: string;
  size: number;
  mtimeMs?: number;
  /** Git blob id when the source knows it (git sources). */
  oid?: string;
}

export interface SkippedEntry {
  path: string;
  reason: 'link-outside' | 'link-loop' | 'link' | 'unreadable' | 'too-large';
  detail: string;
}

export interface RepoInfo {
  name: string;
  kind: SourceKind;
  location: string;
  url?: string;
  ref?: string;
  commit?: string;
  /** Absolute folder the files live in (a clone's gitdir for git sources). */
  root: string;
  /** Dotted prefix for module paths (`torchvision` when the root is the package itself). */
  modulePrefix: string;
  license?: string;
}

export interface OpenedSource {
  info: RepoInfo;
  config: SourceConfig;
  list(signal?: AbortSignal): Promise<{ files: SourceFile[]; skipped: SkippedEntry[] }>;
  /** `list` restricted to some paths (live updates of a local folder). */
  listPaths?(paths: string[]): Promise<{ files: SourceFile[]; skipped: SkippedEntry[] }>;
  read(file: SourceFile): Promise<Uint8Array>;
  /** The file's absolute path when it is a plain local file (a parse worker then reads it itself). */
  localPath?(file: SourceFile): string;
}
