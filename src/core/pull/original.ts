/** The original a pulled block is compared with: where its class imports from, and why it cannot be when it cannot. */
import { repoKind } from '../sources/kinds';
import type { PullSession } from './session';
import { importRoots, localRoots } from './roots';
import { companionRepos } from './stageResolve';
import * as fs from 'fs';
import { createHash } from 'crypto';
import * as path from 'path';
import type { ClassRef } from '../store/target';
import type { Provenance } from '../emit/pulledFile';
import { errorMessage } from '../base/errors';
import { findTarget } from '../store/target';
import { isImported } from '../store/sourceText';
import type { OriginalClass, ValidationReport } from '../validate/runner';

const states = new WeakMap<PullSession, Map<number, string>>();

/** A digest of the path and blob of every indexed file of the repositories `ids` (each read once a session). */
function repositoryState(session: PullSession, ids: Iterable<number>): string {
  let known = states.get(session);
  if (!known) states.set(session, (known = new Map()));
  const h = createHash('sha256');
  for (const id of [...new Set(ids)].sort((a, b) => a - b)) {
    let one = known.get(id);
    if (one === undefined) {
      const files = createHash('sha256');
      session.db.each("SELECT path, hash FROM files WHERE repo_id = ? AND status != 'skipped' ORDER BY path", [id], (r) =>
        files.update(`${String(r.path)}\0${String(r.hash)}\n`),
      );
      known.set(id, (one = files.digest('hex')));
    }
    h.update(`${id}:${one}\n`);
  }
  return h.digest('hex');
}

/** Where the original class can be imported from for the equivalence check, or why it cannot. `inlined`: the
 * other repositories whose code the copy inlines (their folders go on the original's path too). */
export function originalOf(session: PullSession, ref: ClassRef, inlined: Iterable<number> = []): OriginalClass | { unavailable: string } {
  const repo = session.repos.get(ref.repoId);
  if (!repo) return { unavailable: 'its repository is not in the index' };
  if (repoKind(repo.kind).installed) return { module: ref.module, class: ref.name, path: null };
  if (isImported(repo) && repoKind(repo.kind).workingTree)
    return {
      unavailable:
        'its repository came with a shared or imported index, and NN-RAG never imports code from a folder such an index names; index the repository yourself to compare with its original',
    };
  const [folder, ...rest] = importRoots(repo);
  if (!folder) return { unavailable: `a ${repoKind(repo.kind).noun} has no checkout to import the original from` };
  if (!fs.existsSync(repo.root)) return { unavailable: `its repository's folder ${repo.root} is not on this machine` };
  // the judge checks that the class it imports comes from this file, unchanged since it was indexed
  const file = session.files.get(ref.fileId);
  const source = file ? path.join(repo.root, file.path) : undefined;
  const others = localRoots(session, inlined);
  const also = [...new Set([...rest, ...others.roots])].filter((f) => f !== folder);
  const mounts = [...new Set([repo.root, ...others.mounts])];
  return {
    module: ref.module,
    class: ref.name,
    path: folder,
    ...(also.length ? { also } : {}),
    mounts,
    state: repositoryState(session, [ref.repoId, ...inlined]),
    ...(source && fs.existsSync(source) ? { file: source, blob: file!.hash } : {}),
  };
}

/**
 * A validation report as the user reads it: why the block was not compared when its original is unavailable, and
 * for a file holding the user's edits that differs, that the difference is theirs.
 */
export function explained(report: ValidationReport, original: OriginalClass | { unavailable: string } | undefined, edited = false): ValidationReport {
  let out = report;
  if (original && 'unavailable' in original && out.ok && !out.equivalence)
    out = { ...out, equivalence: { status: 'unavailable', reason: original.unavailable } };
  if (edited && out.category === 'differs') out = { ...out, message: `differs from the original (your edits): ${out.message ?? ''}` };
  return out;
}

/**
 * The original of a pulled file, as its header names it: the class in its repository, at the blob it was pulled
 * from (the judge refuses a file that changed since), or why it cannot be compared. With `python`, the repositories
 * its repository runs with under it (`stageResolve.companionRepos`) are on the original's path, as in its pull.
 */
export async function originalOfPulled(session: PullSession, prov: Provenance, python?: string): Promise<OriginalClass | { unavailable: string }> {
  let ref: ClassRef;
  try {
    ref = findTarget(session.db, prov.target);
  } catch (err) {
    return { unavailable: `its original ${prov.target} is not in the index: ${errorMessage(err)}` };
  }
  const named = new Set(prov.definitions.map((d) => d.repo));
  const inlined = new Set([...session.repos.values()].filter((r) => r.id !== ref.repoId && named.has(r.name)).map((r) => r.id));
  // (and those its repository runs with that the file names nothing of: a package the original's imports need)
  for (const id of python ? await companionRepos(session, ref.repoId, python) : []) if (id !== ref.repoId) inlined.add(id);
  const found = originalOf(session, ref, inlined);
  if (!('module' in found)) return found;
  const own = prov.definitions.find((d) => d.module === ref.module && d.names.includes(ref.name));
  return own && found.file ? { ...found, blob: own.blob } : found;
}
