/**
 * A batch pull's items and summary (`pull --all`, its shards, and their merge): what each block reached, and the
 * figures of the batch (tiers, categories, fidelity, tool faults, seconds, lines).
 */
import { linesOf } from '../emit/why';
import type { LineFigures } from '../emit/why';
import type { IndexStats } from '../store/stats';
import type { IndexDb } from '../store/database';
import { setValidation } from '../store/files';
import { findTarget } from '../store/target';
import { TIERS, tierAtLeast } from '../validate/runner';
import type { JudgeRun, PullReport } from './types';

export interface BatchItem {
  target: string;
  status: PullReport['status'] | 'error';
  tier: string | null;
  category?: string;
  message?: string;
  out?: string | null;
  seconds: number;
  /** The comparison with the original: equivalent, differs, unavailable (or not made). */
  equivalence?: string;
  /** Why the block was not compared with its original (with `equivalence: unavailable`). */
  equivalence_reason?: string;
  /** Set when the original passes the tier the copy failed (a fault of the tool). */
  tool_fault?: string;
  /** How far the original got with the tool's arguments (null: not imported; absent: not run). */
  original_reached?: 'imported' | 'instantiated' | 'forward' | null;
  /** Lines of the pulled file. */
  lines?: number;
  /** Lines the file would have had with everything the block reaches (`--full`), when the slim stage ran. */
  full_lines?: number;
  /** Where the seconds went: each run of the judge (the file, builders, replay, follow, slim) with its wall seconds
   * and each side's own seconds (`cached`: the original's run was an earlier one's). */
  stages?: BatchStage[];
  /** The verdict as the index records it (a shard's, for `report --merge` to record in the index). */
  record?: string;
}

export interface BatchStage {
  stage: string;
  seconds?: number;
  original?: number | 'cached';
  copy?: number;
}

/** A pull's judge runs as a batch item gives them. */
export function batchStages(judged: readonly JudgeRun[] | undefined): BatchStage[] | undefined {
  if (!judged?.length) return undefined;
  return judged.map((j) => ({
    stage: j.stage,
    ...(j.seconds !== undefined ? { seconds: j.seconds } : {}),
    ...(j.timings?.original ? { original: j.timings.original.cached ? ('cached' as const) : (j.timings.original.seconds ?? 0) } : {}),
    ...(j.timings?.copy?.seconds !== undefined ? { copy: j.timings.copy.seconds } : {}),
  }));
}

export interface BatchSummary {
  /**
   * The raw shares, read first: of ALL the blocks attempted, how many reach forward and how many are proven
   * equivalent to their original (percent of all, not of those whose original ran).
   */
  raw: { blocks: number; forward: number; equivalent: number; forward_share: number; equivalent_share: number };
  /** Abstract base classes among them (no forward of their own: not runnable alone), counted apart, and the shares of
   * the blocks that are not. */
  abstract: { blocks: number; runnable: number; forward_share: number; equivalent_share: number };
  targeted: number;
  attempted: number;
  extracted: number;
  validated: number;
  failed: number;
  pass_rate: number;
  tiers: Record<string, number>;
  categories: Record<string, number>;
  seconds: number;
  seconds_per_block: number;
  /** Warm validators working at once (1: a fresh interpreter per block, one at a time). */
  validators: number;
  /** Blocks compared with their original (it imported, built and ran): equivalent, and differing. */
  compared: number;
  equivalent: number;
  differs: number;
  /** Of the blocks compared with their original, the share whose copy is equivalent (percent). */
  fidelity: number | null;
  /** Blocks whose original passes a tier that the copy fails. */
  tool_faults: number;
  /**
   * The blocks whose original was run (alone when the copy could not run), how many of them imported and reached
   * forward with the tool's arguments; of those, the share compared with the original and the share whose copy
   * reaches forward too (percent).
   */
  originals: { run: number; imported: number; forward: number; compared_share: number | null; forward_share: number | null };
  /** Lines of the pulled files. */
  lines: LineFigures | null;
}

/**
 * Runs `work(i)` for every index below `total` in `lanes` concurrent lanes (a batch's validators), each lane taking
 * the next index when it is free, until all are done or `stop()` says to stop taking more.
 */
export async function inLanes(total: number, lanes: number, work: (i: number) => Promise<void>, stop: () => boolean = () => false): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.max(0, Math.min(lanes, total)) }, async () => {
      while (next < total && !stop()) await work(next++);
    }),
  );
}

