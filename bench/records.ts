/**
 * `bench/results.json` across runs: every figure is compared with the last stored record, and a figure more than 20%
 * worse is named; a run that skips a scenario keeps that scenario's last figures, each with the date it was measured,
 * so a skipped scenario cannot hide a regression (the small-files scenario grew 9x unseen while runs skipped it).
 */

/** A stored record: the figures, and per figure the date (YYYY-MM-DD) it was last measured. */
export type BenchRecord = Record<string, unknown> & { measured_on?: Record<string, string> };

export const WORSE_BY = 1.2;

/** Figures where less is better: times, memory, sizes, ratios to a floor. */
const LOWER_IS_BETTER = /(_s|_ms|_mb|_bytes|_ratio|_growth|vs_parse_floor(_min|_max)?)$/;
/** Figures where more is better: rates, speed-ups, search quality, blocks validated. */
const HIGHER_IS_BETTER = /(per_s|speedup|recall(_at_\d+)?|mrr|ndcg(_at_\d+)?|hit(s)?_at_\d+|_validated|_equivalent|_score)$/;

export interface Worse {
  figure: string;
  last: number;
  now: number;
  /** now / last */
  ratio: number;
  last_measured_on: string;
}

function direction(key: string): 'lower' | 'higher' | undefined {
  if (HIGHER_IS_BETTER.test(key)) return 'higher';
  if (LOWER_IS_BETTER.test(key)) return 'lower';
  return undefined;
}

/**
 * The new record to store: `current`'s figures dated `today`, and every figure of `previous` the run did not measure,
 * with its old date. With the figures more than 20% worse than last time.
 */
export function mergeRecords(
  previous: BenchRecord | undefined,
  current: Record<string, unknown>,
  today: string,
): { record: BenchRecord; worse: Worse[]; carried: Record<string, string> } {
  const before = previous ?? {};
  const dates: Record<string, string> = { ...(before.measured_on ?? {}) };
  const record: BenchRecord = {};
  const carried: Record<string, string> = {};
  for (const [k, v] of Object.entries(before)) {
    if (k === 'measured_on' || k in current) continue;
    record[k] = v;
    carried[k] = dates[k] ?? 'before dates were kept';
  }
  const worse: Worse[] = [];
  for (const [k, v] of Object.entries(current)) {
    record[k] = v;
    const last = before[k];
    dates[k] = today;
    const dir = direction(k);
    if (!dir || typeof v !== 'number' || typeof last !== 'number' || !Number.isFinite(v) || !Number.isFinite(last) || last === 0) continue;
    const bad = dir === 'lower' ? v > last * WORSE_BY : v < last / WORSE_BY;
    if (bad) worse.push({ figure: k, last, now: v, ratio: Math.round((v / last) * 100) / 100, last_measured_on: (before.measured_on ?? {})[k] ?? 'unknown' });
  }
  record.measured_on = Object.fromEntries(
    Object.keys(record)
      .filter((k) => k !== 'measured_on')
      .map((k) => [k, dates[k] ?? 'unknown']),
  );
  return { record, worse, carried };
}
