/** Error classes shared by every front. A user's cancel is its own class so fronts can show it quietly. */

export type ErrorCode =
  | 'usage'
  | 'bad-source'
  | 'bad-url'
  | 'not-found'
  | 'corrupt-db'
  /** a --db path that cannot hold our index (a device, a folder, another program's file, locked, unwritable) */
  | 'bad-db'
  | 'git'
  | 'interpreter'
  /** only a weaker sandbox than asked for is available */
  | 'sandbox'
  /** a repository's compiled operator did not build (--build-native) */
  | 'native-build'
  | 'internal';

export class NnragError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NnragError';
    this.code = code;
  }
}

export class CancelledError extends Error {
  constructor(message = 'Cancelled') {
    super(message);
    this.name = 'CancelledError';
  }
}

/** Throws a CancelledError when the signal has fired; call between units of work. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    throw new CancelledError();
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
