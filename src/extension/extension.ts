/** Entry of the extension: builds the objects, registers them, and turns an activation failure into a visible error. */
import * as vscode from 'vscode';
import type { SourceConfig } from '../core/sources/types';
import { GetIndexStatus, IndexStatusChanged, ReadSource, ReindexRepositories } from '../shared/protocol';
import type { IndexStatus, InitOptions } from '../shared/protocol';
import { BlockTreeProvider } from './blockTree';
import { NnragClient } from './client';
import { registerCommands } from './commands';
import { InterpreterService } from './interpreter';

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('NN-RAG', { log: true });
  context.subscriptions.push(log);
  try {
    await start(context, log);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    log.error(`[activate] ${err instanceof Error ? (err.stack ?? message) : message}`);
    const show = vscode.l10n.t('Show Log');
    void vscode.window.showErrorMessage(vscode.l10n.t('NN-RAG could not start: {0}', message), show).then((p) => p === show && log.show());
  }
}

async function start(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): Promise<void> {
  const dist = vscode.Uri.joinPath(context.extensionUri, 'dist');
  await vscode.workspace.fs.createDirectory(context.globalStorageUri);
  const settings = vscode.workspace.getConfiguration('nnrag');
  const init: InitOptions = {
    storageDir: context.globalStorageUri.fsPath,
    treeSitterWasm: vscode.Uri.joinPath(dist, 'web-tree-sitter.wasm').fsPath,
    pythonWasm: vscode.Uri.joinPath(dist, 'tree-sitter-python.wasm').fsPath,
    sqlWasm: vscode.Uri.joinPath(dist, 'sql-wasm.wasm').fsPath,
    runner: vscode.Uri.joinPath(context.extensionUri, 'python-runner', 'validate.py').fsPath,
    cacheDir: vscode.Uri.joinPath(context.globalStorageUri, 'cache').fsPath,
    repositories: settings.get<SourceConfig[]>('repositories') ?? [],
    maxFileKb: settings.get<number>('maxFileKb') ?? 2048,
  };
  const client = await NnragClient.start(context, log, init);
  const interpreter = new InterpreterService();
  await interpreter.init();
  context.subscriptions.push(interpreter);

  const tree = new BlockTreeProvider(client, vscode.Uri.joinPath(context.extensionUri, 'media'));
  const treeView = vscode.window.createTreeView('nnrag.blocks', { treeDataProvider: tree, showCollapseAll: true });
  context.subscriptions.push(treeView);

  // sources of git repositories are not checked out: show them read-only through the server
  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider('nnrag-source', {
      provideTextDocumentContent: async (uri) => (await client.request(ReadSource, { target: uri.query })).text,
    }),
  );

  const indexItem = vscode.window.createStatusBarItem('nnrag.index', vscode.StatusBarAlignment.Left, 10);
  indexItem.name = vscode.l10n.t('NN-RAG index');
  indexItem.command = 'nnrag.searchBlocks';
  const pythonItem = vscode.window.createStatusBarItem('nnrag.python', vscode.StatusBarAlignment.Left, 9);
  pythonItem.name = vscode.l10n.t('NN-RAG interpreter');
  pythonItem.command = 'nnrag.selectInterpreter';
  context.subscriptions.push(indexItem, pythonItem);
  const showPython = (): void => {
    const i = interpreter.current();
    pythonItem.text = `$(symbol-misc) ${i.path}`;
    pythonItem.tooltip = vscode.l10n.t('Interpreter for validating pulled blocks ({0}); click to change', i.source);
    pythonItem.show();
  };
  showPython();
  context.subscriptions.push(interpreter.onDidChange(showPython));

  let finishProgress: (() => void) | undefined;
  const showStatus = (s: IndexStatus): void => {
    if (s.state === 'indexing') {
      indexItem.text = `$(sync~spin) NN-RAG ${s.progress ? `${s.progress.step}/${s.progress.total}` : ''}`;
      if (!finishProgress) {
        void vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'NN-RAG' }, () => new Promise<void>((resolve) => (finishProgress = resolve)));
      }
    } else {
      indexItem.text = s.state === 'error' ? '$(error) NN-RAG' : `$(symbol-class) ${s.blocks} blocks`;
      finishProgress?.();
      finishProgress = undefined;
      tree.refresh();
    }
    indexItem.tooltip = `${s.message} · ${s.repos} repositories, ${s.files} files, ${s.blocks} blocks`;
    indexItem.show();
    void vscode.commands.executeCommand('setContext', 'nnrag.indexState', s.state);
  };
  context.subscriptions.push(client.onNotification(IndexStatusChanged, showStatus));
  showStatus(await client.request(GetIndexStatus, undefined));

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('nnrag.repositories')) {
        const repositories = vscode.workspace.getConfiguration('nnrag').get<SourceConfig[]>('repositories') ?? [];
        client.request(ReindexRepositories, { repositories }).then(
          () => tree.refresh(),
          (err: unknown) => log.error(`[index] ${err instanceof Error ? err.message : String(err)}`),
        );
      }
    }),
  );
  registerCommands(context, { client, tree, interpreter, log, storage: context.globalStorageUri, treeView });
  log.info('[activate] NN-RAG ready');
}

export function deactivate(): void {
  // the language client is in context.subscriptions and stops with them
}
