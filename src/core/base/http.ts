/** Asking another program over HTTP (an embedding service, a team's search server): its answer is data, read within a
 * time and a size. */
import { isIP } from 'net';

/** `localhost`, or a literal address of this machine's loopback (127.0.0.0/8, ::1): never a name to look up. */
export function loopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.split('.')[0] === '127';
  return isIP(host) === 6 && host === '::1';
}

/** Whether a server listening on `address` (as `server.address()` gives it) listens on this machine's loopback only. */
export function listensOnLoopback(address: string): boolean {
  return loopback(address) || /^::ffff:127\./.test(address);
}

export interface Asked {
  /** The most the answer may be, in bytes. */
  maxBytes: number;
  /** From the request to the answer's last byte. */
  timeoutMs: number;
  /** The caller's own cancel (a search typed over). */
  signal?: AbortSignal;
}

function size(bytes: number): string {
  return bytes >= 1 << 20 ? `${bytes / (1 << 20)} MB` : `${bytes / 1024} KB`;
}

/**
 * The answer to `init` at `url`, as text: within `timeoutMs` from the request to the answer's last byte (a timer of its
 * own, cleared after), at most `maxBytes` (read piece by piece, stopped past it); a redirect is refused (the address
 * asked is the one answered). Throws an Error that says what went wrong.
 */
export async function answerOf(url: string, init: RequestInit, { maxBytes, timeoutMs, signal }: Asked): Promise<string> {
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(new Error(`no whole answer within ${timeoutMs / 1000} s`)), timeoutMs);
  const cancelled = (): void => stop.abort(new Error('cancelled'));
  if (signal?.aborted) cancelled();
  signal?.addEventListener('abort', cancelled);
  try {
    const res = await fetch(url, { ...init, signal: stop.signal, redirect: 'error' });
    if (!res.ok) throw new Error(`it answered ${res.status} ${res.statusText}`);
    if (Number(res.headers.get('content-length') ?? 0) > maxBytes) throw new Error(`it answered more than ${size(maxBytes)}`);
    const pieces: Uint8Array[] = [];
    let got = 0;
    const reader = res.body?.getReader();
    for (;;) {
      const piece = reader ? await reader.read() : { done: true as const, value: undefined };
      if (piece.done) break;
      got += piece.value.byteLength;
      if (got > maxBytes) {
        const tooMuch = new Error(`it answered more than ${size(maxBytes)}`);
        stop.abort(tooMuch);
        throw tooMuch;
      }
      pieces.push(piece.value);
    }
    return Buffer.concat(pieces).toString('utf8');
  } catch (err) {
    // the timer's reason, not fetch's own words for an abort
    if (stop.signal.aborted && stop.signal.reason instanceof Error) throw stop.signal.reason;
    // fetch says "fetch failed": why is in its cause (refused, a redirect, a name not found)
    const cause = (err as { cause?: unknown }).cause;
    if (err instanceof Error && cause instanceof Error) throw new Error(`${err.message}: ${cause.message}`);
    throw err;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', cancelled);
  }
}
