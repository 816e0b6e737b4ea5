/** Entry of the extension: builds the objects, registers them, and turns an activation failure into a visible error. */
import * as vscode from 'vscode';
import { affects, scopeInEffect, setting } from './config';
import type { SettingKey } from './config';
import { registerLanguageModelTools } from './lmTools';
import type { SourceConfig } from '../core/sources/types';
import {
  GetGitCredentials,
  GetIndexStatus,
  GitCredentialsRejected,
  IndexStatusChanged,
  ReadSource,
  ReindexRepositories,
  RemoveManifests,
  UseSharedIndex,
} from '../shared/protocol';
import type { IndexStatus, InitOptions, Method } from '../shared/protocol';
import { DependencyTreeProvider } from './dependencyTree';
import { BlockTreeProvider } from './blockTree';
import { NnragClient } from './client';
import { registerCommands } from './commands';
import { Session } from './ctx';
import { EMPTY_SCHEME, PREVIEW_SCHEME, previewTexts } from './pullIntoWorkspace';
import { GitCredentialService } from './credentials';
import { InterpreterService, versionsLabel, withInterpreter } from './interpreter';
import type { Interpreter } from './interpreter';
import { PulledBlocksProvider } from './pulledView';
import { ValidationProblems } from './problems';
import { offerToKeepInterpreter } from './repositoryCommands';

/**
 * What `activate` returns: the index state and typed requests to the server. Used by the integration tests and by
 * other extensions; it holds no logic of its own.
 */
export interface NnragApi {
  status(): IndexStatus;
  /** Resolves with the first status for which `predicate` holds (now or later). */
  waitForStatus(predicate: (s: IndexStatus) => boolean): Promise<IndexStatus>;
  request<P, R>(m: Method<P, R>, params: P): Promise<R>;
  /** The interpreter that validates pulled blocks now, and where it comes from. */
  interpreter(): Interpreter;
  /** The interpreters Select Python Interpreter offers, in its order. */
  interpreterCandidates(): string[];
  /** The last error message a command showed. */
  lastError(): string | undefined;
  /** The settings scope a change of `key` is written to, as messages name it (`user`, `remote`, `workspace`, `folder`). */
  settingScope(key: SettingKey): string;
  /** The question of the pull waiting for Accept or Cancel while its notification shows; undefined once decided. */
  pullQuestion(): string | undefined;
  /** What the interpreter's language status item says now (its detail) and the command it runs. */
  interpreterStatus(): { detail: string | undefined; command: string | undefined };
  /** Puts `text` in the open search box as typing would (false when none is open); `searchOpen` says whether one is. */
  typeInSearch(text: string): boolean;
  searchOpen(): boolean;
}

export async function activate(context: vscode.ExtensionContext): Promise<NnragApi | undefined> {
  const log = vscode.window.createOutputChannel('NN-RAG', { log: true });
  context.subscriptions.push(log);
  try {
    return await start(context, log);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    log.error(`[activate] ${err instanceof Error ? (err.stack ?? message) : message}`);
    const show = vscode.l10n.t('Show Log');
    void vscode.window.showErrorMessage(vscode.l10n.t('NN-RAG could not start: {0}', message), show).then((p) => p === show && log.show());
    return undefined;
  }
}

/** The Pulled Blocks view follows the workspace's Python files; pulled sources and previews are shown read-only. */
function watchFiles(
  context: vscode.ExtensionContext,
  client: NnragClient,
  pulled: PulledBlocksProvider,
  problems: ValidationProblems,
  log: vscode.LogOutputChannel,
): void {
  // the view follows the files: pulls, updates, edits saved, files deleted
  const pyWatcher = vscode.workspace.createFileSystemWatcher('**/*.py');
  context.subscriptions.push(
    pyWatcher,
    pyWatcher.onDidCreate(() => pulled.refresh()),
    pyWatcher.onDidChange(() => pulled.refresh()),
    pyWatcher.onDidDelete((uri) => {
      pulled.refresh();
      problems.clear(uri);
      // a pulled file deleted takes its manifest and its entries in required_repos.json with it
      if (uri.scheme === 'file')
        client
          .request(RemoveManifests, { file: uri.fsPath })
          .catch((err: unknown) => log.warn(`[manifests] ${uri.fsPath}: ${err instanceof Error ? err.message : String(err)}`));
    }),
  );

  // sources of git repositories are not checked out: show them read-only through the server
  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider('nnrag-source', {
      provideTextDocumentContent: async (uri) => (await client.request(ReadSource, { target: uri.query })).text,
    }),
    // the left side of a new file's pull diff, and its right side (read-only: what Accept writes)
    vscode.workspace.registerTextDocumentContentProvider(EMPTY_SCHEME, { provideTextDocumentContent: () => '' }),
    vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, { provideTextDocumentContent: (uri) => previewTexts.get(uri.toString()) ?? '' }),
  );
}

