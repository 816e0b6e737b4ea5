/**
 * The original's runs, kept, so that a block validated again is judged in about a second: the judge sends a finished
 * original's frames back when asked (`keep_original`), and an identical job later carries them (`original_frames`),
 * so only the copy runs. A job is identical when the judge's code, the interpreter, the original (its module, class, folder and
 * blob), the arguments, inputs and compiled modules asked for, and the source the block's code comes from are; the
 * judge refuses frames made with another Python or torch version. Entries are gzipped files in `dir`, written
 * atomically; the least recently used go when they pass MAX_BYTES together (an entry holds the original's outputs
 * and states: from kilobytes to about 10 MB gzipped).
 */
import { createHash } from 'crypto';
import { promises as fsp, readdirSync, readFileSync } from 'fs';
import * as path from 'path';
import { promisify } from 'util';
import * as zlib from 'zlib';
import type { FailureCategory, ValidateOptions, ValidationReport } from './report';
import { interpreterInfo } from './interpreter';

const MAX_BYTES = 1024 ** 3;
const EXT = '.json.gz';
const gzip = promisify(zlib.gzip);
const gunzip = promisify(zlib.gunzip);
const judgeVersions = new Map<string, string>();

/** A digest of the judge's own code (python-runner's nnrag_judge package beside `runner`, its rooms included), once per process. */
function judgeVersion(runner: string): string {
  let v = judgeVersions.get(runner);
  if (v === undefined) {
    const folder = path.join(path.dirname(runner), 'nnrag_judge');
    const h = createHash('sha256').update(readFileSync(runner));
    for (const f of readdirSync(folder, { recursive: true, encoding: 'utf8' })
      .filter((n) => n.endsWith('.py'))
      .sort())
      h.update(f).update(readFileSync(path.join(folder, f)));
    v = h.digest('hex');
    judgeVersions.set(runner, v);
  }
  return v;
}

/**
 * What the interpreter can import now, as a digest: the modification times of its folders (its prefixes and its
 * `sys.path`): installing, upgrading or removing a package changes its site-packages folder's. A kept original that
 * failed for want of a package is then run again.
 */
export async function environmentStamp(python: string): Promise<string> {
  const { folders } = await interpreterInfo(python);
  const times = await Promise.all(folders.map(async (f) => `${f}\0${(await fsp.stat(f).catch(() => undefined))?.mtimeMs ?? '-'}`));
  return createHash('sha256').update(times.join('\n')).digest('hex');
}

/**
 * The key of a job's original run, undefined when the job keeps none (no original, or only the original runs);
 * `environment`: the interpreter's `environmentStamp`.
 */
export function originalKey(options: ValidateOptions, environment: string): string | undefined {
  const cache = options.originalCache;
  if (!cache || !options.original || options.originalOnly) return undefined;
  const job = {
    judge: judgeVersion(options.runner),
    python: options.python,
    environment,
    original: options.original,
    class: options.className ?? null,
    candidates: options.candidates ?? [],
    examples: options.examples ?? [],
    builder: options.builder ?? null,
    native: options.native ?? [],
    natives: (options.natives ?? []).map((n) => [n.module, n.name, n.fileName]),
    upstream: options.upstreamUndefined ?? [],
    memory: options.memoryMb ?? null,
    blobs: cache.blobs,
  };
  return createHash('sha256').update(JSON.stringify(job)).digest('hex');
}

/**
 * The `originalCache` option of a job whose code comes from `definitions` (the blobs a pulled file's header names),
 * with the runs kept in `dir`; none without a folder.
 */
export function keptIn(dir: string | undefined, definitions: { blob: string }[] | undefined): Pick<ValidateOptions, 'originalCache'> {
  return dir && definitions ? { originalCache: { dir, blobs: definitions.map((d) => d.blob) } } : {};
}

/** The kept run for `key`, if any: the judge's JSON text, as it sent it (the judge refuses a damaged one). */
export async function keptOriginal(dir: string, key: string): Promise<string | undefined> {
  try {
    const file = path.join(dir, `${key}${EXT}`);
    const kept = (await gunzip(await fsp.readFile(file))).toString('utf8');
    // used: the last to go when the folder is pruned
    const now = new Date();
    await fsp.utimes(file, now, now).catch(() => undefined);
    return kept;
  } catch {
    return undefined;
  }
}

