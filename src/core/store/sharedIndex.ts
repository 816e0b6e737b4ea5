/**
 * A team's published index (`nnrag.sharedIndex`, `nn-rag import URL`): an archive made by `nn-rag export`, at a path
 * or an http(s) URL. `refreshShared` keeps a checked copy beside the database, downloading again only when the server
 * says it changed (ETag / If-None-Match) or the file's hash changed; an archive that is refused leaves the last good
 * copy in use. `layerShared` makes the index a window works in: the shared copy's repositories (read-only: never
 * re-indexed or dropped by the settings) with the user's own indexed on top.
 */
import { createWriteStream, promises as fsp } from 'fs';
import * as path from 'path';
import { removeLeftovers } from '../base/files';
import { Readable } from 'stream';
import { pipeline } from 'stream/promises';
import { NnragError, networkReason } from '../base/errors';
import { fileSha256 } from '../base/hash';
import { redactUrls } from '../sources/git';
import { IndexDb, LockedError } from './database';
import { DEFAULT_IMPORT_LIMITS, importIndex, megabytes } from './indexArchive';
import type { ArchiveManifest, ImportLimits } from './indexArchive';

/** How a download of a shared index is bounded, besides the import's own limits. */
export interface DownloadLimits extends ImportLimits {
  /** No byte for this long: the download is given up. */
  idleMs: number;
  /** The whole download may take this long. */
  totalMs: number;
  /** Follow a redirect to another origin (scheme, host, port); same-origin redirects are always followed. */
  allowRedirects: boolean;
}

export const DEFAULT_DOWNLOAD_LIMITS: DownloadLimits = { ...DEFAULT_IMPORT_LIMITS, idleMs: 60_000, totalMs: 30 * 60_000, allowRedirects: false };

/**
 * The response for `url`, following at most five redirects, each only to the same origin unless `allowRedirects`
 * (a redirect never goes to anything but http(s)).
 */
async function fetchBounded(url: string, headers: Record<string, string>, signal: AbortSignal, allowRedirects: boolean): Promise<Response> {
  let at = new URL(url);
  for (let hop = 0; hop <= 5; hop++) {
    const res = await fetch(at, { headers, signal, redirect: 'manual' });
    const to = res.headers.get('location');
    if (![301, 302, 303, 307, 308].includes(res.status) || !to) return res;
    await res.body?.cancel().catch(() => undefined);
    const next = new URL(to, at);
    if (!/^https?:$/.test(next.protocol)) throw new NnragError('bad-source', `the server redirects to ${redactUrls(next.href)}, which is not http(s)`);
    if (next.origin !== at.origin && !allowRedirects) {
      throw new NnragError(
        'bad-source',
        `the server redirects to another origin (${redactUrls(next.origin)}); allow it with --allow-redirects or nnrag.sharedIndexFollowRedirects`,
      );
    }
    at = next;
  }
  throw new NnragError('bad-source', 'the server redirects more than five times');
}

/** What was fetched last, beside the shared copy (`<db>.shared.json`). */
interface SharedState {
  location: string;
  etag?: string;
  sha256: string;
  fetched_at: string;
  repositories: string[];
}

export interface SharedRefresh {
  /** `downloaded`: a new archive was checked and is now in use; `unchanged`: the copy in use is current. */
  state: 'downloaded' | 'unchanged';
  sha256: string;
  repositories: string[];
}

const stateFile = (dbFile: string): string => `${dbFile}.shared.json`;
/** The meta key of a working index: the shared archive it was layered on, and that archive's repositories. */
const LAYERED = 'shared_archive';

async function readState(dbFile: string): Promise<SharedState | undefined> {
  try {
    return JSON.parse(await fsp.readFile(stateFile(dbFile), 'utf8')) as SharedState;
  } catch {
    return undefined;
  }
}

/** Whether the index at `dbFile` is the copy of the shared index at `location` (so that refreshing it replaces it). */
export async function sharedFrom(dbFile: string, location: string): Promise<boolean> {
  return (await readState(dbFile))?.location === redactUrls(location);
}

const UNREACHABLE = Symbol('unreachable');

/** `err`, marked as a shared index that could not be reached (fetched or read), not one that was refused. */
function unreachable(err: NnragError): NnragError {
  return Object.assign(err, { [UNREACHABLE]: true });
}

/** Whether `err` says the shared index could not be reached (a network failure, a missing file), not that it was refused. */
export function isUnreachable(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { [UNREACHABLE]?: boolean })[UNREACHABLE] === true;
}

/** Whether a shared index's location is an http(s) URL (else a path). */
export const isHttpUrl = (location: string): boolean => /^https?:\/\//i.test(location);

/**
 * Brings the shared copy at `dbFile` up to date with the archive at `location`. Throws (a clear message, the copy in
 * use unchanged) when the archive cannot be fetched or is refused.
 */