/**
 * The language status items (shown with Python editors): the index's state, with a window progress while it indexes,
 * and the interpreter that validates. `show` takes each status the server sends; `current` is the last one.
 */
function languageStatus(
  context: vscode.ExtensionContext,
  interpreter: InterpreterService,
  tree: BlockTreeProvider,
  pulled: PulledBlocksProvider,
): {
  show: (s: IndexStatus) => void;
  changed: vscode.EventEmitter<IndexStatus>;
  current: () => IndexStatus;
  python: () => { detail: string | undefined; command: string | undefined };
} {
  let current: IndexStatus = { state: 'starting', message: '', files: 0, blocks: 0, repos: 0 };
  // language status items: shown with Python editors only, not in every window
  const indexItem = vscode.languages.createLanguageStatusItem('nnrag.index', { language: 'python' });
  indexItem.name = vscode.l10n.t('NN-RAG index');
  indexItem.command = { command: 'nnrag.searchBlocks', title: vscode.l10n.t('Search Blocks') };
  const pythonItem = vscode.languages.createLanguageStatusItem('nnrag.python', { language: 'python' });
  pythonItem.name = vscode.l10n.t('NN-RAG interpreter');
  pythonItem.command = { command: 'nnrag.selectInterpreter', title: vscode.l10n.t('Select') };
  context.subscriptions.push(indexItem, pythonItem);
  const showPython = (): void => {
    const i = interpreter.current();
    pythonItem.text = `$(symbol-misc) ${i.path}`;
    if (!vscode.workspace.isTrusted) {
      // in Restricted Mode nothing validates, whatever the interpreter: the item says so and offers trust
      pythonItem.detail = vscode.l10n.t('validation is off in Restricted Mode');
      pythonItem.severity = vscode.LanguageStatusSeverity.Warning;
      pythonItem.command = { command: 'workbench.trust.manage', title: vscode.l10n.t('Manage Workspace Trust') };
      return;
    }
    pythonItem.command = { command: 'nnrag.selectInterpreter', title: vscode.l10n.t('Select') };
    pythonItem.detail = vscode.l10n.t('validates pulled blocks ({0})', i.source);
    pythonItem.severity = vscode.LanguageStatusSeverity.Information;
    void interpreter.describe(i.path).then((v) => {
      if (interpreter.current().path !== i.path || !vscode.workspace.isTrusted) return;
      pythonItem.detail = `${versionsLabel(v)} · ${vscode.l10n.t('validates pulled blocks ({0})', i.source)}`;
      // without torch nothing validates: the item says so, and its command picks another
      if (!v.torch) pythonItem.severity = vscode.LanguageStatusSeverity.Warning;
    });
  };
  showPython();
  context.subscriptions.push(interpreter.onDidChange(showPython), vscode.workspace.onDidGrantWorkspaceTrust(showPython));

  let finishProgress: (() => void) | undefined;
  let reportProgress: ((message: string) => void) | undefined;
  const statusChanged = new vscode.EventEmitter<IndexStatus>();
  context.subscriptions.push(statusChanged);
  const showStatus = (s: IndexStatus): void => {
    current = s;
    statusChanged.fire(s);
    if (s.state === 'indexing') {
      indexItem.text = `NN-RAG ${s.progress ? `${s.progress.step}/${s.progress.total}` : ''}`;
      indexItem.busy = true;
      if (!finishProgress) {
        void vscode.window.withProgress(
          { location: vscode.ProgressLocation.Window, title: vscode.l10n.t('NN-RAG indexing') },
          (progress) =>
            new Promise<void>((resolve) => {
              finishProgress = resolve;
              reportProgress = (message) => progress.report({ message });
            }),
        );
      }
      reportProgress?.(s.progress ? `${s.progress.repo} ${s.progress.step}/${s.progress.total}` : s.message);
    } else {
      indexItem.text = s.state === 'error' ? '$(error) NN-RAG' : `$(symbol-class) ${s.blocks} blocks`;
      indexItem.busy = false;
      indexItem.severity = s.state === 'error' ? vscode.LanguageStatusSeverity.Error : vscode.LanguageStatusSeverity.Information;
      finishProgress?.();
      finishProgress = undefined;
      reportProgress = undefined;
      tree.refresh();
      pulled.refresh();
    }
    const shared = s.shared
      ? ` · ${
          s.shared.state === 'refused'
            ? vscode.l10n.t('shared index refused (the last good copy is in use): {0}', s.shared.message ?? '')
            : s.shared.state === 'unreachable'
              ? vscode.l10n.t('shared index unreachable: {0}', s.shared.message ?? '')
              : vscode.l10n.t('shared index: {0} repositories', s.shared.repositories.length)
        }`
      : '';
    indexItem.detail = `${s.message} · ${s.repos} repositories, ${s.files} files, ${s.blocks} blocks${s.failing ? ` · ${vscode.l10n.t('{0} cannot be indexed (see the Blocks view)', s.failing)}` : ''}${shared}`;
    if (s.state !== 'indexing' && s.failing) indexItem.severity = vscode.LanguageStatusSeverity.Warning;
    void vscode.commands.executeCommand('setContext', 'nnrag.indexState', s.state);
    // the walkthrough's "Index a repository" ticks once one is indexed
    if (s.state !== 'indexing' && s.repos > 0) void vscode.commands.executeCommand('setContext', 'nnrag.hasIndexedRepository', true);
  };
  return {
    show: showStatus,
    changed: statusChanged,
    current: () => current,
    python: () => ({ detail: pythonItem.detail, command: pythonItem.command?.command }),
  };
}

