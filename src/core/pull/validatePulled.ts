/**
 * The use case "validate a pulled file", for every front (`nn-rag validate FILE`, the editor's Validate and Update):
 * the file is judged as its pull judged it (the header's arguments, then the repository's own calls and examples),
 * compared with the original its header names (at the blob it was pulled from), and an unedited file its pull judged
 * inside the repository's builder's model is judged so again. Without an index that holds the original, the header
 * alone says how to build it, and the report says why nothing was compared.
 */
import { bodyHash, readProvenance, recordedArguments } from '../emit/pulledFile';
import type { PythonParser } from '../parse/parser';
import type { ValidateOptions } from '../validate/report';
import type { ValidationReport } from '../validate/runner';
import { validateFile } from '../validate/runner';
import { keptIn } from '../validate/originalCache';
import { judgedByBuilderAgain, judgingPulled } from './pull';
import { explained, originalOfPulled } from './original';
import type { PullSession } from './session';

/** The index a pulled file is judged against, or why there is none. */
export type PulledIndex = { session: PullSession; parser: PythonParser } | { unavailable: string };

export interface PulledVerdict {
  report: ValidationReport;
  /** The body differs from what was pulled (undefined: not a pulled file). */
  edited?: boolean;
}

/** Validates the pulled `text`, written at `file` (the path the judge imports), against `index`. */
export async function validatePulled(
  index: PulledIndex,
  file: string,
  text: string,
  options: Omit<ValidateOptions, 'original' | 'candidates' | 'examples' | 'originalCache'> & { originalCacheDir?: string },
): Promise<PulledVerdict> {
  const { originalCacheDir, ...rest } = options;
  const prov = readProvenance(text);
  if (!prov) return { report: await validateFile(file, rest) };
  const edited = bodyHash(text) !== prov.hash;
  const original = 'session' in index ? await originalOfPulled(index.session, prov, options.python) : index;
  const uses = 'session' in index ? await judgingPulled(index.session, prov, index.parser) : { candidates: recordedArguments(prov) };
  let report = await validateFile(file, {
    ...rest,
    // the original's run is kept by the blobs the header says the code comes from (the user's edits change nothing)
    ...keptIn(originalCacheDir, prov.definitions),
    className: options.className ?? prov.block,
    original: 'module' in original ? original : undefined,
    ...uses,
  });
  if ('session' in index) {
    const { python, runner, timeoutMs, memoryMb, allowWeakSandbox, signal, pool } = options;
    // pulled again with the same warm judge and the same kept originals: validated again, only the copies run
    report = await judgedByBuilderAgain(index.session, index.parser, prov, text, report, {
      python,
      runner,
      timeoutMs,
      memoryMb,
      allowWeakSandbox,
      signal,
      pool,
      ...(originalCacheDir ? { originalCache: originalCacheDir } : {}),
    });
  }
  return { report: explained(report, original, edited), edited };
}
