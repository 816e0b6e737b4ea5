/**
 * One file, from bytes (or its path) to what the index stores: the content hash, the facts encoded for the `files`
 * table, and the few facts the main thread needs to write the file's classes. Runs in a parse worker, so the main
 * thread (which owns the database) neither reads, hashes, encodes nor copies whole facts objects. The facts are
 * encoded twice: whole, and slim (what discovery reads of every module).
 */
import { promises as fsp, readFileSync } from 'fs';
import { encodeFacts, encodeSlim } from '../store/factsCodec';
import { blobId } from '../base/hash';
import { saveUnits } from '../store/unitsCache';
import type { PythonParser } from '../parse/parser';
import type { ClassFact, ImportFact, ParseFailure } from '../parse/types';

export interface FileInput {
  /** The file's bytes, or */
  bytes?: Uint8Array;
  /** its absolute path, read where the parsing happens (local folders). */
  file?: string;
  /** The hash the index holds for it: when the content still has it, nothing is parsed. */
  knownHash?: string;
  /** The hash when the source knows it already (git blob ids). */
  hash?: string;
  maxBytes?: number;
  /** Where to keep what pulls need of the file beyond its facts (see unitsCache.ts); nowhere when undefined. */
  unitsDir?: string;
}

export type FileOutcome =
  | { kind: 'parsed'; hash: string; size: number; facts: Uint8Array; slim: Uint8Array; classes: ClassFact[]; imports: ImportFact[] }
  | ({ kind: 'skipped'; hash: string; size: number } & Omit<ParseFailure, 'ok'>)
  /** The content has the known hash: nothing to do. */
  | { kind: 'same'; hash: string; size: number }
  | { kind: 'unreadable'; detail: string }
  /** The analysis itself failed (a parse worker that died on this file). */
  | { kind: 'failed'; detail: string };

/**
 * `syncRead`: read the file without a thread-pool round trip (the main thread, which parses synchronously anyway and
 * only a live update's few files); workers read asynchronously, so the next file's read overlaps this one's parse.
 */
export async function analyseFile(parser: PythonParser, input: FileInput, { syncRead = false } = {}): Promise<FileOutcome> {
  let bytes = input.bytes;
  if (!bytes) {
    if (!input.file) return { kind: 'unreadable', detail: 'no bytes and no path' };
    try {
      bytes = syncRead ? readFileSync(input.file) : await fsp.readFile(input.file);
    } catch (err) {
      return { kind: 'unreadable', detail: (err as Error).message };
    }
  }
  const hash = input.hash ?? blobId(bytes);
  const size = bytes.length;
  if (input.knownHash && input.knownHash === hash) return { kind: 'same', hash, size };
  const out = parser.parse(bytes, input.maxBytes);
  if (!out.ok) return { kind: 'skipped', hash, size, reason: out.reason, detail: out.detail };
  if (input.unitsDir) saveUnits(input.unitsDir, hash, out);
  const { facts } = out;
  return {
    kind: 'parsed',
    hash,
    size,
    // fingerprints go to the classes table, not with the facts
    facts: encodeFacts({ ...facts, classes: facts.classes.map(({ dup: _dup, ...c }) => c) }),
    slim: encodeSlim(facts),
    classes: facts.classes,
    imports: facts.imports,
  };
}
