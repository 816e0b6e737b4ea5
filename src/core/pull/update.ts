/**
 * A pulled file against its upstream: its state (for `nn-rag status`, the editor's CodeLens and Pulled blocks view),
 * and the text an update gives it (for `nn-rag update` and the editor's Update). Nothing here writes the file: the
 * command line writes it, the editor applies it as one undoable edit.
 */
import { firstLine } from '../base/text';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { NnragError } from '../base/errors';
import { bodyHash, parseProvenance, readProvenance, replaceProvenance, splitPulled } from '../emit/pulledFile';
import type { ValidationReport } from '../validate/runner';
import type { Provenance } from '../emit/pulledFile';
import { merge3 } from '../emit/merge';
import { upstreamStatus } from '../emit/upstream';
import type { PythonParser } from '../parse/parser';
import type { IndexDb } from '../store/database';
import { findTarget } from '../store/target';
import type { ClassRef } from '../store/target';
import { pullBlock } from './pull';
import type { PullSession } from './session';
import type { PulledFileStatus } from './pulledState';

export type { PulledFileStatus, PulledState } from './pulledState';

/** Conflict markers a merge left in a file (a line starting `<<<<<<< `, then `=======`, then `>>>>>>> `). */
export function conflictMarkers(text: string): number {
  return [...text.matchAll(/^<{7} [^\n]*\n[^]*?^={7}\n[^]*?^>{7} /gm)].length;
}

/** The state of a pulled file's text, or undefined when it was not pulled (no NN-RAG header). */
export function pulledFileStatus(db: IndexDb, text: string): PulledFileStatus | undefined {
  const { provenance: prov, damaged } = parseProvenance(text);
  const conflicts = conflictMarkers(text);
  if (damaged) return { target: '?', state: 'damaged', edited: true, conflicts, reason: damaged, changed: [], stale: false };
  if (!prov) return undefined;
  let known = true;
  try {
    findTarget(db, prov.target);
  } catch {
    known = false;
  }
  const up = upstreamStatus(db, prov);
  const v = prov.validation;
  const body = bodyHash(text);
  return {
    target: prov.target,
    state: conflicts ? 'conflicted' : known ? up.state : 'unknown',
    edited: body !== prov.hash,
    stale: !!v && v.status !== 'extracted' && body !== (v.body ?? prov.hash),
    conflicts,
    ...(known ? {} : { reason: `${prov.target} is not in this index` }),
    changed: up.entries.filter((e) => e.state === 'changed' || e.state === 'missing').map((e) => ({ names: e.names, path: e.path, state: e.state })),
    ...(known && up.state === 'up-to-date' && up.entries.some((e) => e.state === 'moved') ? { sourcesDiffer: true } : {}),
    ...(v ? { validation: { status: v.status, tier: v.tier ?? null, category: v.category ?? null, ...(v.message ? { message: v.message } : {}) } } : {}),
  };
}

export type UpdateState = 'up-to-date' | 'header-refreshed' | 'updated' | 'merged' | 'conflicts';

export interface UpdatePlan {
  state: UpdateState;
  /** The file's text after the update (absent when up to date). */
  next?: string;
  /** What the block's pull gives today: the upstream side of a comparison. */
  upstream: string;
  /** The body to merge against next time (the upstream body), for the manifest; absent when it does not change. */
  base?: string;
  /** The provenance of the fresh pull, for the manifest. */
  provenance: Provenance;
  conflicts: number;
  /** For a merge: the regions upstream changed that were taken, and the user's edits kept. */
  upstreamChanges?: number;
  yourEdits?: number;
  ref: ClassRef;
}

/**
 * What an update makes of a pulled file's `text`: the block pulled again from the index, and the user's edits kept by
 * a three-way merge of the edited body and the new upstream body against `baseBody` (the body as pulled, kept in the
 * manifest). `scratch`: a folder to pull into; `folder`: the file's, where a shared module of helpers would be.
 */
