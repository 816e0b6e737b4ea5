/** Where a stage's seconds went, as a pull's report gives them (informative only: no verdict reads them). */
import { performance } from 'perf_hooks';
import type { JudgeRun } from './types';
import type { ValidationReport } from '../validate/report';

export function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** A judge run's wall seconds since `began` (performance.now()) and the judge's own breakdown, with the seconds
 * before the judge's own work (a sandbox started, a warm judge reached) as `starting`. */
export function spentOn(v: ValidationReport, began: number): Pick<JudgeRun, 'seconds' | 'timings'> {
  const seconds = (performance.now() - began) / 1000;
  const starting = v.seconds !== undefined ? Math.max(0, seconds - v.seconds) : undefined;
  return { seconds: round3(seconds), ...(v.timings ? { timings: { ...v.timings, ...(starting !== undefined ? { starting: round3(starting) } : {}) } } : {}) };
}
