/**
 * Validation of a pulled file with the user's interpreter: python-runner/judge.py (the nnrag_judge package) judges, in the sandbox of
 * bubblewrap.ts, while a worker it forks is the only process that runs the block's code. One-shot here; validatorPool.ts
 * keeps warm judges for batches.
 */
import { NnragError } from '../base/errors';
import { Judge, nativesBeside } from './judge';
import { describeSandbox } from './bubblewrap';
import { DEFAULT_MEMORY_MB } from './limits';
import { environmentStamp, failureKey, keepFailure, keepOriginal, keepsAsFailure, keptFailure, keptOriginal, originalKey } from './originalCache';

export * from './report';
import { TIERS } from './report';
import type { Tier, ValidateOptions, ValidationReport } from './report';

export function tierAtLeast(reached: Tier | null, wanted: Tier): boolean {
  return reached !== null && TIERS.indexOf(reached) >= TIERS.indexOf(wanted);
}

/** Whether the block counts as validated: it ran forward (and, when compared, equals its original). */
export function isValidated(report: Pick<ValidationReport, 'ok' | 'tier'>): boolean {
  return report.ok && tierAtLeast(report.tier, 'forward');
}

/** A failure of the tool, not of the block: the original passes the tier the copy failed with the same arguments. */
export function isToolFault(report: Pick<ValidationReport, 'ok' | 'category' | 'original_passes'>): boolean {
  if (report.ok || !report.original_passes) return false;
  return report.category === 'instantiate' || report.original_passes === 'forward';
}

/** Refuses to go on when the sandbox is weaker than asked for (nothing has run yet). */
export async function checkSandbox(options: Pick<ValidateOptions, 'allowWeakSandbox' | 'memoryMb'>): Promise<void> {
  if (options.allowWeakSandbox !== false) return;
  const sandbox = await describeSandbox(options.memoryMb);
  if (sandbox.weaker) throw new NnragError('sandbox', `not validated: ${sandbox.label}`);
}

export async function validateFile(file: string, options: ValidateOptions): Promise<ValidationReport> {
  await checkSandbox(options);
  // the original's run of an identical earlier job: only the copy runs (originalCache.ts); the compiled operators
  // beside the file are part of the job
  if (options.originalCache && options.natives === undefined) options = { ...options, natives: await nativesBeside(file) };
  const key = options.originalCache && options.original && !options.originalOnly ? originalKey(options, await environmentStamp(options.python)) : undefined;
  const dir = options.originalCache?.dir;
  // a failure of the same job on the same file, kept: answered again, nothing run
  const failed = key && dir ? await failureKey(key, file, options) : undefined;
  const reused = failed && dir ? await keptFailure(dir, failed) : undefined;
  if (reused) return reused;
  const kept = key && dir ? await keptOriginal(dir, key) : undefined;
  // (sent back whenever the original ran: a kept run the judge refused, made with another torch, is replaced)
  const asked: ValidateOptions = key ? { ...options, keepOriginal: true, ...(kept !== undefined ? { originalFrames: kept } : {}) } : options;
  const { original_frames: frames, ...report } = await judged(file, asked);
  if (key && dir && frames !== undefined) await keepOriginal(dir, key, frames);
  // (the original ended of itself: its run sent to be kept, or replayed from one that was)
  if (failed && dir && keepsAsFailure(report, frames !== undefined || report.original_cached === true)) await keepFailure(dir, failed, report);
  return report;
}

async function judged(file: string, options: ValidateOptions): Promise<ValidationReport> {
  if (options.pool) return options.pool.validate(file, options);
  const judge = await Judge.start(options.python, options.runner, options.memoryMb ?? DEFAULT_MEMORY_MB, options.original?.mounts ?? []);
  try {
    return await judge.validate(file, options);
  } finally {
    await judge.close();
  }
}
