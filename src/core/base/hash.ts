/** Content hashes (a leaf: the parse workers load it, so it imports nothing heavy). */
import { createHash } from 'crypto';
import { createReadStream } from 'fs';

/** The git blob id of some bytes (what `git hash-object` prints): the content hash for every kind of source. */
export function blobId(bytes: Uint8Array): string {
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
}

/** The sha256 of a file's content (hex), read in chunks. */
export async function fileSha256(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest('hex');
}