export async function refreshShared(
  location: string,
  dbFile: string,
  options: { sqlWasm?: string; signal?: AbortSignal; limits?: Partial<DownloadLimits> } = {},
): Promise<SharedRefresh> {
  const { sqlWasm, signal } = options;
  const shown = redactUrls(location);
  // what an earlier run stopped by a signal left of its download goes first
  await removeLeftovers(path.dirname(path.resolve(dbFile)), new RegExp(`^${escapeRegExp(path.basename(dbFile))}\\.download\\.(\\d+)\\.tmp$`));
  const before = await readState(dbFile);
  const have =
    before?.location === shown &&
    (await fsp.stat(dbFile).then(
      () => true,
      () => false,
    ))
      ? before
      : undefined;
  const kept = have ? '; the copy fetched before stays in use' : '';
  const cannotFetch = (why: string): NnragError => unreachable(new NnragError('bad-source', `cannot fetch the shared index ${shown}: ${why}${kept}`));
  await fsp.mkdir(path.dirname(path.resolve(dbFile)), { recursive: true });
  let archive = location;
  let etag: string | undefined;
  let download: string | undefined;
  if (isHttpUrl(location)) {
    const limits = { ...DEFAULT_DOWNLOAD_LIMITS, ...options.limits };
    const stop = new AbortController();
    const onAbort = (): void => stop.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort);
    let why: string | undefined;
    const giveUp = (reason: string): void => {
      why ??= reason;
      stop.abort(new Error(reason));
    };
    const total = setTimeout(() => giveUp(`it took longer than ${Math.round(limits.totalMs / 1000)} s`), limits.totalMs);
    const idleTimer = (): NodeJS.Timeout => setTimeout(() => giveUp(`no byte came for ${Math.round(limits.idleMs / 1000)} s`), limits.idleMs);
    let idle = idleTimer();
    const alive = (): void => {
      clearTimeout(idle);
      idle = idleTimer();
    };
    const failed = (err: unknown, during: string): NnragError =>
      cannotFetch(
        err instanceof NnragError
          ? err.message
          : (why ??
              networkReason(err, new URL(location).host) ??
              `${during} (${err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err)})`),
      );
    try {
      let res: Response;
      try {
        res = await fetchBounded(location, have?.etag ? { 'If-None-Match': have.etag } : {}, stop.signal, limits.allowRedirects);
      } catch (err) {
        throw failed(err, 'the request failed');
      }
      if (res.status === 304 && have) return { state: 'unchanged', sha256: have.sha256, repositories: have.repositories };
      if (!res.ok || !res.body) throw cannotFetch(`HTTP ${res.status} ${res.statusText}`);
      const declared = Number(res.headers.get('content-length') ?? 0);
      if (declared > limits.maxBytes) {
        await res.body.cancel().catch(() => undefined);
        throw cannotFetch(`it is ${megabytes(declared)}, over the limit of ${megabytes(limits.maxBytes)} (--max-size-mb, nnrag.sharedIndexMaxSizeMB)`);
      }
      etag = res.headers.get('etag') ?? undefined;
      download = `${dbFile}.download.${process.pid}.tmp`;
      let received = 0;
      const counted = async function* (body: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
        for await (const chunk of body) {
          alive();
          received += chunk.length;
          if (received > limits.maxBytes) {
            giveUp(`it is larger than the limit of ${megabytes(limits.maxBytes)} (--max-size-mb, nnrag.sharedIndexMaxSizeMB)`);
            throw new Error(why);
          }
          yield chunk;
        }
      };
      try {
        await pipeline(Readable.fromWeb(res.body as import('stream/web').ReadableStream), counted, createWriteStream(download, { flags: 'wx' }));
      } catch (err) {
        await fsp.rm(download, { force: true });
        throw failed(err, 'the download broke off');
      }
    } finally {
      clearTimeout(total);
      clearTimeout(idle);
      signal?.removeEventListener('abort', onAbort);
    }
    archive = download!;
  } else if (
    !(await fsp.stat(location).then(
      (s) => s.isFile(),
      () => false,
    ))
  ) {
    throw unreachable(new NnragError('bad-source', `the shared index ${location} is not a file${kept}`));
  }
  try {
    const sha256 = await fileSha256(archive);
    if (have && have.sha256 === sha256) {
      // the server sent the same archive again (or the file did not change): nothing to replace
      if (etag && etag !== have.etag) await writeState(dbFile, { ...have, etag });
      return { state: 'unchanged', sha256, repositories: have.repositories };
    }
    const manifest: ArchiveManifest = await importIndex(archive, dbFile, {
      force: true,
      sqlWasm,
      limits: { ...DEFAULT_IMPORT_LIMITS, ...options.limits },
      shown: `the shared index ${shown}`,
    });
    const repositories = manifest.repositories.map((r) => r.name);
    await writeState(dbFile, { location: shown, etag, sha256, fetched_at: new Date().toISOString(), repositories });
    return { state: 'downloaded', sha256, repositories };
  } finally {
    if (download) await fsp.rm(download, { force: true });
  }
}

