/**
 * The language server: wires the index service of the core to the connection. Each feature's requests are handled in
 * their own file (indexHandlers, blockHandlers, provenance); the service is made when the client's options arrive
 * (`makeService` lets tests give their own). Never writes to stdout (the LSP pipe); logs go to the client.
 */
import type { Connection, InitializeResult } from 'vscode-languageserver';
import * as path from 'path';
import { CodeLensRefreshRequest, MessageType, ShowMessageNotification, TextDocuments, TextDocumentSyncKind } from 'vscode-languageserver';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { errorMessage } from '../core/base/errors';
import { IndexService } from '../core/service/indexService';
import type { ServiceEvents, ServiceOptions } from '../core/service/indexService';
import { VERSION } from '../shared/version';
import { GetGitCredentials, GitCredentialsRejected, IndexStatusChanged } from '../shared/protocol';
import type { InitOptions } from '../shared/protocol';
import { registerBlockHandlers } from './blockHandlers';
import { registerIndexHandlers } from './indexHandlers';
import { registerProvenance } from './provenance';
import { registerPulledHandlers } from './pulledHandlers';

export type MakeService = (options: ServiceOptions, events: ServiceEvents) => IndexService;

export function startServer(connection: Connection, makeService: MakeService = (o, e) => new IndexService(o, e)): void {
  const documents = new TextDocuments(TextDocument);
  let options: InitOptions | undefined;
  let service: IndexService | undefined;
  let canRefreshLenses = false;
  const log = (area: string, message: string): void => connection.console.log(`[${area}] ${message}`);
  const ready = (): IndexService => {
    if (!service) throw new Error('the server is not initialised');
    return service;
  };

  connection.onInitialize((params): InitializeResult => {
    options = params.initializationOptions as InitOptions;
    canRefreshLenses = params.capabilities.workspace?.codeLens?.refreshSupport === true;
    service = makeService(
      { ...options, repositories: options.repositories ?? [] },
      {
        log,
        status: (s) => void connection.sendNotification(IndexStatusChanged.method, s),
        // a notification, not a request: a client that does not answer message requests cannot crash us
        failed: (message) => void connection.sendNotification(ShowMessageNotification.type, { type: MessageType.Error, message }),
        // upstream code may have changed under pulled files
        changed: () => {
          if (canRefreshLenses) connection.sendRequest(CodeLensRefreshRequest.type).catch(() => undefined);
        },
        // credentials come from the client's secret storage, asked for only when a server wants them
        auth: async (url) => (await connection.sendRequest<{ username?: string; password?: string } | null>(GetGitCredentials.method, { url })) ?? undefined,
        authFailed: (url) => void connection.sendNotification(GitCredentialsRejected.method, { url }),
      },
    );
    return {
      capabilities: {
        textDocumentSync: TextDocumentSyncKind.Incremental,
        hoverProvider: true,
        codeLensProvider: { resolveProvider: false },
      },
      serverInfo: { name: 'nn-rag', version: VERSION },
    };
  });

  connection.onInitialized(() => {
    ready()
      .reindex()
      .catch((err) => log('index', errorMessage(err)));
  });

  registerIndexHandlers(connection, ready);
  registerBlockHandlers(connection, ready, log);
  registerProvenance(connection, documents, () => service);
  registerPulledHandlers(connection, ready, () => path.join(options!.storageDir, 'scratch'));

  connection.onShutdown(async () => {
    await service?.dispose();
  });

  documents.listen(connection);
  connection.listen();
}
