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

/** What a failed connection's system error means, as a person reads it ("getaddrinfo ENOTFOUND h" is not a sentence). */
const NETWORK_WORDS: Record<string, (host: string) => string> = {
  ENOTFOUND: (h) => `the host name ${h} is not known (no DNS answer: check the address and the network)`,
  EAI_AGAIN: (h) => `the host name ${h} could not be looked up now (DNS did not answer: check the network)`,
  ECONNREFUSED: (h) => `nothing answers at ${h} (the connection was refused)`,
  ECONNRESET: (h) => `${h} closed the connection`,
  ETIMEDOUT: (h) => `${h} did not answer in time`,
  EHOSTUNREACH: (h) => `${h} cannot be reached from this machine`,
  ENETUNREACH: (h) => `the network of ${h} cannot be reached from this machine`,
  CERT_HAS_EXPIRED: (h) => `the TLS certificate of ${h} has expired`,
  DEPTH_ZERO_SELF_SIGNED_CERT: (h) => `the TLS certificate of ${h} is self-signed and not trusted`,
  SELF_SIGNED_CERT_IN_CHAIN: (h) => `the TLS certificate of ${h} is signed by an authority this machine does not trust`,
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: (h) => `the TLS certificate of ${h} cannot be verified`,
  ERR_TLS_CERT_ALTNAME_INVALID: (h) => `the TLS certificate of ${h} is for another host name`,
};

/**
 * The reason a request to `host` failed, from the error or its cause (fetch wraps the system error), as a sentence;
 * undefined when the error is not a known connection failure.
 */
export function networkReason(err: unknown, host: string): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_WORDS[code]) return NETWORK_WORDS[code](host);
  }
  return undefined;
}
