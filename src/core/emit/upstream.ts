/**
 * Has the upstream code of a pulled file changed since the pull? Each inlined definition recorded the git blob id of
 * its source file; the index knows the blob id of that file now.
 */
import type { IndexDb } from '../store/database';
import type { Provenance } from './emit';

export type UpstreamState = 'same' | 'changed' | 'missing' | 'unindexed';

export interface UpstreamEntry {
  names: string[];
  repo: string;
  path: string;
  state: UpstreamState;
  /** The blob the index holds now (for `changed`). */
  blob?: string;
}

export interface UpstreamStatus {
  /** `changed` when any definition's source changed or disappeared; `unknown` when its repository is not indexed. */
  state: 'up-to-date' | 'changed' | 'unknown';
  entries: UpstreamEntry[];
}

export function upstreamStatus(db: IndexDb, prov: Provenance): UpstreamStatus {
  const entries = prov.definitions.map((d): UpstreamEntry => {
    const repo = db.get('SELECT id FROM repos WHERE name = ?', [d.repo]);
    if (!repo) return { names: d.names, repo: d.repo, path: d.path, state: 'unindexed' };
    const file = db.get("SELECT hash FROM files WHERE repo_id = ? AND path = ? AND status != 'skipped'", [repo.id, d.path]);
    if (!file) return { names: d.names, repo: d.repo, path: d.path, state: 'missing' };
    const blob = String(file.hash);
    return blob === d.blob ? { names: d.names, repo: d.repo, path: d.path, state: 'same' } : { names: d.names, repo: d.repo, path: d.path, state: 'changed', blob };
  });
  const state = entries.some((e) => e.state === 'changed' || e.state === 'missing')
    ? 'changed'
    : entries.some((e) => e.state === 'unindexed')
      ? 'unknown'
      : 'up-to-date';
  return { state, entries };
}
