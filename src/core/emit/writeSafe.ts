/**
 * Where pulled files and specifications may be written: names from indexed code (repository names, module paths)
 * made safe as single path segments, and writes that never go through a link, never leave the folder the user chose,
 * and never replace a file that is not a pulled one, or one edited since its pull, unless forced.
 */
import * as fs from 'fs';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { NnragError } from '../base/errors';
import { bodyHash, readProvenance } from './pulledFile';

/** One path segment from a name that indexed code chose: no separators, control characters, `.`/`..` or leading dash. */
export function safeSegment(name: string): string {
  // eslint-disable-next-line no-control-regex
  let s = name.replace(/[/\\\u0000-\u001f\u007f]/g, '_').trim();
  if (s.startsWith('-')) s = `_${s.slice(1)}`;
  if (s === '' || /^\.+$/.test(s)) s = s.replace(/\./g, '_') || '_';
  return s.slice(0, 200);
}

/** `segments` joined under `root`; throws if the result would leave it (it cannot once each segment is safe). */
export function joinInside(root: string, ...segments: string[]): string {
  const base = path.resolve(root);
  const file = path.resolve(base, ...segments.map(safeSegment));
  if (file !== base && !file.startsWith(`${base}${path.sep}`)) throw new NnragError('usage', `refusing to write ${file}: outside ${base}`);
  return file;
}

/** Why `file` may not be replaced by a new pull (undefined when it may): a link, a folder, not pulled, or edited. */
export async function replaceProblem(file: string): Promise<string | undefined> {
  let st: fs.Stats;
  try {
    st = await fsp.lstat(file);
  } catch {
    return undefined; // a new file
  }
  if (st.isSymbolicLink()) return `${file} is a symbolic link; NN-RAG never writes through one`;
  if (!st.isFile()) throw new NnragError('usage', `${file} is not a regular file; choose another --out`);
  const text = await fsp.readFile(file, 'utf8');
  const prov = readProvenance(text);
  if (!prov) return `${file} exists and was not pulled by NN-RAG`;
  if (bodyHash(text) !== prov.hash) return `${file} was edited since it was pulled (nn-rag update ${file} merges upstream into your edits)`;
  return undefined;
}

/**
 * Makes sure `dir` is a real folder inside `root`, component by component from `root` down, without following a link
 * below `root` (a link at `root` or above it is the user's choice and stays); missing folders are made.
 */
export async function folderInside(root: string, dir: string): Promise<void> {
  const base = path.resolve(root);
  const target = path.resolve(dir);
  if (target !== base && !target.startsWith(`${base}${path.sep}`)) throw new NnragError('usage', `refusing to write in ${target}: outside ${base}`);
  await fsp.mkdir(base, { recursive: true });
  let at = base;
  for (const part of path.relative(base, target).split(path.sep).filter(Boolean)) {
    at = path.join(at, part);
    let st: fs.Stats | undefined;
    try {
      st = await fsp.lstat(at);
    } catch {
      st = undefined;
    }
    if (!st) {
      await fsp.mkdir(at).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
      st = await fsp.lstat(at);
    }
    if (st.isSymbolicLink()) throw new NnragError('usage', `refusing to write through the link ${at} (inside ${base})`);
    if (!st.isDirectory()) throw new NnragError('usage', `${at} is not a folder`);
  }
}

/**
 * Writes `content` to `file` by a new temporary file renamed over it, so a link at `file` is replaced, never followed;
 * the folders from `root` (default: the file's own folder) down to the file are checked by `folderInside`.
 */
export async function writeText(file: string, content: string | Uint8Array, root?: string): Promise<void> {
  await folderInside(root ?? path.dirname(file), path.dirname(file));
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${Math.random().toString(36).slice(2, 8)}.tmp`);
  try {
    await fsp.writeFile(tmp, content, { encoding: 'utf8', flag: 'wx' });
    await fsp.rename(tmp, file);
  } catch (err) {
    await fsp.rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
}

/**
 * `writeText` for a pulled file: without `force`, a file that `replaceProblem` objects to is an error and nothing
 * is written.
 */
export async function writeSafely(file: string, content: string, force = false, root?: string): Promise<void> {
  const problem = await replaceProblem(file);
  if (problem && !force) throw new NnragError('usage', `${problem}; --force replaces it`);
  await writeText(file, content, root);
}
