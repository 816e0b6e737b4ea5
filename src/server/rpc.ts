/** Typed request registration and cancellation for the server's handlers. */
import type { CancellationToken, Connection } from 'vscode-languageserver';
import { ErrorCodes, LSPErrorCodes, ResponseError } from 'vscode-languageserver';
import { NnragError, errorMessage } from '../core/base/errors';
import type { Method } from '../shared/protocol';

/**
 * Registers a typed handler. A failure reaches the client as its own message (a ResponseError with the error's code
 * as data), not as JSON-RPC's "Request nnrag/... failed with message: ...", which the editor would show as is.
 */
export function onRequest<P, R>(connection: Connection, m: Method<P, R>, handler: (params: P, token: CancellationToken) => Promise<R> | R): void {
  connection.onRequest(m.method, (params: P, token: CancellationToken): Promise<unknown> =>
    Promise.resolve()
      .then(() => handler(params, token))
      .catch((err: unknown) => {
        if (err instanceof ResponseError) throw err;
        if (token.isCancellationRequested) throw new ResponseError(LSPErrorCodes.RequestCancelled, 'cancelled');
        throw new ResponseError(ErrorCodes.InternalError, errorMessage(err), err instanceof NnragError ? { code: err.code } : undefined);
      }),
  );
}

/** An AbortSignal that follows an LSP cancellation token (the core only knows AbortSignal). */
export function signalOf(token: CancellationToken): AbortSignal {
  const controller = new AbortController();
  if (token.isCancellationRequested) controller.abort();
  token.onCancellationRequested(() => controller.abort());
  return controller.signal;
}
