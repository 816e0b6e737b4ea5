/**
 * Has the upstream code of a pulled file changed since the pull? Each inlined definition recorded the git blob id of
 * its source file; the index knows the blob id of that file now (store/files.ts).
 */
import type { IndexDb } from '../store/database';
import { definitionDigests, indexedFile } from '../store/files';
import type { Provenance } from './pulledFile';

/** `moved`: the definition's own text is as pulled, but its file changed (its recorded blob is not the file's now). */
export type UpstreamState = 'same' | 'moved' | 'changed' | 'missing' | 'unindexed';

export interface UpstreamEntry {
  names: string[];
  repo: string;
  path: string;
  state: UpstreamState;
  /** The blob the index holds now (for `changed`). */
  blob?: string;
}

export interface UpstreamStatus {
  /** `changed` when any definition's own text changed or disappeared (not when only another part of its file did);
   * `unknown` when its repository is not indexed. */
  state: 'up-to-date' | 'changed' | 'unknown';
  entries: UpstreamEntry[];
}

export function upstreamStatus(db: IndexDb, prov: Provenance): UpstreamStatus {
  const byFile = new Map<string, Map<string, string> | undefined>();
  // a definition the file renamed is asked of the index by its own name
  const original = new Map(
    Object.entries(prov.renamed ?? {}).map(([qualified, name]) => [
      `${qualified.slice(0, qualified.lastIndexOf('.'))}\0${name}`,
      qualified.slice(qualified.lastIndexOf('.') + 1),
    ]),
  );
  const entries = prov.definitions.map((d): UpstreamEntry => {
    const at = { names: d.names, repo: d.repo, path: d.path };
    const now = indexedFile(db, d.repo, d.path);
    if (now.state !== 'indexed') return { ...at, state: now.state };
    if (now.blob === d.blob) return { ...at, state: 'same' };
    // the file changed: this definition only when its own text did (another definition of the file may have)
    if (d.digest) {
      const digests = byFile.get(`${d.repo}\0${d.path}`) ?? definitionDigests(db, d.repo, d.path);
      byFile.set(`${d.repo}\0${d.path}`, digests);
      if (digests && d.names.every((n) => digests.get(original.get(`${d.module}\0${n}`) ?? n) === d.digest)) return { ...at, state: 'moved', blob: now.blob };
    }
    return { ...at, state: 'changed', blob: now.blob };
  });
  // only a definition's own text decides: a file that changed elsewhere (another class of it) changes nothing pulled,
  // and an update then only refreshes the header's blob ids
  const state = entries.some((e) => e.state === 'changed' || e.state === 'missing')
    ? 'changed'
    : entries.some((e) => e.state === 'unindexed')
      ? 'unknown'
      : 'up-to-date';
  return { state, entries };
}