async function writeState(dbFile: string, state: SharedState): Promise<void> {
  const tmp = `${stateFile(dbFile)}.${process.pid}.tmp`;
  await fsp.writeFile(tmp, `${JSON.stringify(state, null, 1)}\n`);
  await fsp.rename(tmp, stateFile(dbFile));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A working index's record of its shared archive: the archive's sha256, the repositories it holds from it, and those of
 * the archive the user indexes themselves (`shadowed`: the user's own rows replaced the archive's). */
interface Layered {
  sha256?: string;
  repositories?: string[];
  shadowed?: string[];
}

function layered(db: IndexDb): Layered {
  try {
    const v = JSON.parse(db.getMeta(LAYERED) ?? '{}') as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Layered) : {};
  } catch {
    return {};
  }
}

const names = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/** The repositories a working index holds from its shared archive (read-only there), none when it has none. */
export function sharedRepositories(db: IndexDb): Set<string> {
  return new Set(names(layered(db).repositories));
}

/** The shared archive's repositories that the user indexes themselves: their own rows are used, the archive's are not. */
export function shadowedRepositories(db: IndexDb): Set<string> {
  return new Set(names(layered(db).shadowed));
}

/**
 * Records that the user's own repository `name` replaced the shared archive's rows of that name (the caller dropped
 * them): it is no longer a shared repository of this index, and the tree says that it shadows the shared copy.
 */
export function shadowShared(db: IndexDb, name: string): void {
  const was = layered(db);
  if (!names(was.repositories).includes(name) && names(was.shadowed).includes(name)) return;
  db.setMeta(
    LAYERED,
    JSON.stringify({
      ...was,
      repositories: names(was.repositories).filter((n) => n !== name),
      shadowed: [...new Set([...names(was.shadowed), name])].sort(),
    }),
  );
}

/** The working index no longer uses a shared archive (its repositories were dropped). */
export function forgetShared(db: IndexDb): void {
  const was = layered(db);
  if (was.sha256 || was.repositories?.length || was.shadowed?.length) db.setMeta(LAYERED, '{}');
}

/** The sha256 of the shared archive a working index was made from, if any. */
export function layeredOn(db: IndexDb): string | undefined {
  return layered(db).sha256;
}

async function copyTree(from: string, to: string): Promise<void> {
  await fsp.cp(from, to, { recursive: true, force: true }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}

/**
 * Makes `workFile` start from the shared copy `sharedFile` when it was not layered on this archive yet (the user's own
 * repositories are then indexed on top by the next run); does nothing when it already is, or when another process
 * writes it (that one layers it). `carry` may copy what the index before held into the new one (the user's own
 * repositories, so they are not parsed again). Call before opening it.
 */
export async function layerShared(
  sharedFile: string,
  workFile: string,
  refresh: SharedRefresh,
  sqlWasm?: string,
  carry?: (layered: IndexDb, before: IndexDb) => void,
): Promise<boolean> {
  let work: IndexDb;
  try {
    work = (await IndexDb.open(workFile, { sqlWasm, write: 'try' })).db;
  } catch (err) {
    if (err instanceof LockedError) return false;
    throw err;
  }
  try {
    if (layeredOn(work) === refresh.sha256) return false;
    // the units cache is keyed by content: the shared one joins the window's; the sources are the archive's
    await copyTree(`${sharedFile}.units`, `${workFile}.units`);
    await fsp.rm(`${workFile}.sources`, { recursive: true, force: true });
    await copyTree(`${sharedFile}.sources`, `${workFile}.sources`);
    // a private copy (no lock) stamped with the archive it comes from, then put in place under the window's lock
    const tmp = `${workFile}.${process.pid}.layer.tmp`;
    await fsp.copyFile(sharedFile, tmp);
    const { db } = await IndexDb.open(tmp, { sqlWasm });
    try {
      db.setMeta(LAYERED, JSON.stringify({ sha256: refresh.sha256, repositories: refresh.repositories }));
      carry?.(db, work);
      await db.save();
    } finally {
      db.close();
    }
    await fsp.rename(tmp, workFile);
    await fsp.rm(`${tmp}.saved`, { force: true });
    await fsp.rm(`${workFile}.saved`, { force: true });
    // (the search snapshot of the window's old index: search/snapshot.ts)
    await fsp.rm(`${workFile}.search`, { force: true });
    return true;
  } finally {
    work.close();
  }
}
