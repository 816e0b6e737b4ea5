/** A local folder source: a walk that never follows a link, and a module prefix when the root is a package. */
import * as fs from 'fs';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { NnragError, throwIfAborted } from '../base/errors';
import { makeMatcher } from './glob';
import { detectLicense, LICENSE_FILES } from './license';
import type { OpenedSource, RepoInfo, SkippedEntry, SourceConfig, SourceFile } from './types';

const YIELD_EVERY = 2000;
/** Folders a source never lists (version control, caches, environments). */
export const SKIP_DIRS = new Set(['.git', '.hg', '.svn', '__pycache__', 'node_modules', '.tox', '.venv', '.mypy_cache', '.eggs']);

export function validateName(name: string): string {
  if (!/^[A-Za-z0-9_.-]+$/.test(name) || name.startsWith('-')) {
    throw new NnragError('bad-source', `invalid repository name '${name}': use letters, digits, '.', '_' and '-'`);
  }
  return name;
}

/** The dotted package chain that `dir` sits in (`/x/torchvision/models` -> `torchvision.models`). */
function packagePrefix(dir: string): string {
  const parts: string[] = [];
  let cur = dir;
  while (fs.existsSync(path.join(cur, '__init__.py'))) {
    parts.unshift(path.basename(cur));
    const parent = path.dirname(cur);
    if (parent === cur) break;
    cur = parent;
  }
  return parts.join('.');
}

/**
 * The SPDX id of the first licence file found in `dirs`. Synchronous, like the walk below: a live update opens its
 * folder again, and a dozen missing files cost a dozen thread-pool round trips when awaited (up to 15 ms).
 */
export function readLicenseIn(dirs: string[]): string | undefined {
  for (const dir of dirs) {
    for (const name of LICENSE_FILES) {
      let text: string;
      try {
        text = fs.readFileSync(path.join(dir, name), 'utf8');
      } catch {
        continue; // not there
      }
      const id = detectLicense(text);
      if (id) return id;
    }
  }
  return undefined;
}

export interface FolderOptions {
  kind?: RepoInfo['kind'];
  license?: string;
  commit?: string;
  /** Where a checkout came from (its origin remote). */
  url?: string;
}

export async function openFolder(config: SourceConfig, options: FolderOptions = {}): Promise<OpenedSource> {
  const root = path.resolve(config.location);
  let stat;
  try {
    stat = fs.statSync(root);
  } catch {
    throw new NnragError('bad-source', `no such folder: ${config.location}`);
  }
  if (!stat.isDirectory()) throw new NnragError('bad-source', `not a folder: ${config.location}`);
  const realRoot = fs.realpathSync(root);
  const modulePrefix = packagePrefix(realRoot);
  const name = validateName(config.name ?? path.basename(realRoot));
  const include = makeMatcher(config.include);
  const exclude = makeMatcher(config.exclude);
  const license = options.license ?? readLicenseIn([realRoot, path.dirname(realRoot)]);
  const info: RepoInfo = {
    name,
    kind: options.kind ?? 'folder',
    location: realRoot,
    root: realRoot,
    modulePrefix,
    license,
    commit: options.commit,
    ...(options.url ? { url: options.url } : {}),
  };

  // Synchronous calls: one stat costs microseconds, against a thread-pool round trip for each awaited one (a warm start
  // lists every file). The walk yields to the event loop every YIELD_EVERY entries so a server stays responsive.
  async function list(signal?: AbortSignal): Promise<{ files: SourceFile[]; skipped: SkippedEntry[] }> {
    const files: SourceFile[] = [];
    const skipped: SkippedEntry[] = [];
    const stack = [''];
    let sinceYield = 0;
    while (stack.length) {
      throwIfAborted(signal);
      const rel = stack.pop()!;
      let entries;
      try {
        entries = fs.readdirSync(path.join(realRoot, rel), { withFileTypes: true });
      } catch (err) {
        skipped.push({ path: rel || '.', reason: 'unreadable', detail: (err as Error).message });
        continue;
      }
      if ((sinceYield += entries.length) > YIELD_EVERY) {
        sinceYield = 0;
        await new Promise((resolve) => setImmediate(resolve));
      }
      entries.sort((a, b) => (a.name < b.name ? -1 : 1));
      for (const e of entries) {
        const childRel = rel ? `${rel}/${e.name}` : e.name;
        if (e.isSymbolicLink()) {
          if (e.name.endsWith('.py') || !e.name.includes('.')) skipped.push(await describeLink(realRoot, childRel));
          continue;
        }
        if (e.isDirectory()) {
          if (!SKIP_DIRS.has(e.name) && !e.name.startsWith('.')) stack.push(childRel);
          continue;
        }
        if (!e.isFile() || !e.name.endsWith('.py')) continue;
        if (include && !include(childRel)) continue;
        if (exclude && exclude(childRel)) continue;
        try {
          const st = fs.statSync(path.join(realRoot, childRel));
          files.push({ path: childRel, size: st.size, mtimeMs: st.mtimeMs });
        } catch (err) {
          skipped.push({ path: childRel, reason: 'unreadable', detail: (err as Error).message });
        }
      }
    }
    files.sort((a, b) => (a.path < b.path ? -1 : 1));
    return { files, skipped };
  }

  /**
   * What `list` would say of these paths only (a live update): files to index, and skipped entries. A path that is
   * gone, a folder or not Python is in neither (the caller removes what the index held for it).
   */
  async function listPaths(paths: string[]): Promise<{ files: SourceFile[]; skipped: SkippedEntry[] }> {
    const files: SourceFile[] = [];
    const skipped: SkippedEntry[] = [];
    for (const rel of new Set(paths)) {
      const parts = rel.split('/');
      if (!rel.endsWith('.py') || parts.some((p) => !p || p === '.' || p === '..' || p.startsWith('.') || SKIP_DIRS.has(p))) continue;
      if (include && !include(rel)) continue;
      if (exclude && exclude(rel)) continue;
      let st;
      try {
        // the walk never enters a linked folder: neither does this
        const dir = path.join(realRoot, path.dirname(rel));
        if (fs.realpathSync(dir) !== dir) continue;
        st = fs.lstatSync(path.join(realRoot, rel));
      } catch {
        continue;
      }
      if (st.isSymbolicLink()) skipped.push(await describeLink(realRoot, rel));
      else if (st.isFile()) files.push({ path: rel, size: st.size, mtimeMs: st.mtimeMs });
    }
    return { files, skipped };
  }

  async function read(file: SourceFile): Promise<Uint8Array> {
    return fsp.readFile(path.join(realRoot, file.path));
  }

  return { info, config, list, listPaths, read, localPath: (file) => path.join(realRoot, file.path) };
}

/** Links are never followed; say where one points and why it was skipped. */
async function describeLink(root: string, rel: string): Promise<SkippedEntry> {
  const abs = path.join(root, rel);
  let target = '?';
  try {
    target = await fsp.readlink(abs);
    const real = await fsp.realpath(abs);
    const inside = real === root || real.startsWith(root + path.sep);
    return inside
      ? { path: rel, reason: 'link', detail: `link to ${target} inside the repository (indexed at its real path)` }
      : { path: rel, reason: 'link-outside', detail: `link to ${target}, outside the repository: not followed` };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ELOOP'
      ? { path: rel, reason: 'link-loop', detail: `link loop through ${target}: not followed` }
      : { path: rel, reason: 'link-outside', detail: `dangling link to ${target}: not followed` };
  }
}
