/**
 * The slim stage of a pull: the file again without the definitions of other modules that the original never ran
 * while it was built, run and probed (its worker's trace, `ValidationReport.executed`), each stood in for by a
 * function that says so when called. The slim file is judged as any copy; it is kept only where it gets as far as
 * the full one (an `equivalent` full copy needs an `equivalent` slim one), else the full file is written back.
 */
import * as fs from 'fs';
import * as path from 'path';
import { performance } from 'perf_hooks';
import type { Emission, JudgeRun, PullOptions, SlimSizes } from './types';
import type { PullSession } from './session';
import { emitResolution } from './stageEmit';
import { failureOf } from './stageResolve';
import { tierRank } from './pulledState';
import { spentOn } from './judgeTime';
import { writeSafely } from '../emit/writeSafe';
import { CancelledError, errorMessage } from '../base/errors';
import { computeClosure } from '../resolve/closure';
import type { ClosureResult, RanTrace } from '../resolve/closure';
import type { ModuleRecord } from '../resolve/moduleTable';
import { validateFile } from '../validate/runner';
import type { ValidationReport } from '../validate/runner';
import type { ValidateOptions } from '../validate/report';

/** The slim file is judged only where it leaves out at least this many lines of code and this share of the file: a
 * judge run costs seconds (a whole model's, tens), a few lines fewer are not worth them to anyone reading the file. */
const SLIM_MIN_LINES = 10;
const SLIM_MIN_SHARE = 0.1;

/** Whether a slim file of `slimLines` lines of code, against the full one's `fullLines`, is worth judging. */
export function slimWorthJudging(fullLines: number, slimLines: number): boolean {
  const saved = fullLines - slimLines;
  return saved >= SLIM_MIN_LINES && saved >= SLIM_MIN_SHARE * fullLines;
}

/** Passes at most over the closure to keep what the file runs while it is imported (the trace does not see what a
 * template of the original's worker imported before it started). */
const MAX_PASSES = 12;

/** A path with its links resolved, as the trace names files; the path itself where it does not exist. */
export function realPath(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
}

/** A verdict without the original's trace (read by the slim and follow stages, never reported). */
export function withoutTrace(v: ValidationReport): ValidationReport {
  return { ...v, executed: undefined, executed_after_import: undefined };
}

/**
 * The trace as the closure reads it: a module's lines by its file's real path. A repository none of whose files the
 * trace names is not traced (nothing is left out of it); a file of a traced repository that it does not name ran
 * nothing. Every entry is checked against the index: a path of no indexed file is ignored.
 */
export function ranTrace(session: PullSession, executed: Record<string, number[]>, keep: ReadonlySet<string> = new Set()): RanTrace {
  const lines = new Map<string, number[]>();
  for (const [file, at] of Object.entries(executed))
    lines.set(
      file,
      [...at].sort((a, b) => a - b),
    );
  const traced = new Map<number, boolean>();
  const files = [...lines.keys()];
  // each module's real path, found once for every pass over the closure
  const paths = new Map<number, string>();
  return {
    keep,
    linesOf(rec: ModuleRecord): readonly number[] | undefined {
      const repo = session.repos.get(rec.repoId);
      const file = session.files.get(rec.fileId);
      if (!repo || !file || !repo.root) return undefined;
      let known = traced.get(rec.repoId);
      if (known === undefined) {
        const root = path.join(realPath(repo.root), path.sep);
        traced.set(rec.repoId, (known = files.some((f) => f.startsWith(root))));
      }
      if (!known) return undefined;
      let at = paths.get(rec.fileId);
      if (at === undefined) paths.set(rec.fileId, (at = realPath(path.join(repo.root, file.path))));
      return lines.get(at) ?? [];
    },
  };
}

/**
 * The units that run while the file is imported, which the trace may not have seen (a template imported them first):
 * what a statement of a module needs at import (`logger = get_logger(__name__)`), a function a definition calls as it
 * is made (a decorator, a default), and everything those reach in turn. Those the slim closure left out or trimmed
 * are returned, to keep.
 */
function neededAtImport(closure: ClosureResult): string[] {
  const g = closure.graph;
  const kind = (key: string): string => {
    const n = g.getNodeAttributes(key);
    return n.rec.facts.units[n.unit].kind;
  };
  const queue: string[] = [];
  g.forEachEdge((_e, attr, source, target) => {
    if (!attr.def) return;
    const from = kind(source);
    if ((from !== 'class' && from !== 'function') || kind(target) === 'function') queue.push(target);
  });
  const runs = new Set<string>();
  while (queue.length) {
    const key = queue.pop()!;
    if (runs.has(key)) continue;
    runs.add(key);
    g.forEachOutNeighbor(key, (to) => queue.push(to));
  }
  return [...runs].filter((key) => {
    const n = g.getNodeAttributes(key);
    return n.replacement?.source.includes('= _nnrag_left_out(') || !!n.leftOut?.length;
  });
}

