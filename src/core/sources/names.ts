/** The names a configured source indexes under (no I/O: the extension and the service both ask). */
import { repoKind } from './kinds';
import * as path from 'path';
import type { SourceConfig } from './types';

export function defaultGitName(url: string): string {
  const last = new URL(url).pathname.split('/').filter(Boolean).pop() ?? 'repo';
  return last.replace(/\.git$/, '') || 'repo';
}

/**
 * The repository names `config` gives the index: its `name`; else each package of an installed-packages list, the
 * last part of a git URL, or the folder's basename.
 */
export function repositoryNames(config: SourceConfig): string[] {
  if (config.name) return [config.name];
  if (repoKind(config.kind).installed)
    return config.location
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean);
  if (repoKind(config.kind).files === 'git-objects' || /^[a-z][a-z0-9+.-]*:\/\//i.test(config.location)) {
    try {
      return [defaultGitName(config.location)];
    } catch {
      return [config.location];
    }
  }
  return [path.basename(config.location.replace(/[\\/]+$/, ''))];
}