/** Keeps `frames`, the judge's text, for `key` (a write that fails costs only the next run's time). */
export async function keepOriginal(dir: string, key: string, frames: string): Promise<void> {
  try {
    await fsp.mkdir(dir, { recursive: true });
    const tmp = path.join(dir, `${key}.${process.pid}.tmp`);
    await fsp.writeFile(tmp, await gzip(frames, { level: 1 }), { flag: 'wx' });
    await fsp.rename(tmp, path.join(dir, `${key}${EXT}`));
    const entries = await Promise.all(
      (await fsp.readdir(dir)).filter((n) => n.endsWith(EXT)).map(async (n) => ({ n, st: await fsp.stat(path.join(dir, n)).catch(() => undefined) })),
    );
    let total = entries.reduce((t, e) => t + (e.st?.size ?? 0), 0);
    for (const e of entries.sort((a, b) => (a.st?.mtimeMs ?? 0) - (b.st?.mtimeMs ?? 0))) {
      if (total <= MAX_BYTES) break;
      await fsp.rm(path.join(dir, e.n), { force: true });
      total -= e.st?.size ?? 0;
    }
  } catch {
    // kept another time
  }
}

/**
 * Failures kept, so that a second run repeats no failure's cost: a job whose original is kept (`originalKey`) and
 * whose copy failed of itself (an argument set, a builder, that cannot build the block or run its forward; compiled
 * operators its process lacks) is answered again from the judge's earlier report, nothing run, when the same job
 * comes with the same file (its text, the companions it imports and the compiled operators beside it). Only
 * failures are kept, never a pass: an entry can only say what a run of the block said of itself. Kept only when
 * the original's worker ended of itself too (its run kept or replayed) and the category is none the machine's load,
 * a limit or a fault outside the block decides (`timeout`, `memory`, `interpreter`, `tampered`, `output`), nor a
 * finding to be seen again (`differs`).
 */
export const KEPT_FAILURES: readonly FailureCategory[] = ['native-extension', 'missing-package', 'import-error', 'instantiate', 'forward'];

/** The key of a job's failure: its original's key, the file's text and what the file reads beside it. */
export async function failureKey(originalKeyOf: string, file: string, options: ValidateOptions): Promise<string | undefined> {
  try {
    const h = createHash('sha256')
      .update('failure\0')
      .update(originalKeyOf)
      .update('\0')
      .update(judgedText(await fsp.readFile(file, 'utf8')));
    for (const c of options.companions ?? []) h.update(`\0${path.basename(c)}\0`).update(await fsp.readFile(c));
    for (const n of options.natives ?? []) {
      const st = await fsp.stat(n.file);
      h.update(`\0${n.module}\0${n.name}\0${n.fileName}\0${st.size}\0${st.mtimeMs}`);
    }
    h.update(`\0${options.allowWeakSandbox === false ? 'strict' : 'any'}`);
    return h.digest('hex');
  } catch {
    return undefined;
  }
}

/** The fields of a pulled file's provenance record that change with each pull of the same code (its time, the
 * verdict written after the judge ran); the judge reads others (the definitions, the names it renamed). */
const VOLATILE = ['pulledAt', 'validation'];
/** The provenance record's line as the judge reads it (probing.provenance_of; emit/pulledFile.ts writes it). */
const PROVENANCE_PREFIX = '# nnrag-provenance: ';

/** A file's text as the failure's key holds it: the provenance record without its VOLATILE fields. */
function judgedText(text: string): string {
  const start = text.indexOf(PROVENANCE_PREFIX);
  if (start < 0) return text;
  const end = text.indexOf('\n', start);
  try {
    const record = JSON.parse(text.slice(start + PROVENANCE_PREFIX.length, end < 0 ? undefined : end)) as Record<string, unknown>;
    for (const k of VOLATILE) delete record[k];
    return `${text.slice(0, start)}${JSON.stringify(record)}${end < 0 ? '' : text.slice(end)}`;
  } catch {
    return text;
  }
}

/** Whether `report` is a failure `keepFailure` keeps: the copy's of itself, beside an original that ended of itself. */
export function keepsAsFailure(report: ValidationReport, originalEnded: boolean): boolean {
  return originalEnded && !report.ok && report.category !== undefined && KEPT_FAILURES.includes(report.category);
}

/**
 * The failure kept for `key`, as a report answered without running anything (`timings.reused`); undefined when none,
 * or when the entry is not a kept failure (a damaged or foreign file: never read as a pass).
 */
export async function keptFailure(dir: string, key: string): Promise<ValidationReport | undefined> {
  const text = await keptOriginal(dir, key);
  if (text === undefined) return undefined;
  let report: ValidationReport;
  try {
    report = JSON.parse(text) as ValidationReport;
  } catch {
    return undefined;
  }
  if (!report || typeof report !== 'object' || report.ok !== false || !keepsAsFailure(report, true) || report.equivalence?.status === 'equivalent')
    return undefined;
  const { original_frames: _frames, ...rest } = report;
  return { ...rest, ok: false, seconds: 0, timings: { reused: true } };
}

/** Keeps failure `report` for `key` (its own seconds too: the block's time limit is spent as the first run spent it). */
export async function keepFailure(dir: string, key: string, report: ValidationReport): Promise<void> {
  const { original_frames: _frames, timings: _timings, ...rest } = report;
  await keepOriginal(dir, key, JSON.stringify(rest));
}
