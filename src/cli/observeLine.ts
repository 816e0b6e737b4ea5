import type { ObserveSummary } from '../core/pull/observe';
import { coverageWords } from '../core/store/observed';

/** One line for a repository's observation. */
export function observeLine(s: ObserveSummary): string {
  if (s.skipped) return `${s.repo}: not observed (${s.skipped})`;
  const head = s.coverage ? coverageWords(s.coverage) : `${s.ran} of ${s.entries} entries run`;
  const now = `${s.ran} run now${s.cached ? `, ${s.cached} unchanged since the last run` : ''}${s.failed ? `, ${s.failed} stopped with an error` : ''}${
    s.notRun ? `, ${s.notRun} not run (the time for the repository ran out: observe again to run them)` : ''
  }`;
  const causes = Object.entries(s.failedBy ?? {})
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5)
    .map(([cause, n]) => `${n} ${cause}`);
  return `${s.repo}: ${head}; ${now}${causes.length ? ` (${causes.join(', ')})` : ''}; ${s.seconds.toFixed(1)} s, catalog ${(s.bytes / 1024).toFixed(0)} KB`;
}
