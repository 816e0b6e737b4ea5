/** Stage 4 of a pull, record: the verdict in the report, the index, the file's header and the manifest beside it. */
import type { Emission, PullOptions, PullReport } from './types';
import type { Judgement } from './stageJudge';
import type { PullSession } from './session';
import type { ClassRef } from '../store/target';
import { firstLine } from '../base/text';
import * as path from 'path';
import { replaceProvenance, splitPulled, withInlineMetadata } from '../emit/pulledFile';
import type { Provenance } from '../emit/pulledFile';
import { writeManifests } from '../emit/manifest';
import type { IndexDb } from '../store/database';
import { setValidation } from '../store/files';
import { inlineMetadata } from '../validate/requirements';
import { writeText } from '../emit/writeSafe';
import { isValidated } from '../validate/runner';
import type { ValidationReport } from '../validate/runner';

/**
 * Stage 4 of a pull, record: the verdict in the report, the index and the file's header (its provenance record, for
 * hovers), the inline metadata, the manifest beside the file; the closure's problems said in the message.
 */
export async function recordPull(
  session: PullSession,
  emission: Emission,
  report: PullReport,
  judgement: Judgement | undefined,
  options: PullOptions,
): Promise<void> {
  const { ref, emitted, closure } = emission;
  /** The file's text, when its header changes after the write (the verdict, the inline metadata). */
  let final: string | undefined;
  if (judgement) {
    report.judged = judgement.judged;
    settleVerdict(report, judgement.verdict, emitted.provenance, judgement.moduleArguments);
    recordValidation(session.db, ref.id, report);
    final = replaceProvenance(emitted.code, emitted.provenance);
  }
  if (options.out && options.inlineMetadata) {
    // PEP 723: what `uv run` or `pipx run` installs to run the file (versions from the validating interpreter)
    final = withInlineMetadata(final ?? emitted.code, inlineMetadata(report.requirements, emitted.thirdParty));
  }
  if (options.out && final !== undefined) await writeText(path.resolve(options.out), final, options.root);
  if (options.out && options.manifest !== false) {
    // the reviewer's record next to the file, and the distributions it needs (validation tells the versions)
    const written = await writeManifests(path.resolve(options.out), emitted.provenance, report.requirements, splitPulled(emitted.code).body, options.root);
    report.manifest = written.manifest;
    report.requiredRepos = written.requiredRepos;
  }
  if (report.status !== 'failed' && closure.problems.length) {
    report.message = [report.message, ...closure.problems.map((p) => p.detail)].filter(Boolean).join('; ');
  }
}

/** The report as verdict `v` says (its status, tier, message), and the file's provenance record (for hovers). */
function settleVerdict(report: PullReport, v: ValidationReport, provenance: Provenance, moduleArguments?: string[]): void {
  report.validation = v;
  if (v.original_reached !== undefined) report.originalReached = v.original_reached;
  report.tier = v.tier;
  report.requirements = v.requirements;
  report.timings.validate_ms = round(v.seconds * 1000);
  if (isValidated(v)) {
    report.status = 'validated';
    if (v.observed) {
      report.message = `built and fed as the repository's own ${v.observed} does`;
    } else if (v.builder) {
      // why the builder: no guess built it, or it takes a module a guess would only stand in for
      const why = moduleArguments?.length
        ? `its constructor takes ${moduleArguments.join(', ')}, a module the builder gives it`
        : 'no guessed argument set builds it alone';
      if (v.recipe)
        report.message = `built with the arguments the repository's builder ${v.builder}() gives it (in the file's header, for nn-rag validate): ${why}`;
      else
        report.message = v.inside
          ? `built inside the ${v.inside} that the repository's ${v.builder}() makes, and run on the inputs that model gives it: ${why}`
          : `built through the repository's own builder ${v.builder}(): ${why}`;
    }
  } else {
    report.status = 'failed';
    report.category = v.category ?? 'forward';
    report.message = v.message ?? 'validation did not reach forward';
  }
  // the validation result goes into the file's provenance record, for hovers
  provenance.validation = {
    status: report.status,
    tier: v.tier,
    category: report.category,
    args: v.args,
    kwargs: v.kwargs,
    input_shapes: v.input_shapes,
    output_shapes: v.output_shapes,
    builder: v.builder,
    ...(v.observed ? { observed: v.observed } : {}),
    ...(report.status === 'failed' && report.message ? { message: firstLine(report.message) } : {}),
    ...(report.status === 'validated' && v.tier !== 'equivalent' && v.equivalence?.reason ? { notCompared: firstLine(v.equivalence.reason) } : {}),
  };
  if (v.recipe && v.builder) provenance.builtWith = { builder: v.builder, ...v.recipe };
}

export function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

function recordValidation(db: IndexDb, classId: number, report: PullReport): void {
  setValidation(db, classId, validationRecord(report));
}

/** The verdict as the index records it: what the validator observed, for specs (how it was built, the tensors). */
export function validationRecord(report: PullReport): string {
  return JSON.stringify({
    status: report.status,
    tier: report.tier,
    category: report.category ?? null,
    at: new Date().toISOString(),
    args: report.validation?.args ?? null,
    kwargs: report.validation?.kwargs ?? null,
    input_shapes: report.validation?.input_shapes ?? null,
    output_shapes: report.validation?.output_shapes ?? null,
    builder: report.validation?.builder ?? null,
  });
}

/** The report of a pull whose interpreter could not run the judge: nothing of the block was judged or recorded. */
export function interpreterFailure(ref: ClassRef, out: string, message: string): PullReport {
  return {
    status: 'failed',
    target: `${ref.repo}:${ref.module}.${ref.name}`,
    out: path.resolve(out),
    category: 'interpreter',
    message,
    tier: null,
    problems: [],
    definitions: 0,
    imports: [],
    timings: { resolve_ms: 0, emit_ms: 0, validate_ms: 0 },
  };
}
