/** Turns source arguments and settings into opened sources, with clear errors for bad input. */
import * as fs from 'fs';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { fileURLToPath } from 'url';
import git from 'isomorphic-git';
import { NnragError } from '../base/errors';
import { openFolder } from './folder';
import { checkGitUrl, looksLikeUrl, openGit, redactUrls } from './git';
import type { GitAuth } from './git';
import { openPythonPackages } from './pythonEnv';
import type { OpenedSource, SourceConfig } from './types';

export interface OpenOptions {
  cacheDir: string;
  signal?: AbortSignal;
  onMessage?: (message: string) => void;
  onAuth?: GitAuth;
  onAuthFailure?: (url: string) => void;
}

/** What a bare argument names: an http(s) URL is a git source, anything else must be a folder. */
export async function sourceFromArgument(arg: string, extra: Partial<SourceConfig> = {}): Promise<SourceConfig> {
  if (arg.startsWith('-')) throw new NnragError('usage', `'${arg}' looks like an option, not a source; put sources after 'index'`);
  const local = localOrRefused(arg);
  if (local) arg = local;
  else if (looksLikeUrl(arg)) {
    return { ...extra, location: checkGitUrl(arg), kind: 'git' };
  }
  try {
    const st = await fsp.stat(arg);
    if (!st.isDirectory()) throw new NnragError('bad-source', `'${arg}' is a file; give the repository's folder`);
  } catch (err) {
    if (err instanceof NnragError) throw err;
    throw new NnragError('bad-source', `'${arg}' is neither an http(s) git URL nor an existing folder`);
  }
  return { ...extra, location: arg, kind: 'folder' };
}

/**
 * A `file://` URL names a local checkout: its folder (indexed as one, with its commit); an ssh URL (`git@host:repo`,
 * `ssh://`) is refused with what to use instead (the git client here speaks http only).
 */
export function localOrRefused(location: string): string | undefined {
  if (/^ssh:\/\//i.test(location) || /^[\w.-]+@[\w.-]+:/.test(location)) {
    throw new NnragError(
      'bad-url',
      `'${redactUrls(location)}' is an ssh URL, which NN-RAG cannot fetch (its git client speaks http): give the https URL, or clone it and add the folder`,
    );
  }
  if (!/^file:\/\//i.test(location)) return undefined;
  let dir: string;
  try {
    dir = fileURLToPath(location);
  } catch {
    throw new NnragError('bad-url', `'${location}' is not a file URL NN-RAG can read`);
  }
  if (fs.existsSync(path.join(dir, 'HEAD')) && fs.existsSync(path.join(dir, 'objects')) && !fs.existsSync(path.join(dir, '.git'))) {
    throw new NnragError('bad-source', `${dir} is a bare repository (no files checked out): clone it (git clone ${dir}) and add the folder`);
  }
  return dir;
}

export async function openSource(config: SourceConfig, options: OpenOptions): Promise<OpenedSource[]> {
  const local = localOrRefused(config.location);
  if (local) config = { ...config, location: local, kind: 'folder' };
  const kind = config.kind ?? (looksLikeUrl(config.location) ? 'git' : 'folder');
  switch (kind) {
    case 'git':
      return [await openGit(config, options)];
    case 'python-env': {
      if (!config.python)
        throw new NnragError(
          'bad-source',
          `no interpreter given for the installed package '${config.location}': set "python" in its entry, or select the interpreter (NN-RAG: Select Python Interpreter)`,
        );
      return openPythonPackages(
        config.python,
        config.location
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
        {
          include: config.include,
          exclude: config.exclude,
          symbols: config.symbols,
          priority: config.priority,
          inline: config.inline,
          name: config.name,
        },
      );
    }
    default:
      return [await openFolder(config, await checkoutOf(config.location))];
  }
}

/**
 * A folder that is a git checkout (`.git` in it) says which commit it is at and where it came from, for provenance:
 * HEAD's commit and the `origin` remote's URL (credentials and query left out). A folder inside another checkout is
 * not that checkout's (its root is elsewhere); anything unreadable gives nothing.
 */
export async function checkoutOf(folder: string): Promise<{ commit?: string; url?: string }> {
  const dir = path.resolve(folder);
  if (
    !(await fsp.stat(path.join(dir, '.git')).then(
      (s) => s.isDirectory(),
      () => false,
    ))
  )
    return {};
  try {
    const commit = await git.resolveRef({ fs, dir, ref: 'HEAD' });
    const origin = (await git.getConfig({ fs, dir, path: 'remote.origin.url' })) as unknown;
    const url = typeof origin === 'string' && /^https?:\/\//.test(origin) ? redactUrls(origin) : undefined;
    return { commit, ...(url ? { url } : {}) };
  } catch {
    return {};
  }
}

/** Every file `commit` holds in the checkout at `folder`, path to blob id, read in one walk of its tree; undefined when
 * the checkout cannot say. */
export async function committedBlobs(folder: string, commit: string): Promise<Map<string, string> | undefined> {
  try {
    const out = new Map<string, string>();
    await git.walk({
      fs,
      dir: path.resolve(folder),
      trees: [git.TREE({ ref: commit })],
      map: async (filepath, [entry]) => {
        if (entry && (await entry.type()) === 'blob') out.set(filepath, await entry.oid());
        return true;
      },
    });
    return out;
  } catch {
    return undefined;
  }
}

/** The blob id `commit` holds at `filepath` in the checkout at `folder`; undefined when it holds none (a file added
 * since) or the checkout cannot say. */
export async function committedBlob(folder: string, commit: string, filepath: string): Promise<string | undefined> {
  try {
    return (await git.readBlob({ fs, dir: path.resolve(folder), oid: commit, filepath })).oid;
  } catch {
    return undefined;
  }
}
