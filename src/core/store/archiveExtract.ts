/**
 * A gzipped tar archive unpacked into a folder of its own with bounded memory, stopped at the first entry that is
 * refused: the compressed bytes are read a little at a time and decompressed as the writes keep up (never the whole
 * archive in memory), every file being written is closed and awaited before the call returns, so the caller can
 * remove the folder knowing nothing writes into it any longer.
 */
import * as fs from 'fs';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { once } from 'events';
import * as zlib from 'zlib';
import * as tar from 'tar';

/** Compressed bytes read at a time: one read inflates to at most about 8 MB, and the ratio is measured that finely. */
const READ_BYTES = 8 * 1024;

/** What the archive may unpack to, as a multiple of its own size (a decompression bomb goes past it). */
export const MAX_RATIO = 1000;

/** An entry's path and what its header says of it. */
export interface ArchiveEntry {
  path: string;
  type: string;
  size: number;
}

/**
 * Unpacks `archive` (gzipped tar) into `into` (a fresh, empty folder): each entry is first shown to `accept`, which
 * returns why it is refused (the unpacking stops there) or undefined. Only files and folders are ever made; a path is
 * taken as given relative to `into` and must already have been checked by `accept`. Resolves with the reason of the
 * first refusal, or undefined once everything is written; every write stream is closed before it resolves.
 */
export async function extractBounded(archive: string, into: string, accept: (entry: ArchiveEntry) => string | undefined): Promise<string | undefined> {
  let refused: string | undefined;
  let wake = (): void => undefined;
  const stopped = new Promise<void>((resolve) => (wake = resolve));
  const stop = (why: string): void => {
    refused ??= why;
    wake();
  };
  const writing = new Set<Promise<void>>();
  const streams = new Set<fs.WriteStream>();
  const parser = new tar.Parser({ strict: true });
  const ended = once(parser, 'end').then(() => undefined);
  parser.on('error', (err: Error) => stop(`it cannot be read as a tar archive (${err.message})`));
  parser.on('entry', (entry: tar.ReadEntry) => {
    const why = refused ?? accept({ path: entry.path, type: entry.type, size: Number(entry.size ?? 0) });
    if (why !== undefined) {
      stop(why);
      entry.resume();
      return;
    }
    const target = path.join(into, entry.path);
    try {
      fs.mkdirSync(entry.type === 'Directory' ? target : path.dirname(target), { recursive: true });
    } catch (err) {
      stop(`${entry.path} cannot be made (${err instanceof Error ? err.message : String(err)})`);
      entry.resume();
      return;
    }
    if (entry.type === 'Directory') {
      entry.resume();
      return;
    }
    // a new file only: the same path again is refused, never written over or followed
    const stream = fs.createWriteStream(target, { flags: 'wx' });
    streams.add(stream);
    const done = new Promise<void>((resolve) => {
      stream.on('close', () => {
        streams.delete(stream);
        writing.delete(done);
        resolve();
      });
      stream.on('error', (err) => {
        stop(`${entry.path} cannot be written (${err.message})`);
        stream.destroy();
      });
    });
    writing.add(done);
    entry.pipe(stream);
  });
  const input = fs.createReadStream(archive, { highWaterMark: READ_BYTES });
  const gunzip = zlib.createGunzip({ chunkSize: 64 * 1024 });
  input.on('error', (err) => stop(`it cannot be read (${err.message})`));
  input.pipe(gunzip);
  let unpacked = 0;
  try {
    for await (const chunk of gunzip as AsyncIterable<Buffer>) {
      if (refused !== undefined) break;
      unpacked += chunk.length;
      // against the compressed bytes the decompressor has taken so far (not what was read ahead of it)
      if (unpacked > MAX_RATIO * Math.max(gunzip.bytesWritten, 1)) {
        stop(`it unpacks to more than ${MAX_RATIO} times its size (a decompression bomb)`);
        break;
      }
      // nothing more is decompressed until the files being written take it
      if (!parser.write(chunk)) await Promise.race([once(parser, 'drain'), stopped]);
    }
    if (refused === undefined) {
      parser.end();
      await Promise.race([ended, stopped]);
    }
  } catch (err) {
    stop(`it cannot be read as a gzipped tar archive (${err instanceof Error ? err.message : String(err)})`);
  }
  // finished or stopped: nothing more is read, and every file being written is closed, and awaited, before the
  // caller removes the folder (a write still running would outlive the removal)
  input.destroy();
  gunzip.destroy();
  if (refused !== undefined) for (const s of streams) s.destroy();
  while (writing.size) await Promise.all([...writing]);
  return refused;
}

/**
 * Removes `top` and checks that it is gone, trying again a few times (a file still closing, a folder made read-only);
 * throws naming what is left when it cannot.
 */
export async function removeChecked(top: string, remove: (dir: string) => Promise<void>): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    await remove(top);
    const left = await fsp.lstat(top).then(
      () => true,
      () => false,
    );
    if (!left) return;
    await new Promise((r) => setTimeout(r, 50 * (attempt + 1)));
  }
  throw new Error(`${top} could not be removed`);
}
