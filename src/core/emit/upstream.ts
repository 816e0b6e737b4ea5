/**
 * Has the upstream code of a pulled file changed since the pull? Each inlined definition recorded the git blob id of
 * its source file; the index knows the blob id of that file now (store/files.ts).
 */
import type { IndexDb } from '../store/database';
import { indexedFile } from '../store/files';
import type { Provenance } from './pulledFile';

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
    const at = { names: d.names, repo: d.repo, path: d.path };
    const now = indexedFile(db, d.repo, d.path);
    if (now.state !== 'indexed') return { ...at, state: now.state };
    return now.blob === d.blob ? { ...at, state: 'same' } : { ...at, state: 'changed', blob: now.blob };
  });
  const state = entries.some((e) => e.state === 'changed' || e.state === 'missing')
    ? 'changed'
    : entries.some((e) => e.state === 'unindexed')
      ? 'unknown'
      : 'up-to-date';
  return { state, entries };
}