/** What the language server starts with: where its files are, and the settings the index depends on now. */
function initOptions(
  context: vscode.ExtensionContext,
  dist: vscode.Uri,
  settings: { repositories: SourceConfig[]; gitFetchIntervalMinutes: number },
): InitOptions {
  return {
    storageDir: context.globalStorageUri.fsPath,
    treeSitterWasm: vscode.Uri.joinPath(dist, 'web-tree-sitter.wasm').fsPath,
    pythonWasm: vscode.Uri.joinPath(dist, 'tree-sitter-python.wasm').fsPath,
    sqlWasm: vscode.Uri.joinPath(dist, 'sql-wasm.wasm').fsPath,
    parseWorker: vscode.Uri.joinPath(dist, 'parseWorker.js').fsPath,
    runner: vscode.Uri.joinPath(context.extensionUri, 'python-runner', 'judge.py').fsPath,
    cacheDir: vscode.Uri.joinPath(context.globalStorageUri, 'cache').fsPath,
    ...settings,
    maxFileKb: setting('maxFileKb'),
    sharedIndex: setting('sharedIndex') || undefined,
    sharedIndexMaxSizeMB: setting('sharedIndexMaxSizeMB'),
    sharedIndexFollowRedirects: setting('sharedIndexFollowRedirects'),
  };
}