export async function planUpdate(
  { db, parser, session, scratch }: { db: IndexDb; parser: PythonParser; session: PullSession; scratch: string },
  text: string,
  baseBody: string | undefined,
  label = 'the file',
  folder?: string,
): Promise<UpdatePlan> {
  const { provenance: prov, damaged } = parseProvenance(text);
  if (damaged) throw new NnragError('bad-source', `${label} has a damaged NN-RAG header (${damaged}); pull the block again into another file and compare`);
  if (!prov) throw new NnragError('bad-source', `${label} has no NN-RAG provenance record: it was not pulled, or its header was removed`);
  const ref = findTarget(db, prov.target);
  await fsp.mkdir(scratch, { recursive: true });
  const fresh = await fsp.mkdtemp(path.join(scratch, 'update-'));
  let freshText: string;
  try {
    const out = path.join(fresh, `${ref.name}.py`);
    // a file pulled with others keeps importing what their shared module holds (as long as it is the same code)
    const shared =
      prov.shared && folder ? { module: prov.shared.module, ids: new Set(prov.shared.ids), file: path.join(folder, `${prov.shared.module}.py`) } : undefined;
    await pullBlock(session, ref, { parser, out, validate: false, manifest: false, shared });
    freshText = await fsp.readFile(out, 'utf8');
  } finally {
    await fsp.rm(fresh, { recursive: true, force: true });
  }
  let freshProv = readProvenance(freshText)!;
  if (prov.builtWith && !freshProv.builtWith) {
    // how the repository's builder builds the block (learnt at the pull, which validated): kept, to validate with
    freshProv = { ...freshProv, builtWith: prov.builtWith };
    freshText = replaceProvenance(freshText, freshProv);
  }
  const upstream = splitPulled(freshText);
  const mine = splitPulled(text);
  const edited = bodyHash(text) !== prov.hash;
  const plan = { upstream: freshText, provenance: freshProv, ref, conflicts: 0 };
  if (freshProv.hash === prov.hash) {
    // the same code, but the header may record other sources (an edited header): it is written again
    if (JSON.stringify(freshProv.definitions) !== JSON.stringify(prov.definitions))
      return { ...plan, state: 'header-refreshed', next: `${upstream.header}${mine.body}` };
    return { ...plan, state: 'up-to-date' };
  }
  if (!edited) return { ...plan, state: 'updated', next: freshText, base: upstream.body };
  if (baseBody === undefined) {
    throw new NnragError(
      'bad-source',
      `${label} was edited since the pull and its manifest keeps no base to merge against; pull again into another file and compare`,
    );
  }
  const merged = merge3(baseBody, mine.body, upstream.body);
  return {
    ...plan,
    state: merged.conflicts ? 'conflicts' : 'merged',
    next: `${upstream.header}${merged.text}`,
    base: upstream.body,
    conflicts: merged.conflicts,
    upstreamChanges: merged.upstreamChanges,
    yourEdits: merged.yourEdits,
  };
}

/** The pulled file's text with `v` recorded in its header as the validation (the body, and so its hash, unchanged). */
export function withValidation(text: string, v: ValidationReport): string {
  const prov = readProvenance(text);
  if (!prov) return text;
  const validation = {
    status: v.ok ? 'validated' : 'failed',
    tier: v.tier,
    ...(v.category ? { category: v.category } : {}),
    args: v.args,
    kwargs: v.kwargs,
    input_shapes: v.input_shapes,
    output_shapes: v.output_shapes,
    builder: v.builder,
    ...(!v.ok && v.message ? { message: firstLine(v.message) } : {}),
    ...(v.ok && v.tier !== 'equivalent' && v.equivalence?.reason ? { notCompared: firstLine(v.equivalence.reason) } : {}),
    // what was judged: the verdict goes stale when the body changes again
    body: bodyHash(text),
  };
  return replaceProvenance(text, { ...prov, validation });
}
