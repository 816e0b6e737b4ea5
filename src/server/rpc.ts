/** Typed request registration and cancellation for the server's handlers. */
import type { CancellationToken, Connection } from 'vscode-languageserver';
import type { Method } from '../shared/protocol';

export function onRequest<P, R>(connection: Connection, m: Method<P, R>, handler: (params: P, token: CancellationToken) => Promise<R> | R): void {
  connection.onRequest(m.method, (params: P, token: CancellationToken): Promise<unknown> => Promise.resolve(handler(params, token)));
}

/** An AbortSignal that follows an LSP cancellation token (the core only knows AbortSignal). */
export function signalOf(token: CancellationToken): AbortSignal {
  const controller = new AbortController();
  if (token.isCancellationRequested) controller.abort();
  token.onCancellationRequested(() => controller.abort());
  return controller.signal;
}
