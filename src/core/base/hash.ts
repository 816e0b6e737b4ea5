/** Content hashes (a leaf: the parse workers load it, so it imports nothing heavy). */
import { createHash } from 'crypto';

/** The git blob id of some bytes (what `git hash-object` prints): the content hash for every kind of source. */
export function blobId(bytes: Uint8Array): string {
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
}
