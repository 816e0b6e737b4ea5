/**
 * What each kind of repository is, in one place: every question the code asks of a repository's kind (how its
 * files are read, whether its original classes import from an installed package, whether it is a working tree on
 * this machine) reads this table, so a new kind is one row here (docs/dev/development.md, "Add a repository kind")
 * and its opener in open.ts.
 */
import type { SourceKind } from './types';

export interface RepoKind {
  /** Where an indexed file's bytes are read: the git objects of its bare clone, or its folder. */
  files: 'git-objects' | 'folder';
  /**
   * Its own tree can be read beyond the indexed files (its README, the C++ sources of its compiled operators): from
   * its git objects at its commit, from its folder, or not at all (an installed package's folder is site-packages).
   */
  tree: 'git-objects' | 'folder' | 'none';
  /** A working tree on this machine that the user edits: its changes not committed are said in provenance, its tests
   * run in the observer, it is mounted and put on the path where its original classes import from. */
  workingTree: boolean;
  /** A package the interpreter has installed: its originals import from it (no folder on the path), it follows the
   * interpreter the user selects when it names none, and its commit is a `name==version` pin. */
  installed: boolean;
  /** What its location is, for messages. */
  noun: string;
}

export const REPO_KINDS: Readonly<Record<SourceKind, RepoKind>> = {
  folder: { files: 'folder', tree: 'folder', workingTree: true, installed: false, noun: 'folder' },
  git: { files: 'git-objects', tree: 'git-objects', workingTree: false, installed: false, noun: 'git repository' },
  'python-env': { files: 'folder', tree: 'none', workingTree: false, installed: true, noun: 'installed package' },
};

/** The kind of a repository row or setting; an unknown kind (a row of a newer index) has only its indexed files read,
 * from its folder. */
export function repoKind(kind: string | undefined): RepoKind {
  return Object.prototype.hasOwnProperty.call(REPO_KINDS, kind ?? '') ? REPO_KINDS[kind as SourceKind] : UNKNOWN;
}

const UNKNOWN: RepoKind = { files: 'folder', tree: 'none', workingTree: false, installed: false, noun: 'source' };
