/**
 * The follow stage of a pull: a copy that fails where its original runs may lack what the original reached by name
 * while it ran (a registry filled by an import the closure never saw, a namespace enumerated, a `getattr` on a module).
 * The definitions of the repositories the file inlines whose functions first ran once the original was imported (its
 * worker's trace, `ValidationReport.executed_after_import`), and that the closure does not hold, are taken in as
 * roots; the file is judged again and kept only where it gets further, else the first file is written back.
 */
import * as path from 'path';
import type { Emission, JudgeRun, PullOptions } from './types';
import type { PullSession } from './session';
import { emitResolution } from './stageEmit';
import { failureOf } from './stageResolve';
import { tierRank } from './pulledState';
import { judgeInstead, realPath } from './stageSlim';
import { writeSafely } from '../emit/writeSafe';
import { errorMessage } from '../base/errors';
import { computeClosure, unitKey } from '../resolve/closure';
import type { ExtraRoot } from '../resolve/closure';
import type { ModuleRecord } from '../resolve/moduleTable';
import type { ValidationReport } from '../validate/runner';
import type { ValidateOptions } from '../validate/report';

/** Definitions taken in at most (a trace that names more is a framework's machinery, not a name the closure missed). */
export const MAX_FOLLOWED = 48;

/** The failures a definition the closure missed can cause once the file imports. */
const FOLLOWED_CATEGORIES = new Set(['import-error', 'instantiate', 'forward']);

/**
 * The top-level definitions the trace says ran once the original was imported, of the modules of repositories the
 * file inlines, that `emission`'s closure does not hold; each checked against the index (a path of no indexed file,
 * a line of no definition, is ignored). In the order of their files and lines, at most MAX_FOLLOWED + 1.
 */
export function missedDefinitions(session: PullSession, emission: Emission, ran: Record<string, number[]>): ExtraRoot[] {
  const { closure, closureCtx, ref } = emission;
  // the indexed modules of the repositories the file inlines, by their file's real path
  const roots = new Map<number, string>();
  for (const id of new Set([ref.repoId, ...emission.inlined])) {
    const root = session.repos.get(id)?.root;
    if (root) roots.set(id, path.join(realPath(root), path.sep));
  }
  const wanted = new Set(Object.keys(ran).filter((f) => [...roots.values()].some((r) => f.startsWith(r))));
  if (!wanted.size) return [];
  const byPath = new Map<string, ModuleRecord>();
  for (const list of session.table.modules()) {
    for (const rec of list) {
      const root = roots.get(rec.repoId);
      if (!root || !closureCtx.inlines(rec, ref.repoId)) continue;
      const file = session.files.get(rec.fileId);
      const at = file ? path.join(root, file.path) : undefined;
      if (at && wanted.has(at)) byPath.set(at, rec);
    }
  }
  const out: ExtraRoot[] = [];
  for (const file of [...wanted].sort()) {
    const rec = byPath.get(file);
    if (!rec) continue;
    const units = rec.facts.units;
    for (const line of [...new Set(ran[file])].sort((a, b) => a - b)) {
      const unit = units.findIndex((u) => (u.kind === 'class' || u.kind === 'function') && !!u.name && u.startLine <= line && line <= u.endLine);
      if (unit < 0 || closure.graph.hasNode(unitKey(rec, unit)) || out.some((e) => e.rec === rec && e.unit === unit)) continue;
      out.push({ rec, unit });
      if (out.length > MAX_FOLLOWED) return out;
    }
  }
  return out;
}

export interface FollowOutcome {
  /** The followed file's emission when it stands (it is the file written). */
  emission?: Emission;
  verdict: ValidationReport;
  run: JudgeRun;
  /** The followed file's own verdict, when it was judged (its time is the block's, kept or not). */
  judged?: ValidationReport;
}

/**
 * The follow stage: undefined when it does not apply (a copy that passed, an original that did not run forward, no
 * trace, a failure no missed name explains, nothing missed, too much missed, no time left); else the verdict that
 * stands and the emission written when it is the followed one.
 */
export async function followStage(
  session: PullSession,
  emission: Emission,
  options: PullOptions,
  request: ValidateOptions,
  first: ValidationReport,
  timeLeftMs: number,
): Promise<FollowOutcome | undefined> {
  const ran = first.executed_after_import;
  if (first.ok || !options.out || first.original_reached !== 'forward' || !ran || !FOLLOWED_CATEGORIES.has(first.category ?? '') || timeLeftMs < 2000)
    return undefined;
  const missed = missedDefinitions(session, emission, ran);
  if (!missed.length || missed.length > MAX_FOLLOWED) return undefined;
  const closure = await computeClosure(emission.closureCtx, emission.rec, emission.unit, [...emission.extraRoots, ...missed]);
  if (failureOf(closure.problems)) return undefined;
  const followed = await emitResolution(session, { ...emission, closure, extraRoots: [...emission.extraRoots, ...missed] }, options);
  const names = missed.map((e) => `${e.rec.module}.${e.rec.facts.units[e.unit].name}`);
  const what = `${names.length} definition${names.length === 1 ? '' : 's'} the original ran that the file lacked (${names.slice(0, 4).join(', ')}${names.length > 4 ? ', …' : ''})`;
  const judged = await judgeInstead(options, request, followed, emission, timeLeftMs);
  if ('error' in judged)
    return {
      verdict: first,
      run: { stage: 'follow', why: `the file with ${what} could not be judged (${errorMessage(judged.error)}): the first file is written` },
    };
  const verdict = judged.verdict;
  const further = verdict.ok || tierRank(verdict.tier) > tierRank(first.tier);
  if (further) return { emission: followed, verdict, judged: verdict, run: { stage: 'follow', why: `${what} taken in; judged again`, ...judged.spent } };
  await writeSafely(options.out, emission.emitted.code, true, options.root);
  return { verdict: first, judged: verdict, run: { stage: 'follow', why: `the file with ${what} got no further: the first file is written`, ...judged.spent } };
}