async function start(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): Promise<NnragApi> {
  const dist = vscode.Uri.joinPath(context.extensionUri, 'dist');
  await vscode.workspace.fs.createDirectory(context.globalStorageUri);
  const interpreter = new InterpreterService(context.globalState);
  await interpreter.init();
  context.subscriptions.push(interpreter);
  // what the index depends on: read at start, and again when the settings or the interpreter change
  const indexSettings = (): { repositories: SourceConfig[]; gitFetchIntervalMinutes: number } => ({
    repositories: withInterpreter(setting('repositories'), interpreter.current().path),
    gitFetchIntervalMinutes: setting('git.fetchIntervalMinutes'),
  });
  const atStart = indexSettings();
  const client = await NnragClient.start(context, log, initOptions(context, dist, atStart));
  const credentials = new GitCredentialService(context.secrets, log);
  context.subscriptions.push(
    client.onRequest(GetGitCredentials, ({ url }) => credentials.credentialsFor(url)),
    client.onNotification(GitCredentialsRejected, ({ url }) => void credentials.rejected(url)),
  );
  const tree = new BlockTreeProvider(client, vscode.Uri.joinPath(context.extensionUri, 'media'));
  const treeView = vscode.window.createTreeView('nnrag.blocks', { treeDataProvider: tree, showCollapseAll: true, canSelectMany: true });
  context.subscriptions.push(treeView);
  const dependencies = new DependencyTreeProvider();
  const dependencyView = vscode.window.createTreeView('nnrag.dependencies', { treeDataProvider: dependencies, showCollapseAll: true });
  context.subscriptions.push(dependencyView);

  const pulled = new PulledBlocksProvider(client);
  const problems = new ValidationProblems();
  context.subscriptions.push(problems);
  context.subscriptions.push(vscode.window.createTreeView('nnrag.pulled', { treeDataProvider: pulled }));
  watchFiles(context, client, pulled, problems, log);

  const status = languageStatus(context, interpreter, tree, pulled);
  const showStatus = status.show;
  const statusChanged = status.changed;
  context.subscriptions.push(client.onNotification(IndexStatusChanged, showStatus));
  showStatus(await client.request(GetIndexStatus, undefined));

  const where = vscode.workspace.getConfiguration('nnrag').inspect<SourceConfig[]>('repositories');
  log.info(
    `[settings] nnrag.repositories: ${atStart.repositories.length} (user ${where?.globalValue?.length ?? '-'}, workspace ${where?.workspaceValue?.length ?? '-'}, folder ${where?.workspaceFolderValue?.length ?? '-'}); folders: ${(vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString()).join(', ') || 'none'}`,
  );
  let indexed = JSON.stringify(atStart);
  let followed = interpreter.current().path;
  const reindexIfChanged = (): void => {
    const now = indexSettings();
    if (JSON.stringify(now) === indexed) return;
    indexed = JSON.stringify(now);
    client.request(ReindexRepositories, now).then(
      () => tree.refresh(),
      (err: unknown) => log.error(`[index] ${err instanceof Error ? err.message : String(err)}`),
    );
  };
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => affects(e, 'repositories', 'git.fetchIntervalMinutes') && reindexIfChanged()),
    // another shared index (or none): fetched, and the index made again from it
    vscode.workspace.onDidChangeConfiguration(
      (e) =>
        affects(e, 'sharedIndex') &&
        client.request(UseSharedIndex, { location: setting('sharedIndex') || undefined }).then(
          () => tree.refresh(),
          (err: unknown) => log.error(`[index] shared index: ${err instanceof Error ? err.message : String(err)}`),
        ),
    ),
    // installed-package repositories without their own `python` are those of the selected interpreter: they follow it
    // (indexed again from the new one), and the user may keep the old one instead
    interpreter.onDidChange(() => {
      const before = followed;
      followed = interpreter.current().path;
      reindexIfChanged();
      if (before !== followed) void offerToKeepInterpreter(before, followed);
    }),
  );
  // the settings may have changed while the server started (workspace settings can arrive after activation)
  reindexIfChanged();
  const session = new Session(context.workspaceState);
  const deps = {
    client,
    tree,
    interpreter,
    log,
    storage: context.globalStorageUri,
    treeView,
    dependencies,
    dependencyView,
    pulled,
    problems,
    indexChanged: statusChanged.event,
    session,
  };
  registerCommands(context, deps);
  registerLanguageModelTools(context, deps, context.globalStorageUri.fsPath);
  tickOnInterpreterChoice(context, interpreter, log);
  // the Get Started walkthrough (the interpreter first) opens once, on the first activation after install
  if (!context.globalState.get<boolean>('nnrag.walkthroughShown')) {
    await context.globalState.update('nnrag.walkthroughShown', true);
    void vscode.commands
      .executeCommand('workbench.action.openWalkthrough', `${context.extension.id}#nnrag.start`, false)
      .then(undefined, (err: unknown) => log.warn(`[activate] walkthrough: ${String(err)}`));
  }
  log.info('[activate] NN-RAG ready');
  return {
    status: () => status.current(),
    waitForStatus: (predicate) =>
      predicate(status.current())
        ? Promise.resolve(status.current())
        : new Promise((resolve) => {
            const sub = statusChanged.event((s) => {
              if (predicate(s)) {
                sub.dispose();
                resolve(s);
              }
            });
          }),
    request: (m, params) => client.request(m, params),
    interpreter: () => interpreter.current(),
    interpreterCandidates: () => interpreter.candidates(),
    lastError: () => session.lastErrorShown,
    pullQuestion: () => session.pullQuestion,
    settingScope: (key) => scopeInEffect(key).key,
    interpreterStatus: () => status.python(),
    typeInSearch: (text) => {
      if (!session.searchBox) return false;
      session.searchBox.value = text;
      return true;
    },
    searchOpen: () => session.searchBox !== undefined,
  };
}

export function deactivate(): void {
  // the language client is in context.subscriptions and stops with them
}

/**
 * The walkthrough's "Choose the interpreter" is done when one with torch is chosen in the picker, or was chosen for NN-RAG before:
 * its completion context key is set, and the step is marked done directly, as VS Code never ticks an `onContext` step
 * whose key was already true when the walkthrough registered.
 */
function tickOnInterpreterChoice(context: vscode.ExtensionContext, interpreter: InterpreterService, log: vscode.LogOutputChannel): void {
  const tick = (): void => {
    void vscode.commands.executeCommand('setContext', 'nnrag.interpreterChosen', true);
    void vscode.commands
      .executeCommand('welcome.markStepComplete', `${context.extension.id}#nnrag.start#interpreter`)
      .then(undefined, (err: unknown) => log.info(`[walkthrough] ${String(err)}`));
  };
  context.subscriptions.push(interpreter.onDidChoose(tick));
  // chosen before: done only when that interpreter has torch
  const before = setting('pythonPath');
  if (before)
    void interpreter.describe(before).then(
      (v) => v.torch && tick(),
      () => undefined,
    );
}
