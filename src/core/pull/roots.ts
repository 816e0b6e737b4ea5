/**
 * The folders a pull shows the judge: each repository's folder (mounted read-only), the folders its modules import
 * from (a src/ layout's, its root), and of the other indexed repositories only those the code depends on.
 */
import { repoKind } from '../sources/kinds';
import type { PullSession } from './session';
import * as fs from 'fs';
import * as path from 'path';
import { isImported } from '../store/sourceText';
import type { RepoRow } from '../store/sourceText';

/**
 * Those of `candidates` that `repoId`'s code needs: the repositories it depends on (it imports one of their top-level
 * names without a guard: `ModuleTable.dependsOn`), and theirs in turn. No other repository's folder is shown to a
 * sandbox that runs `repoId`'s code (its original, its observed tests), so indexed repositories cannot reach each other.
 */
export function dependencies(session: PullSession, repoId: number, candidates: Iterable<number>): Set<number> {
  const left = new Set(candidates);
  const found = new Set<number>();
  const frontier = [repoId];
  while (frontier.length) {
    const from = frontier.pop()!;
    for (const id of [...left])
      if (session.table.topLevelNames(id).some((top) => session.table.dependsOn(from, top))) {
        left.delete(id);
        found.add(id);
        frontier.push(id);
      }
  }
  return found;
}

/** The local repositories `ids` that are on this machine: the folders they import from, and those to mount. */
export function localRoots(session: PullSession, ids: Iterable<number>): { roots: string[]; mounts: string[] } {
  const repos = [...ids].map((id) => session.repos.get(id)).filter((r): r is RepoRow => !!r && !!importRoot(r) && fs.existsSync(r.root));
  return { roots: [...new Set(repos.flatMap((r) => importRoots(r)))], mounts: [...new Set(repos.map((r) => r.root))] };
}

/**
 * The folder the sandbox shows of a local repository: its own folder, never the one above it (a root that is itself a
 * package is imported from its parent, which the sandbox holds with nothing else in it); null for other kinds.
 */
export function mountRoot(repo: RepoRow): string | null {
  return importRoot(repo) ? repo.root : null;
}

/** The folder a local repository's modules import from (a root that is itself a package: its parent), else null. */
export function importRoot(repo: RepoRow): string | null {
  if (!repoKind(repo.kind).workingTree || isImported(repo) || !repo.root) return null;
  return fs.existsSync(path.join(repo.root, '__init__.py')) ? path.dirname(repo.root) : repo.root;
}

/** A `src/` layout's folder (no `src/__init__.py`): the modules under it are named from inside it (the indexer's
 * modulePathOf), so they import from it; the repository's other modules (its tests) from its root. */
export function sourceRoot(repo: RepoRow): string | null {
  const root = importRoot(repo);
  if (!root || root !== repo.root) return null;
  const src = path.join(repo.root, 'src');
  return fs.existsSync(src) && fs.statSync(src).isDirectory() && !fs.existsSync(path.join(src, '__init__.py')) ? src : null;
}

/** Every folder a local repository's modules import from, the `src/` one first. */
export function importRoots(repo: RepoRow): string[] {
  const root = importRoot(repo);
  if (!root) return [];
  const src = sourceRoot(repo);
  return src ? [src, root] : [root];
}