export function summarise(items: BatchItem[], targeted: number, seconds: number, validate: boolean, validators: number): BatchSummary {
  const tiers: Record<string, number> = {};
  for (const t of TIERS) tiers[t] = items.filter((i) => i.tier && tierAtLeast(i.tier as (typeof TIERS)[number], t)).length;
  const categories: Record<string, number> = {};
  for (const i of items) if (i.status !== 'validated' && i.category) categories[i.category] = (categories[i.category] ?? 0) + 1;
  const validated = items.filter((i) => i.status === 'validated').length;
  const failed = items.filter((i) => i.status === 'failed' || i.status === 'error').length;
  const percent = (n: number, of = items.length): number => (of ? Math.round((10000 * n) / of) / 100 : 0);
  const abstract = items.filter((i) => i.category === 'abstract').length;
  const runnable = items.length - abstract;
  return {
    raw: {
      blocks: items.length,
      forward: tiers.forward ?? 0,
      equivalent: tiers.equivalent ?? 0,
      forward_share: percent(tiers.forward ?? 0),
      equivalent_share: percent(tiers.equivalent ?? 0),
    },
    abstract: {
      blocks: abstract,
      runnable,
      forward_share: percent(tiers.forward ?? 0, runnable),
      equivalent_share: percent(tiers.equivalent ?? 0, runnable),
    },
    targeted,
    attempted: items.length,
    extracted: items.filter((i) => i.status !== 'error').length,
    validated,
    failed,
    pass_rate: items.length ? Math.round((10000 * (validate ? validated : items.filter((i) => i.status === 'extracted').length)) / items.length) / 100 : 0,
    tiers,
    categories,
    seconds: Math.round(seconds * 100) / 100,
    seconds_per_block: items.length ? Math.round((seconds / items.length) * 1000) / 1000 : 0,
    validators,
    ...fidelityOf(items),
    originals: originalsOf(items),
    lines: linesOf(items),
  };
}

function fidelityOf(items: BatchItem[]): Pick<BatchSummary, 'compared' | 'equivalent' | 'differs' | 'fidelity' | 'tool_faults'> {
  const equivalent = items.filter((i) => i.equivalence === 'equivalent').length;
  const differs = items.filter((i) => i.equivalence === 'differs').length;
  const compared = equivalent + differs;
  const tool_faults = items.filter((i) => i.tool_fault).length;
  return { compared, equivalent, differs, fidelity: compared ? Math.round((10000 * equivalent) / compared) / 100 : null, tool_faults };
}

function originalsOf(items: BatchItem[]): BatchSummary['originals'] {
  const run = items.filter((i) => i.original_reached !== undefined);
  const imported = run.filter((i) => i.original_reached);
  const forward = run.filter((i) => i.original_reached === 'forward');
  const compared = imported.filter((i) => i.equivalence === 'equivalent' || i.equivalence === 'differs').length;
  const copyForward = forward.filter((i) => i.tier && tierAtLeast(i.tier as (typeof TIERS)[number], 'forward')).length;
  const share = (n: number, of: number): number | null => (of ? Math.round((10000 * n) / of) / 100 : null);
  return {
    run: run.length,
    imported: imported.length,
    forward: forward.length,
    compared_share: share(compared, imported.length),
    forward_share: share(copyForward, forward.length),
  };
}

/** A batch report as `pull --all` writes it (a shard's says which). */
export interface BatchReport {
  summary: BatchSummary;
  shard?: { index: number; count: number };
  items: BatchItem[];
}

/**
 * One report from the shards' (`report --merge`): their items (a target in two reports: the later one), tiers,
 * categories and fidelity counted again over all items; seconds are the shards' summed (machine time, so seconds per
 * block stay comparable with one machine's), validators summed. Says which shards of how many were given.
 */
export function mergeBatches(reports: BatchReport[]): BatchReport & { shards: { given: number[]; count: number | null; missing: number[] } } {
  const byTarget = new Map<string, BatchItem>();
  for (const r of reports) for (const item of r.items) byTarget.set(item.target, item);
  const items = [...byTarget.values()];
  const targeted = reports.reduce((n, r) => n + r.summary.targeted, 0);
  const seconds = reports.reduce((n, r) => n + r.summary.seconds, 0);
  const validators = reports.reduce((n, r) => n + r.summary.validators, 0);
  const validate = items.some((i) => i.status === 'validated' || (i.status === 'failed' && i.tier !== null));
  const counts = [...new Set(reports.map((r) => r.shard?.count).filter((c): c is number => c !== undefined))];
  const given = [...new Set(reports.map((r) => r.shard?.index).filter((k): k is number => k !== undefined))].sort((a, b) => a - b);
  const count = counts.length === 1 ? counts[0] : null;
  const missing = count ? Array.from({ length: count }, (_, k) => k + 1).filter((k) => !given.includes(k)) : [];
  return { summary: summarise(items, targeted, seconds, validate, validators), items, shards: { given, count, missing } };
}

/** Records each item's verdict (`record`) in the index; the number recorded and the targets no longer in it. */
export function recordVerdicts(db: IndexDb, items: BatchItem[]): { recorded: number; notInIndex: string[] } {
  let recorded = 0;
  const notInIndex: string[] = [];
  db.transaction(() => {
    for (const item of items) {
      if (!item.record) continue;
      let id: number;
      try {
        id = findTarget(db, item.target).id;
      } catch {
        notInIndex.push(item.target);
        continue;
      }
      setValidation(db, id, item.record);
      recorded++;
    }
  });
  return { recorded, notInIndex };
}

/** The batch extraction report, as the paper's tables: what `report --json` prints and the page shows. */
export interface ExtractionReport {
  schema: 'nn-rag/report@1';
  source: string;
  targeted: number;
  extracted: number;
  validated: number;
  pass_rate: number;
  /** Blocks that reached each tier (or beyond). */
  tiers: Record<string, number>;
  failure_categories: Record<string, number>;
  seconds_per_block: number;
  uniqueness: IndexStats['uniqueness'] | null;
  paper: { pass_rate: number; seconds_per_block: number };
}