/** The slim closure of the emission's block under the trace, or undefined when it leaves nothing out. */
async function slimClosure(session: PullSession, emission: Emission, executed: Record<string, number[]>): Promise<ClosureResult | undefined> {
  const keep = new Set<string>();
  // (one trace for every pass: what it keeps grows between them)
  const ran = ranTrace(session, executed, keep);
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const closure = await computeClosure({ ...emission.closureCtx, ran }, emission.rec, emission.unit, emission.extraRoots);
    if (!closure.leftOut.length || failureOf(closure.problems)) return undefined;
    const more = neededAtImport(closure).filter((k) => !keep.has(k));
    if (!more.length) return closure;
    for (const k of more) keep.add(k);
  }
  return undefined;
}

/** Lines of code of a file (neither blank nor comments), as the conformance cases count them. */
function codeLines(text: string): number {
  let n = 0;
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (t && !t.startsWith('#')) n++;
  }
  return n;
}

/** Whether the slim copy's verdict is as good as the full one's. */
function asGood(slim: ValidationReport, full: ValidationReport): boolean {
  if (!slim.ok || tierRank(slim.tier) < tierRank(full.tier)) return false;
  return full.equivalence?.status !== 'equivalent' || slim.equivalence?.status === 'equivalent';
}

/**
 * Writes `candidate`'s file in place of `first`'s and judges it; when it cannot be judged (the judge not starting),
 * writes `first`'s back and gives the error (a cancel is thrown). The caller writes `first`'s back too when the
 * candidate's verdict does not stand.
 */
export async function judgeInstead(
  options: PullOptions,
  request: ValidateOptions,
  candidate: Emission,
  first: Emission,
  timeLeftMs: number,
): Promise<{ verdict: ValidationReport; spent: Pick<JudgeRun, 'seconds' | 'timings'> } | { error: unknown }> {
  await writeSafely(options.out!, candidate.emitted.code, true, options.root);
  try {
    const began = performance.now();
    const verdict = await validateFile(options.out!, { ...request, timeoutMs: timeLeftMs });
    return { verdict, spent: spentOn(verdict, began) };
  } catch (err) {
    await writeSafely(options.out!, first.emitted.code, true, options.root);
    if (err instanceof CancelledError) throw err;
    return { error: err };
  }
}

export interface SlimOutcome {
  /** The slim file's emission when it stands (it is the file written), else undefined (the full one is). */
  emission?: Emission;
  verdict: ValidationReport;
  run: JudgeRun;
  sizes: SlimSizes;
}

/**
 * The slim stage: undefined when it does not apply (asked for the full file, a copy that did not pass, no trace, a
 * verdict through a builder, too little left out to be worth judging again, no time left); else the verdict that
 * stands and the file written.
 */
export async function slimStage(
  session: PullSession,
  emission: Emission,
  options: PullOptions,
  request: ValidateOptions,
  full: ValidationReport,
  timeLeftMs: number,
): Promise<SlimOutcome | undefined> {
  if (options.full || !options.out || !full.ok || !full.executed || full.builder || timeLeftMs < 2000) return undefined;
  const closure = await slimClosure(session, emission, full.executed);
  if (!closure) return undefined;
  const slim = await emitResolution(session, { ...emission, closure }, options);
  const sizes = { fullLines: codeLines(emission.emitted.code), slimLines: codeLines(slim.emitted.code), leftOut: closure.leftOut.length };
  if (!slimWorthJudging(sizes.fullLines, sizes.slimLines)) return undefined;
  const left = closure.leftOut.length;
  const judgedAgain = await judgeInstead(options, request, slim, emission, timeLeftMs);
  if ('error' in judgedAgain) {
    // the slim file could not be judged (a cancel, the judge not starting): the full file stands, as judged
    const err = judgedAgain.error;
    return {
      verdict: withoutTrace(full),
      run: {
        stage: 'slim',
        why: `the file without the ${left} definitions the original never ran could not be judged (${errorMessage(err)}): the full file is written`,
      },
      sizes: { ...sizes, kept: 'full' },
    };
  }
  const verdict = judgedAgain.verdict;
  if (asGood(verdict, full)) {
    return {
      emission: slim,
      verdict: withoutTrace(verdict),
      run: {
        stage: 'slim',
        why: `${left} definition${left === 1 ? '' : 's'} the original never ran left out; the slim file judged again`,
        ...judgedAgain.spent,
      },
      sizes: { ...sizes, kept: 'slim' },
    };
  }
  await writeSafely(options.out, emission.emitted.code, true, options.root);
  const got = verdict.ok ? (verdict.equivalence?.status === 'equivalent' ? 'equivalent' : (verdict.tier ?? 'less')) : (verdict.category ?? 'failed');
  return {
    verdict: withoutTrace(full),
    run: {
      stage: 'slim',
      why: `the file without the ${left} definitions the original never ran got ${got}, not as far: the full file is written`,
      ...judgedAgain.spent,
    },
    sizes: { ...sizes, kept: 'full' },
  };
}
