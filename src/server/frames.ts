/**
 * LSP frames from a client over stdio, checked before vscode-jsonrpc reads them: a header without a valid
 * Content-Length, or one announcing more than MAX_FRAME bytes, would leave jsonrpc's reader waiting for good. Such
 * bytes are dropped up to the next `Content-Length:` header, and the server goes on with the frames after them.
 */
import { Transform } from 'stream';
import type { TransformCallback } from 'stream';

export const MAX_FRAME = 64 << 20;
const HEADER_END = Buffer.from('\r\n\r\n');
const MARK = Buffer.from('Content-Length:', 'ascii');

export class FrameGuard extends Transform {
  private pending: Buffer = Buffer.alloc(0);
  private body = 0;

  constructor(private readonly onDropped: (why: string) => void) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    for (;;) {
      if (this.body > 0) {
        // inside a frame's content: pass it on as it comes
        const take = Math.min(this.body, this.pending.length);
        if (take === 0) break;
        this.push(this.pending.subarray(0, take));
        this.pending = this.pending.subarray(take);
        this.body -= take;
        continue;
      }
      const end = this.pending.indexOf(HEADER_END);
      if (end < 0) {
        // a header never longer than a few hundred bytes: a longer run without an end is not a header
        if (this.pending.length > 8192) this.resync('a header without an end');
        break;
      }
      const header = this.pending.subarray(0, end).toString('ascii');
      const length = /^content-length:[ \t]*(\d{1,12})[ \t]*$/im.exec(header);
      const size = length ? Number(length[1]) : NaN;
      if (!header.toLowerCase().startsWith('content-') || !Number.isSafeInteger(size) || size > MAX_FRAME) {
        this.resync(length ? `a frame of ${length[1]} bytes` : `a header without a valid Content-Length (${JSON.stringify(header.slice(0, 80))})`);
        continue;
      }
      this.push(this.pending.subarray(0, end + HEADER_END.length));
      this.pending = this.pending.subarray(end + HEADER_END.length);
      this.body = size;
    }
    done();
  }

  /** Drops bytes up to the next header, or all but the end that may begin one. Always drops at least one byte. */
  private resync(why: string): void {
    this.onDropped(why);
    const next = this.pending.indexOf(MARK, 1);
    if (next >= 0) {
      this.pending = this.pending.subarray(next);
      return;
    }
    let keep = Math.min(MARK.length - 1, this.pending.length - 1);
    while (keep > 0 && !this.pending.subarray(this.pending.length - keep).equals(MARK.subarray(0, keep))) keep--;
    this.pending = this.pending.subarray(this.pending.length - keep);
  }
}
