/** The language client: starts the server over IPC with the paths it needs, and gives typed requests. */
import * as vscode from 'vscode';
import type { LanguageClientOptions, ServerOptions } from 'vscode-languageclient/node';
import { LanguageClient, TransportKind } from 'vscode-languageclient/node';
import type { InitOptions, Method } from '../shared/protocol';
import { setting } from './config';

export class NnragClient {
  private constructor(private readonly client: LanguageClient) {}

  static async start(context: vscode.ExtensionContext, log: vscode.LogOutputChannel, init: InitOptions): Promise<NnragClient> {
    const serverModule = vscode.Uri.joinPath(context.extensionUri, 'dist', 'server.js').fsPath;
    const serverOptions: ServerOptions = {
      run: { module: serverModule, transport: TransportKind.ipc },
      debug: { module: serverModule, transport: TransportKind.ipc, options: { execArgv: ['--nolazy', '--inspect=6019'] } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file', language: 'python' }],
      outputChannel: log,
      // provenance hovers link to the original source through this command only
      markdown: { isTrusted: { enabledCommands: ['nnrag.openSource'] }, supportHtml: false },
      initializationOptions: init,
      // the provenance hover and the upstream CodeLens, each with a setting that turns it off
      middleware: {
        provideHover: (document, position, token, next) => (setting('hover.enabled', document.uri) ? next(document, position, token) : undefined),
        provideCodeLenses: (document, token, next) => (setting('codeLens.enabled', document.uri) ? next(document, token) : []),
      },
    };
    const client = new LanguageClient('nnrag', 'NN-RAG', serverOptions, clientOptions);
    await client.start();
    context.subscriptions.push(client);
    return new NnragClient(client);
  }

  request<P, R>(m: Method<P, R>, params: P, token?: vscode.CancellationToken): Promise<R> {
    // never pass an undefined token: vscode-jsonrpc would send [params, null] as positional parameters
    return token ? this.client.sendRequest<R>(m.method, params, token) : this.client.sendRequest<R>(m.method, params);
  }

  onRequest<P, R>(m: Method<P, R>, handler: (params: P) => Promise<R> | R): vscode.Disposable {
    return this.client.onRequest(m.method, (params: P): Promise<unknown> => Promise.resolve(handler(params)));
  }

  onNotification<P>(m: Method<P, void>, handler: (params: P) => void): vscode.Disposable {
    return this.client.onNotification(m.method, handler);
  }
}
