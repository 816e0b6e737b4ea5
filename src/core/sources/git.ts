/**
 * A git source over http(s): a shallow, single-branch clone without checkout into a cache folder, blobs read
 * straight from the object store with one shared cache; later runs fetch and notice a new commit.
 */
import { createHash } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import git from 'isomorphic-git';
import http from 'isomorphic-git/http/node';
import { CancelledError, errorMessage, networkReason, NnragError, throwIfAborted } from '../base/errors';
import { validateName } from './folder';
import { makeMatcher } from './glob';
import { defaultGitName } from './names';
import { detectLicense, LICENSE_FILES } from './license';
import type { OpenedSource, RepoInfo, SkippedEntry, SourceConfig, SourceFile } from './types';

/** Text with every URL's user info and query string (where tokens go) removed, for errors and logs. */
export function redactUrls(text: string): string {
  return text
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@'"]*@/gi, '$1')
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/[^\s?#'"]*)[?#][^\s'"]*?(?=[:,;.)]?(?:\s|$|['"]))/gi, '$1')
    .replace(/\b(token|access_token|private_token|password|secret|api_key|key)=[^\s&'"]+/gi, '$1=...');
}

/** Checks a git URL and returns it normalised; throws a clear error (the URL shown without credentials) otherwise. */
export function checkGitUrl(raw: string): string {
  const shown = redactUrls(raw);
  if (raw.startsWith('-')) throw new NnragError('bad-url', `'${shown}' looks like an option, not a repository URL`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new NnragError('bad-url', `'${shown}' is not a URL; give an http(s) git URL or a local folder`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new NnragError('bad-url', `unsupported URL scheme '${url.protocol}' in '${shown}': only http:// and https:// git URLs are supported`);
  }
  if (!url.hostname) throw new NnragError('bad-url', `no host in '${shown}'`);
  if (url.username || url.password || url.search || url.hash) {
    throw new NnragError(
      'bad-url',
      `'${url.origin}${url.pathname}': do not put credentials or a query in the URL; they would be stored in plain text (use a credential helper or the token prompt)`,
    );
  }
  return url.toString().replace(/\/$/, '');
}

// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]+/g;

/** What a server answered, as we show it: URLs without credentials, no control characters, one line, short. */
/** The host (and port) of a URL, for a sentence; the URL itself (without credentials) when it does not parse. */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return redactUrls(url);
  }
}

function serverSaid(text: string): string {
  const line = redactUrls(text).replace(CONTROL_CHARACTERS, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 300)}...` : line;
}

export function looksLikeUrl(s: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(s) || /^git@/.test(s);
}

export interface GitOptions {
  cacheDir: string;
  /** Called with human-readable progress of the clone or fetch. */
  onMessage?: (message: string) => void;
  signal?: AbortSignal;
  onAuth?: GitAuth;
  /** Called when the server refused the credentials `onAuth` gave (so a stored secret can be forgotten). */
  onAuthFailure?: (url: string) => void;
  /** How slow a server may be before the clone or fetch gives up (defaults: GIT_TIMEOUTS). */
  timeouts?: Partial<GitTimeouts>;
}

export interface GitTimeouts {
  /** No byte (or no answer) from the server for this long. */
  idleMs: number;
  /** Over each window of `windowMs`, fewer than `minBytes` bytes: a server that drips. */
  windowMs: number;
  minBytes: number;
}

export const GIT_TIMEOUTS: GitTimeouts = { idleMs: 60_000, windowMs: 60_000, minBytes: 4096 };

/**
 * isomorphic-git's node client, with limits it lacks: an answer and every part of a body must come within `idleMs`,
 * each `windowMs` must bring `minBytes`, and the signal (Ctrl-C, a cancelled request) stops a transfer at once.
 */
export function guardedHttp(signal: AbortSignal | undefined, limits: GitTimeouts): typeof http & { stopped?: string } {
  // why a transfer was stopped: isomorphic-git reads some bodies through a reader that turns errors into an "empty
  // response", so the reason is kept here for the message
  let stopped: string | undefined;
  const race = <T>(promise: Promise<T>, what: () => string | undefined): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const check = setInterval(
        () => {
          const why = signal?.aborted ? 'cancelled' : what();
          if (why) {
            clearInterval(check);
            stopped = why;
            reject(signal?.aborted ? new CancelledError() : new Error(why));
          }
        },
        Math.min(250, limits.idleMs / 4),
      );
      promise.then(
        (v) => {
          clearInterval(check);
          resolve(v);
        },
        (e) => {
          clearInterval(check);
          reject(e);
        },
      );
    });
  return {
    get stopped() {
      return stopped;
    },
    async request(req) {
      throwIfAborted(signal);
      const asked = Date.now();
      const res = await race(http.request(req), () =>
        Date.now() - asked > limits.idleMs ? `no answer from the server in ${limits.idleMs / 1000} s` : undefined,
      );
      const body = res.body;
      if (!body) return res;
      let last = Date.now();
      let windowStart = Date.now();
      let windowBytes = 0;
      const slow = (): string | undefined => {
        if (signal?.aborted) return 'cancelled';
        const now = Date.now();
        if (now - last > limits.idleMs) return `no data from the server for ${limits.idleMs / 1000} s`;
        if (now - windowStart > limits.windowMs) {
          if (windowBytes < limits.minBytes) return `the server sent ${windowBytes} bytes in ${limits.windowMs / 1000} s; giving up`;
          windowStart = now;
          windowBytes = 0;
        }
        return undefined;
      };
      const iterator = body[Symbol.asyncIterator]();
      const guarded: AsyncIterableIterator<Uint8Array> = {
        [Symbol.asyncIterator]() {
          return guarded;
        },
        async next() {
          try {
            const item = await race(iterator.next(), slow);
            if (!item.done) {
              last = Date.now();
              windowBytes += item.value.length;
              // a drip answers every wait in time: the window is judged on arrival too
              const why = slow();
              if (why) {
                stopped = why;
                throw signal?.aborted ? new CancelledError() : new Error(why);
              }
            }
            return item;
          } catch (err) {
            void iterator.return?.();
            throw err;
          }
        },
      };
      return { ...res, body: guarded };
    },
  };
}

/** Credentials for a URL, asked for only when the server wants them (never stored in settings). */
export type GitAuth = (url: string) => GitCredentials | undefined | Promise<GitCredentials | undefined>;
export interface GitCredentials {
  username?: string;
  password?: string;
}

const CURRENT_REF = 'refs/nnrag/current';

/** isomorphic-git's credential callbacks for `url`: ask the front (a cancel when it has nothing), tell it of a refusal. */
function authCallbacks(
  url: string,
  options: GitOptions,
): { onAuth?: () => Promise<GitCredentials | { cancel: true }>; onAuthFailure?: () => { cancel: true } } {
  const ask = options.onAuth;
  const failed = options.onAuthFailure;
  return {
    onAuth: ask ? async () => (await ask(url)) ?? { cancel: true } : undefined,
    onAuthFailure: failed
      ? () => {
          failed(url);
          return { cancel: true };
        }
      : undefined,
  };
}

export async function openGit(config: SourceConfig, options: GitOptions): Promise<OpenedSource & { updated: boolean; previous?: string }> {
  const url = checkGitUrl(config.location);
  const name = validateName(config.name ?? defaultGitName(url));
  const gitdir = path.join(options.cacheDir, 'git', `${name}-${createHash('sha1').update(url).digest('hex').slice(0, 10)}.git`);
  const cache = {};
  const http = guardedHttp(options.signal, { ...GIT_TIMEOUTS, ...options.timeouts });
  const isCommit = !!config.ref && /^[0-9a-f]{40}$/i.test(config.ref);
  const onProgress = options.onMessage
    ? (p: { phase: string; loaded: number; total?: number }) => options.onMessage!(`${p.phase} ${p.loaded}${p.total ? `/${p.total}` : ''}`)
    : undefined;
  const { onAuth, onAuthFailure } = authCallbacks(url, options);

  let previous: string | undefined;
  try {
    previous = await git.resolveRef({ fs, gitdir, ref: CURRENT_REF });
  } catch {
    previous = undefined;
  }
  let commit: string;
  throwIfAborted(options.signal);
  try {
    if (!previous) {
      await fs.promises.rm(gitdir, { recursive: true, force: true });
      await git.clone({
        fs,
        http,
        dir: gitdir,
        gitdir,
        url,
        ref: isCommit ? undefined : config.ref,
        singleBranch: !isCommit,
        depth: isCommit ? undefined : 1,
        noCheckout: true,
        noTags: !config.ref,
        cache,
        onProgress,
        onAuth,
        onAuthFailure,
      });
      commit = isCommit ? config.ref!.toLowerCase() : await git.resolveRef({ fs, gitdir, ref: 'HEAD' });
    } else if (isCommit) {
      commit = config.ref!.toLowerCase();
      if (commit !== previous) {
        await git.fetch({ fs, http, gitdir, url, cache, onProgress, onAuth, onAuthFailure, tags: false });
      }
    } else {
      // never pass depth to a follow-up fetch: isomorphic-git then refetches history
      const res = await git.fetch({ fs, http, gitdir, url, ref: config.ref, singleBranch: true, tags: false, cache, onProgress, onAuth, onAuthFailure });
      commit = res.fetchHead ?? previous;
    }
  } catch (err) {
    if (err instanceof CancelledError || options.signal?.aborted) {
      if (!previous) await fs.promises.rm(gitdir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 }).catch(() => undefined);
      throw err instanceof CancelledError ? err : new CancelledError();
    }
    const why = http.stopped ?? networkReason(err, hostOf(url)) ?? errorMessage(err);
    if (previous && !isCommit) {
      options.onMessage?.(`fetch failed (${why}); using the cached commit ${previous.slice(0, 8)}`);
      commit = previous;
    } else {
      // no half clone left behind (retried: a failed clone may still be finishing a write, ENOTEMPTY)
      await fs.promises.rm(gitdir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 }).catch(() => undefined);
      throw new NnragError('git', `cannot clone ${redactUrls(url)}${config.ref ? ` at ${config.ref}` : ''}: ${serverSaid(why)}`, { cause: err });
    }
  }
  try {
    await git.readCommit({ fs, gitdir, oid: commit, cache });
  } catch (err) {
    throw new NnragError('git', `commit ${commit} of ${redactUrls(url)} is not available: ${serverSaid(errorMessage(err))}`);
  }
  await git.writeRef({ fs, gitdir, ref: CURRENT_REF, value: commit, force: true });

  const include = makeMatcher(config.include);
  const exclude = makeMatcher(config.exclude);
  let license: string | undefined;
  const info: RepoInfo = {
    name,
    kind: 'git',
    location: url,
    url,
    ref: config.ref,
    commit,
    root: gitdir,
    modulePrefix: '',
  };

  async function list(signal?: AbortSignal): Promise<{ files: SourceFile[]; skipped: SkippedEntry[] }> {
    const files: SourceFile[] = [];
    const skipped: SkippedEntry[] = [];
    const { commit: c } = await git.readCommit({ fs, gitdir, oid: commit, cache });
    const stack: { oid: string; prefix: string }[] = [{ oid: c.tree, prefix: '' }];
    while (stack.length) {
      throwIfAborted(signal);
      const { oid, prefix } = stack.pop()!;
      const { tree } = await git.readTree({ fs, gitdir, oid, cache });
      for (const entry of tree) {
        const rel = prefix ? `${prefix}/${entry.path}` : entry.path;
        if (entry.type === 'tree') {
          if (!entry.path.startsWith('.') && entry.path !== '__pycache__') stack.push({ oid: entry.oid, prefix: rel });
        } else if (entry.mode === '120000') {
          if (entry.path.endsWith('.py')) skipped.push({ path: rel, reason: 'link', detail: 'symbolic link in the repository: not followed' });
        } else if (entry.type === 'blob') {
          if (!prefix && LICENSE_FILES.includes(entry.path) && !license) {
            const { blob } = await git.readBlob({ fs, gitdir, oid: entry.oid, cache });
            license = detectLicense(Buffer.from(blob).toString('utf8'));
            info.license = license;
          }
          if (!entry.path.endsWith('.py')) continue;
          if (include && !include(rel)) continue;
          if (exclude && exclude(rel)) continue;
          files.push({ path: rel, size: -1, oid: entry.oid });
        }
      }
    }
    files.sort((a, b) => (a.path < b.path ? -1 : 1));
    return { files, skipped };
  }

  async function read(file: SourceFile): Promise<Uint8Array> {
    const { blob } = await git.readBlob({ fs, gitdir, oid: file.oid!, cache });
    return blob;
  }

  return { info, config, list, read, updated: previous !== undefined && previous !== commit, previous };
}

/** Reads one blob of a cached clone (used when the emitter needs a file's text). */
export async function readGitBlob(gitdir: string, oid: string): Promise<Uint8Array> {
  const { blob } = await git.readBlob({ fs, gitdir, oid });
  return blob;
}
