/** Reading a file that something else could have replaced by a link: the file itself, never what a link points to. */
import { constants, promises as fsp } from 'fs';
import * as path from 'path';
import { NnragError } from './errors';

/**
 * The bytes of `file` when it is a regular file with one name (never through a link: `O_NOFOLLOW`, and no hard link
 * to a file elsewhere), on the device of `folder` when given (a file made inside a folder of ours stays there).
 */
export async function readOwnFile(file: string, folder?: string): Promise<Buffer> {
  let handle: Awaited<ReturnType<typeof fsp.open>>;
  try {
    handle = await fsp.open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'EMLINK') throw new NnragError('usage', `${file} is a symbolic link; NN-RAG never reads through one`);
    throw err;
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new NnragError('usage', `${file} is not a regular file`);
    if (st.nlink !== 1) throw new NnragError('usage', `${file} has ${st.nlink} names (a hard link): NN-RAG reads only a file of its own`);
    if (folder !== undefined && (await fsp.lstat(folder)).dev !== st.dev) throw new NnragError('usage', `${file} is not on the device of ${folder}`);
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/**
 * Removes `top` and everything in it, its folders made writable first: a folder a block or a build left read-only
 * (mode 0500) would otherwise keep what is in it on the host. Links are removed, never followed. Never throws: what
 * cannot be removed stays, and the caller's next start empties it again.
 */
export async function removeTree(top: string): Promise<void> {
  const open = async (dir: string): Promise<void> => {
    await fsp.chmod(dir, 0o700).catch(() => undefined);
    const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) if (e.isDirectory()) await open(`${dir}/${e.name}`);
  };
  const st = await fsp.lstat(top).catch(() => undefined);
  if (st?.isDirectory()) await open(top);
  await fsp.rm(top, { recursive: true, force: true }).catch(() => undefined);
}

/** Whether a process of this machine with `pid` is running (ESRCH: it is not; EPERM: it is, someone else's). */
export function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes what a process of ours left in `dir` when it was stopped by a signal before its own cleanup: entries named
 * by `pattern`, whose first group is the pid that made them, when that process is gone (a live one's are its own).
 */
export async function removeLeftovers(dir: string, pattern: RegExp): Promise<string[]> {
  const removed: string[] = [];
  for (const name of await fsp.readdir(dir).catch(() => [] as string[])) {
    const m = pattern.exec(name);
    if (!m || running(Number(m[1]))) continue;
    await removeTree(`${dir}/${name}`);
    removed.push(name);
  }
  return removed;
}

/** Bytes a file may hold beyond those on disk before it counts as sparse (a file system's last block, tail packing). */
const SPARSE_SLACK = 64 * 1024;

/** What `privateCopy` made: the files too large to copy (left to be shown read-only), and the bytes copied. */
export interface PrivateCopy {
  large: string[];
  bytes: number;
}

/**
 * A private copy of the folder `from` at `to` (a new folder), for code that writes into its repository while the
 * repository itself stays read-only: folders and regular files copied (a clone where the filesystem can), links
 * made again as they are (never followed), anything else left out, `.git` left out. A file over `maxFileBytes`, or
 * sparse (its holes would be written as zeros), is an empty placeholder and named in `large`; past `maxBytes` in all, undefined (the caller shows the folder
 * read-only instead).
 */
export async function privateCopy(from: string, to: string, limits = { maxFileBytes: 16 << 20, maxBytes: 1 << 30 }): Promise<PrivateCopy | undefined> {
  const out: PrivateCopy = { large: [], bytes: 0 };
  await fsp.mkdir(to, { recursive: true });
  const walk = async (rel: string): Promise<boolean> => {
    for (const entry of await fsp.readdir(path.join(from, rel), { withFileTypes: true })) {
      const name = path.join(rel, entry.name);
      if (!rel && entry.name === '.git') continue;
      const source = path.join(from, name);
      const target = path.join(to, name);
      if (entry.isDirectory()) {
        await fsp.mkdir(target);
        if (!(await walk(name))) return false;
      } else if (entry.isSymbolicLink()) {
        await fsp.symlink(await fsp.readlink(source), target);
      } else if (entry.isFile()) {
        const { size, blocks } = await fsp.lstat(source);
        // a sparse file (far fewer bytes on disk than it holds) would be written whole: treated as a large one, so
        // the copy's bytes are those actually written
        if (size > limits.maxFileBytes || blocks * 512 + SPARSE_SLACK < size) {
          await fsp.writeFile(target, '');
          out.large.push(name);
          continue;
        }
        if (out.bytes + size > limits.maxBytes) return false;
        out.bytes += size;
        await fsp.copyFile(source, target, constants.COPYFILE_FICLONE);
      }
    }
    return true;
  };
  return (await walk('')) ? out : undefined;
}

/** A file's `size` bytes in a few large reads (a file handle's `readFile` reads 512 KB a round trip: half a second
 * of waiting at 200 MB). */
export async function readWhole(fh: fsp.FileHandle, size: number): Promise<Buffer> {
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  while (at < size) {
    const { bytesRead } = await fh.read(out, at, Math.min(size - at, 1 << 30), at);
    if (bytesRead === 0) break;
    at += bytesRead;
  }
  return at === size ? out : out.subarray(0, at);
}

/**
 * `use` of `file` opened for reading when it is a regular file: never through a link, never a FIFO or a device
 * (opened without blocking, then checked); undefined when it is none, or on any error (a file beside a database that
 * someone else may have put there: a stamp, a lock, a search snapshot).
 */
export async function withRegularFile<T>(file: string, use: (fh: fsp.FileHandle, size: number) => Promise<T | undefined>): Promise<T | undefined> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const st = await fh.stat();
    return st.isFile() ? await use(fh, st.size) : undefined;
  } catch {
    return undefined;
  } finally {
    await fh.close();
  }
}

/** The text of a small regular file (`withRegularFile`), at most `maxBytes`; undefined otherwise. */
export function readSmallFile(file: string, maxBytes = 64 << 10): Promise<string | undefined> {
  return withRegularFile(file, async (fh, size) => (size > maxBytes ? undefined : (await readWhole(fh, size)).toString('utf8')));
}

/** Writes `data` to `file` through a new file renamed over it: a link at `file` is replaced, never written through. */
export async function writeReplacing(file: string, data: string | Uint8Array): Promise<void> {
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  try {
    await fsp.writeFile(tmp, data, { flag: 'wx' });
    await fsp.rename(tmp, file);
  } catch (err) {
    await fsp.rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
}
