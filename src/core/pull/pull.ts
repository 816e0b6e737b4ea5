/**
 * The use case "pull a block", run by its stages (resolve → emit → judge → record: stage*.ts, their types in
 * types.ts); and a pulled file judged again as its pull judged it. The same pipeline serves the CLI, the server and
 * batch runs.
 */
import type { Emission, JudgeRun, PullOptions, PullReport } from './types';
import { emitBlock } from './stageEmit';
import { failureOf } from './stageResolve';
import { judgeEmission, originalAlone } from './stageJudge';
import type { Judgement } from './stageJudge';
import { recordPull, round } from './stageRecord';
import { tierRank } from './pulledState';
import type { PullSession } from './session';
import { repositoryUses } from './uses';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import type { ClassRef } from '../store/target';
import { bodyHash, recordedArguments } from '../emit/pulledFile';
import type { Provenance } from '../emit/pulledFile';
import { fileSizes } from '../emit/why';
import { findTarget } from '../store/target';
import type { PythonParser } from '../parse/parser';
import { writeSafely } from '../emit/writeSafe';
import { placeNatives } from './natives';
import type { ValidationReport } from '../validate/runner';
import type { ValidateOptions } from '../validate/report';

/**
 * Pull a block: resolve → emit → (write) → judge → record, each stage a function of its own file. The judge stage
 * may ask for one more pass: a compiled module the code loads by name, built, and the block pulled again with it.
 */
export async function pullBlock(session: PullSession, ref: ClassRef, options: PullOptions): Promise<PullReport> {
  let emission = await emitBlock(session, ref, options);
  const report = startedReport(emission, options);
  if (options.out) await writeEmission(emission, report, options);
  const blocked = failureOf(emission.closure.problems);
  let judgement: Judgement | undefined;
  if (blocked) {
    // the file is written for the user to read, but it cannot run: never validate or report success
    Object.assign(report, { status: 'failed', ...blocked });
    if (options.probeOriginal && options.validate && options.out && options.python && options.runner) {
      report.originalReached = await originalAlone(session, ref, options, emission.inlined);
    }
  } else if (options.validate) {
    judgement = await judgeEmission(session, emission, options);
    if (judgement.native) {
      // the operator it loads by name, built and registered: the block pulled and judged again with it
      const again = await pullBlock(session, ref, { ...options, runtimeNatives: [...(options.runtimeNatives ?? []), judgement.native] });
      const native: JudgeRun = { stage: 'native', why: `${judgement.native} built: the block pulled and judged again with it` };
      return { ...again, judged: [...judgement.judged, native, ...(again.judged ?? [])] };
    }
    if (judgement.slim) {
      // the slim file is the one written: the report describes it
      emission = judgement.slim;
      Object.assign(report, startedReport(emission, options), { timings: report.timings });
    }
    if (judgement.slimSizes) report.slim = judgement.slimSizes;
  }
  await recordPull(session, emission, report, judgement, options);
  return report;
}

/** The pull's report before anything is judged: what was resolved and emitted, and how long each took. */
function startedReport(emission: Emission, options: PullOptions): PullReport {
  const { ref, target, closure, emitted, inlinedRepos } = emission;
  const { t0, t1, t2 } = emission.timings;
  return {
    status: 'extracted',
    target,
    out: options.out ? path.resolve(options.out) : null,
    tier: null,
    problems: closure.problems,
    definitions: emitted.order.length,
    imports: emitted.thirdParty,
    ...(inlinedRepos.length ? { inlinedRepos } : {}),
    graph: emitted.graph,
    sizes: fileSizes(emitted.graph, ref.module, ref.name, emitted.code, options.largest),
    provenance: emitted.provenance,
    timings: { resolve_ms: round(t1 - t0), emit_ms: round(t2 - t1), validate_ms: 0 },
  };
}

/** The emitted file written where the user asked (never through a link below their folder), with the compiled
 * operators built for it beside it. */
async function writeEmission(emission: Emission, report: PullReport, options: PullOptions): Promise<void> {
  const out = path.resolve(options.out!);
  await writeSafely(out, emission.emitted.code, options.force, options.root);
  if (emission.natives.length) {
    await placeNatives(emission.natives, out, options.root);
    report.natives = emission.natives.map((b) => ({ module: b.module, file: b.fileName, sources: b.sources, cached: b.cached, seconds: b.seconds }));
  }
}

/**
 * How a pulled file is judged again (`validate FILE`, the editor's Validate, Update): as its pull judged it, with the
 * arguments its header records first, then the repository's own calls and examples of its original (when the index
 * still holds it), so that an unedited file gets the verdict its pull gave.
 */
export async function judgingPulled(
  session: PullSession,
  prov: Provenance | undefined,
  parser: PythonParser,
): Promise<Pick<ValidateOptions, 'candidates' | 'examples'>> {
  const recorded = recordedArguments(prov) ?? [];
  if (!prov) return {};
  let uses: Pick<ValidateOptions, 'candidates' | 'examples'> = {};
  try {
    const ref = findTarget(session.db, prov.target);
    const rec = session.table.lookupIn(ref.module, ref.repoId);
    if (rec) uses = await repositoryUses(session, rec, ref.name, parser);
  } catch {
    // the original is no longer in the index: the header's record alone
  }
  const candidates = [...recorded, ...(uses.candidates ?? [])];
  return { ...(candidates.length ? { candidates } : {}), ...(uses.examples?.length ? { examples: uses.examples } : {}) };
}

/**
 * `judged`, the verdict `validate FILE` or the editor's Validate gave a pulled file, or a better one: an unedited
 * file whose pull judged it inside its repository's builder's model (`validation.builder`, no `builtWith` the judge
 * can replay) and that got less now is pulled again into a scratch folder with validation, as its pull was; that
 * verdict is the file's when the code pulled again is the file's (its body hash) and it got further.
 */
export async function judgedByBuilderAgain(
  session: PullSession,
  parser: PythonParser,
  prov: Provenance,
  text: string,
  judged: ValidationReport,
  options: Omit<PullOptions, 'parser' | 'out' | 'validate'>,
): Promise<ValidationReport> {
  if (!prov.validation?.builder || prov.builtWith || bodyHash(text) !== prov.hash || tierRank(judged.tier) >= tierRank(prov.validation.tier)) return judged;
  const scratch = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-again-'));
  try {
    const out = path.join(scratch, 'block.py');
    const report = await pullBlock(session, findTarget(session.db, prov.target), { ...options, parser, out, manifest: false, validate: true });
    const again = await fsp.readFile(out, 'utf8').catch(() => '');
    const v = report.validation;
    return v && bodyHash(again) === prov.hash && tierRank(v.tier) > tierRank(judged.tier) ? { ...v, builder: prov.validation.builder } : judged;
  } finally {
    await fsp.rm(scratch, { recursive: true, force: true });
  }
}

export { requirementsText } from '../validate/requirements';
