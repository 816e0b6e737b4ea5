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
import type { ValidateOptions } from './report';
import { interpreterInfo } from './sandbox';

const MAX_BYTES = 1024 ** 3;
const EXT = '.json.gz';
const gzip = promisify(zlib.gzip);
const gunzip = promisify(zlib.gunzip);
const judgeVersions = new Map<string, string>();

/** A digest of the judge's own code (python-runner's nnrag_judge package beside `runner`), once per process. */
function judgeVersion(runner: string): string {
  let v = judgeVersions.get(runner);
  if (v === undefined) {
    const folder = path.join(path.dirname(runner), 'nnrag_judge');
    const h = createHash('sha256').update(readFileSync(runner));
    for (const f of readdirSync(folder)
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
