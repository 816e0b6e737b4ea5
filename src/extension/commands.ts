/** The commands: search, pull into the workspace, open source, re-index, add a repository. */
import * as path from 'path';
import * as vscode from 'vscode';
import { requirementsText } from '../core/validate/requirements';
import { setting } from './config';
import type { DependencyTreeProvider } from './dependencyTree';
import { STDLIB } from '../core/emit/stdlib';
import type { PullReport } from '../core/pull/pull';
import type { SearchHit } from '../core/search/search';
import { repositoryNames } from '../core/sources/names';
import type { SourceConfig } from '../core/sources/types';
import { ExplainDependencies, GetSandbox, PullBlock, ReadSource, ReindexRepositories, SearchBlocks, SuggestSearch } from '../shared/protocol';
import type { TreeNode } from '../shared/protocol';
import type { BlockTreeProvider } from './blockTree';
import type { NnragClient } from './client';
import type { InterpreterService } from './interpreter';

/** Module names a pulled file must not shadow (besides the standard library). */
const PROTECTED = new Set(['torch', 'torchvision', 'torchaudio', 'numpy', 'timm', 'transformers', 'einops', 'scipy', 'PIL', 'mmcv', 'mmdet', 'mmengine']);

/** Why a file name cannot hold a pulled block, or undefined when it can. */
export function checkFileName(name: string): string | undefined {
  if (/[\\/]/.test(name) || name.includes('..')) return vscode.l10n.t('A file name only, without folders');
  if (!/^[A-Za-z_][A-Za-z0-9_]*\.py$/.test(name)) return vscode.l10n.t('Use a Python module name ending in .py (letters, digits, _)');
  const module = name.slice(0, -3);
  if (STDLIB.has(module) || PROTECTED.has(module)) return vscode.l10n.t("'{0}' would shadow the module of that name", module);
  return undefined;
}

export function snakeCase(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase();
}

export interface Deps {
  client: NnragClient;
  tree: BlockTreeProvider;
  interpreter: InterpreterService;
  log: vscode.LogOutputChannel;
  storage: vscode.Uri;
  treeView: vscode.TreeView<TreeNode>;
  dependencies: DependencyTreeProvider;
  dependencyView: vscode.TreeView<unknown>;
}

/** Every command goes through here: errors are logged with their stack and shown with a Show Log button. */
export function register(context: vscode.ExtensionContext, id: string, log: vscode.LogOutputChannel, fn: (...args: unknown[]) => unknown): void {
  context.subscriptions.push(
    vscode.commands.registerCommand(id, async (...args: unknown[]) => {
      try {
        return await fn(...args);
      } catch (err) {
        if (err instanceof vscode.CancellationError || (err as { code?: number })?.code === -32800) {
          log.info(`[command] ${id}: cancelled`);
          return undefined;
        }
        const message = err instanceof Error ? err.message : String(err);
        log.error(`[command] ${id}: ${err instanceof Error ? (err.stack ?? message) : message}`);
        const show = vscode.l10n.t('Show Log');
        // not awaited: the command ends now, the message stays until the user closes it
        void vscode.window.showErrorMessage(`NN-RAG: ${message}`, show).then((pick) => pick === show && log.show());
        return undefined;
      }
    }),
  );
}

function hitItem(h: SearchHit): vscode.QuickPickItem & { hit: SearchHit } {
  return {
    label: `$(symbol-class) ${h.name}`,
    description: `${h.repo} · ${h.category}${h.abstract ? ' · abstract' : ''}${h.copies ? ` · ${vscode.l10n.t('{0} copies in {1} repositories', h.copies.count, h.copies.repos)}` : ''}`,
    detail: `${h.path}:${h.line}  ${h.name}${h.signature || '()'}`,
    alwaysShow: true,
    hit: h,
  };
}

/** The search QuickPick, backed by the server; resolves with the chosen block. */
export function searchQuickPick(client: NnragClient, initial = ''): Promise<SearchHit | undefined> {
  return new Promise((resolve) => {
    type Item = vscode.QuickPickItem & { hit?: SearchHit; meant?: string };
    const qp = vscode.window.createQuickPick<Item>();
    qp.title = vscode.l10n.t('NN-RAG: Search Blocks');
    qp.placeholder = vscode.l10n.t('Name, words, docstring or signature (e.g. residual block, attention, ConvBN)');
    qp.matchOnDescription = false;
    qp.matchOnDetail = false;
    qp.value = initial;
    let seq = 0;
    let timer: NodeJS.Timeout | undefined;
    // Enter pressed while the server answers: the first result of that answer is taken
    let acceptPending = false;
    const done = (hit: SearchHit): void => {
      resolve(hit);
      qp.hide();
    };
    const update = (text: string): void => {
      const mine = ++seq;
      qp.busy = true;
      client.request(SearchBlocks, { text, limit: 50 }).then(
        async (hits) => {
          if (mine !== seq) return;
          if (hits.length === 0 && text.trim()) {
            const meant = await client.request(SuggestSearch, { text }).catch(() => ({ meant: undefined }));
            if (mine !== seq) return;
            qp.items = [
              meant.meant
                ? { label: `$(lightbulb) ${vscode.l10n.t('Did you mean "{0}"?', meant.meant)}`, detail: vscode.l10n.t('No block matches "{0}". Press Enter to search for "{1}".', text, meant.meant), alwaysShow: true, meant: meant.meant }
                : { label: `$(info) ${vscode.l10n.t('No block matches "{0}"', text)}`, detail: vscode.l10n.t('Try other words, an abbreviation (attn, bn, FPN) or part of a class name; NN-RAG: Add Repository indexes more code.'), alwaysShow: true },
            ];
          } else {
            qp.items = hits.map(hitItem);
          }
          qp.busy = false;
          if (acceptPending && hits[0]) done(hits[0]);
          acceptPending = false;
        },
        () => {
          if (mine === seq) qp.busy = false;
        },
      );
    };
    qp.onDidChangeValue((v) => {
      if (timer) clearTimeout(timer);
      // nothing stale: the results of the text before are gone as soon as the text changes
      qp.items = [];
      qp.busy = true;
      acceptPending = false;
      timer = setTimeout(() => update(v), 60);
    });
    qp.onDidAccept(() => {
      const item = qp.selectedItems[0] ?? qp.activeItems[0];
      if (item?.meant) {
        qp.value = item.meant;
        if (timer) clearTimeout(timer);
        update(item.meant);
        return;
      }
      if (qp.busy || !item) {
        acceptPending = qp.busy;
        return;
      }
      if (item.hit) done(item.hit);
    });
    qp.onDidHide(() => {
      resolve(undefined);
      qp.dispose();
    });
    update(initial);
    qp.show();
  });
}

function targetOf(arg: unknown): string | undefined {
  if (typeof arg === 'string') return arg;
  const node = arg as TreeNode | undefined;
  return node?.hit?.target;
}

export function registerCommands(context: vscode.ExtensionContext, deps: Deps): void {
  const { client, tree, interpreter, log } = deps;
  const reg = (id: string, fn: (...args: unknown[]) => unknown): void => register(context, id, log, fn);

  // resolves with the chosen block and what was done with it (the integration tests read it)
  reg('nnrag.searchBlocks', async (initial) => {
    const hit = await searchQuickPick(client, typeof initial === 'string' ? initial : tree.activeQuery);
    if (!hit) return undefined;
    const pull = vscode.l10n.t('Pull into Workspace');
    const open = vscode.l10n.t('Open Source');
    const deps_ = vscode.l10n.t('Show Dependencies');
    const filter = vscode.l10n.t('Show in Tree');
    const choice = await vscode.window.showQuickPick([pull, open, deps_, filter], { title: hit.target });
    let result: unknown;
    if (choice === pull) result = await vscode.commands.executeCommand('nnrag.pullBlock', hit.target);
    else if (choice === open) await vscode.commands.executeCommand('nnrag.openSource', hit.target);
    else if (choice === deps_) await vscode.commands.executeCommand('nnrag.showDependencies', hit.target);
    else if (choice === filter) {
      tree.setQuery(hit.name);
      deps.treeView.description = vscode.l10n.t('search: {0}', hit.name);
    }
    return { target: hit.target, action: choice, result };
  });

  reg('nnrag.clearSearch', () => {
    tree.setQuery('');
    deps.treeView.description = undefined;
  });

  reg('nnrag.copyTarget', async (arg) => {
    const target = targetOf(arg);
    if (target) await vscode.env.clipboard.writeText(target);
  });

  reg('nnrag.openSource', async (arg) => {
    const target = targetOf(arg);
    if (!target) return;
    const src = await client.request(ReadSource, { target });
    const uri = vscode.Uri.from({ scheme: 'nnrag-source', path: `/${src.repo}/${src.path}`, query: target });
    const doc = await vscode.workspace.openTextDocument(uri);
    const editor = await vscode.window.showTextDocument(await vscode.languages.setTextDocumentLanguage(doc, 'python'));
    const pos = new vscode.Position(Math.max(0, src.line - 1), 0);
    editor.selection = new vscode.Selection(pos, pos);
    editor.revealRange(new vscode.Range(pos, pos), vscode.TextEditorRevealType.AtTop);
  });

  reg('nnrag.reindex', async () => {
    const repositories = setting('repositories');
    const status = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('NN-RAG: re-indexing {0} repositories', repositories.length), cancellable: true },
      (_progress, token) => client.request(ReindexRepositories, { repositories }, token),
    );
    tree.refresh();
    return status;
  });

  reg('nnrag.showLog', () => log.show());
  reg('nnrag.selectInterpreter', () => interpreter.pick());

  // an entry as the argument (a SourceConfig) skips the prompts
  reg('nnrag.addRepository', async (given) => {
    if (given && typeof given === 'object' && typeof (given as SourceConfig).location === 'string') return addRepository(given as SourceConfig);
    const kinds = [
      { label: vscode.l10n.t('Git URL'), source: 'git' as const },
      { label: vscode.l10n.t('Local folder'), source: 'folder' as const },
      { label: vscode.l10n.t('Installed package'), source: 'python-env' as const },
    ];
    const kind = await vscode.window.showQuickPick(kinds, { title: vscode.l10n.t('Add a repository to index') });
    if (!kind) return;
    let entry: SourceConfig | undefined;
    if (kind.source === 'folder') {
      const picked = await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, openLabel: vscode.l10n.t('Index this folder') });
      if (picked?.[0]) entry = { location: picked[0].fsPath, kind: 'folder' };
    } else if (kind.source === 'git') {
      const url = await vscode.window.showInputBox({
        prompt: vscode.l10n.t('http(s) URL of a git repository'),
        placeHolder: 'https://github.com/owner/repo.git',
        validateInput: (v) => (/^https?:\/\/[^\s@]+$/.test(v.trim()) ? undefined : vscode.l10n.t('An http:// or https:// URL, without credentials')),
      });
      if (url) entry = { location: url.trim(), kind: 'git' };
    } else {
      const pkgs = await vscode.window.showInputBox({ prompt: vscode.l10n.t('Installed packages, comma-separated'), value: 'torchvision' });
      if (pkgs) entry = { location: pkgs.trim(), kind: 'python-env' };
    }
    if (!entry) return;
    return addRepository(entry);
  });

  // a repository node of the tree (or a name): indexed again alone (changed files only), the others left as they are
  reg('nnrag.reindexRepository', async (arg) => {
    const name = typeof arg === 'string' ? arg : (arg as TreeNode | undefined)?.kind === 'repo' ? (arg as TreeNode).repo : undefined;
    if (!name) return undefined;
    const status = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('NN-RAG: re-indexing {0}', name), cancellable: true },
      (_progress, token) => client.request(ReindexRepositories, { only: name }, token),
    );
    tree.refresh();
    return status;
  });

  // a repository node of the tree (or a name): out of the settings where it is defined, and so out of the index
  reg('nnrag.removeRepository', async (arg) => {
    const name = typeof arg === 'string' ? arg : (arg as TreeNode | undefined)?.kind === 'repo' ? (arg as TreeNode).repo : undefined;
    if (!name) return undefined;
    const { key, list, target } = repositoriesInEffect();
    const kept = list.filter((r) => !repositoryNames(r).includes(name));
    if (kept.length === list.length) {
      void vscode.window.showWarningMessage(vscode.l10n.t('{0} is not in nnrag.repositories ({1}): it comes from another settings scope or is being removed already', name, key));
      return undefined;
    }
    await vscode.workspace.getConfiguration('nnrag').update('repositories', kept, target);
    void vscode.window.showInformationMessage(vscode.l10n.t('Removed {0} from nnrag.repositories in the {1} settings', name, key));
    return key;
  });

  // the second argument (a file name) skips the file-name prompt; the result is the pull report
  reg('nnrag.pullBlock', async (arg, fileName) => {
    let target = targetOf(arg);
    if (!target) target = (await searchQuickPick(client))?.target;
    if (!target) return undefined;
    return pullIntoWorkspace(deps, target, typeof fileName === 'string' ? fileName : undefined);
  });

  // what a pull would bring with the block, as a tree in the Dependencies view (nothing is written or run)
  reg('nnrag.showDependencies', async (arg) => {
    const target = targetOf(arg) ?? (await searchQuickPick(client))?.target;
    if (!target) return undefined;
    const explained = await vscode.window.withProgress({ location: { viewId: 'nnrag.dependencies' } }, () =>
      client.request(ExplainDependencies, { target, python: interpreter.current().path }),
    );
    const root = deps.dependencies.show(explained.target, explained.sizes, explained.graph);
    deps.dependencyView.description = explained.target.replace(/^[^:]*:/, '');
    if (root) await deps.dependencyView.reveal(root, { focus: true, expand: true });
    return explained;
  });
}

/**
 * Where `nnrag.repositories` takes its value from now: the folder's, the workspace's (when the workspace is trusted:
 * an untrusted one's value is ignored) or the user's settings. An addition goes there, so it takes effect.
 */
function repositoriesInEffect(): { key: string; list: SourceConfig[]; target: vscode.ConfigurationTarget } {
  const where = vscode.workspace.getConfiguration('nnrag').inspect<SourceConfig[]>('repositories');
  if (vscode.workspace.isTrusted && where?.workspaceFolderValue !== undefined) return { key: vscode.l10n.t('folder'), list: where.workspaceFolderValue, target: vscode.ConfigurationTarget.WorkspaceFolder };
  if (vscode.workspace.isTrusted && where?.workspaceValue !== undefined) return { key: vscode.l10n.t('workspace'), list: where.workspaceValue, target: vscode.ConfigurationTarget.Workspace };
  return { key: vscode.l10n.t('user'), list: where?.globalValue ?? [], target: vscode.ConfigurationTarget.Global };
}

async function addRepository(entry: SourceConfig): Promise<string> {
  const { key, list, target } = repositoriesInEffect();
  await vscode.workspace.getConfiguration('nnrag').update('repositories', [...list, entry], target);
  void vscode.window.showInformationMessage(vscode.l10n.t('Added {0} to nnrag.repositories in the {1} settings', entry.name ?? entry.location, key));
  return key;
}

/** The user agreed, this session, to validate in a weaker sandbox than bubblewrap's. */
let weakSandboxAccepted = false;

/**
 * Pulls `target` into the workspace's pull folder, then validates it (trusted workspaces only). `confirmed`: the user
 * already agreed to this write (a language-model tool's confirmation), so the preview is not shown again.
 */
export async function pullIntoWorkspace(deps: Deps, target: string, fileName?: string, { confirmed = false } = {}): Promise<PullReport | undefined> {
  const { client, interpreter, log } = deps;
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder) throw new Error(vscode.l10n.t('Open a folder first: pulled blocks are written into the workspace'));
  const sub = setting('pullFolder', folder.uri).replace(/^[\\/]+/, '');
  if (sub.split(/[\\/]/).includes('..')) throw new Error(vscode.l10n.t('nnrag.pullFolder must stay inside the workspace'));
  const className = target.split('.').pop() ?? 'block';
  const check = async (v: string): Promise<string | undefined> =>
    checkFileName(v) ?? ((await interpreter.hasModule(v.slice(0, -3))) ? vscode.l10n.t("'{0}' would shadow an installed module", v.slice(0, -3)) : undefined);
  const name =
    fileName ??
    (await vscode.window.showInputBox({
      title: vscode.l10n.t('Pull {0}', target),
      prompt: vscode.l10n.t('File name in {0}/', sub),
      value: `${snakeCase(className)}.py`,
      validateInput: check,
    }));
  if (!name) return undefined;
  const refused = await check(name);
  if (refused) throw new Error(refused);
  const dest = vscode.Uri.joinPath(folder.uri, sub, name);

  // 1. extract into a scratch file and show it as a confirmable workspace edit (preview, undo)
  const scratch = vscode.Uri.joinPath(deps.storage, 'preview', name);
  await vscode.workspace.fs.createDirectory(vscode.Uri.joinPath(deps.storage, 'preview'));
  const preview = await client.request(PullBlock, { target, out: scratch.fsPath, validate: false, timeoutSeconds: 0, memoryMb: 0, wholeClasses: setting('pull.wholeClasses', folder.uri) });
  const code = new TextDecoder().decode(await vscode.workspace.fs.readFile(scratch));
  const edit = new vscode.WorkspaceEdit();
  const meta = { needsConfirmation: !confirmed && setting('pull.preview', folder.uri), label: vscode.l10n.t('Pull {0}', className), description: `${preview.definitions} definitions` };
  edit.createFile(dest, { overwrite: true }, meta);
  edit.insert(dest, new vscode.Position(0, 0), code, meta);
  if (!(await vscode.workspace.applyEdit(edit))) {
    log.info(`[pull] ${target}: the edit was not applied (discarded in the preview)`);
    return undefined;
  }
  const doc = await vscode.workspace.openTextDocument(dest);
  await doc.save();
  await vscode.window.showTextDocument(doc);
  if (preview.status === 'failed') {
    showFailure(log, preview, vscode.Uri.joinPath(folder.uri, sub, name.replace(/\.py$/, '.requirements.txt')));
    return preview;
  }

  // 2. validate with the selected interpreter, in a cancellable notification
  if (!vscode.workspace.isTrusted) {
    const manage = vscode.l10n.t('Manage Workspace Trust');
    void vscode.window
      .showWarningMessage(vscode.l10n.t('Pulled {0}. Validation runs its code, so it is off in an untrusted workspace.', className), manage)
      .then((pick) => pick === manage && vscode.commands.executeCommand('workbench.trust.manage'));
    return preview;
  }
  const memoryMb = setting('validation.memoryMb', folder.uri);
  const sandbox = await client.request(GetSandbox, { memoryMb });
  if (sandbox.weaker && !weakSandboxAccepted) {
    const run = vscode.l10n.t('Run Anyway');
    const pick = await vscode.window.showWarningMessage(
      vscode.l10n.t('Pulled {0}. Validating runs its code, and this machine only has a weaker sandbox: {1}. Run it anyway?', className, sandbox.weaker),
      { modal: true },
      run,
    );
    if (pick !== run) {
      log.info(`[pull] ${target}: not validated (weaker sandbox declined: ${sandbox.weaker})`);
      return preview;
    }
    weakSandboxAccepted = true;
  }
  const python = interpreter.current().path;
  const report = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('Validating {0} with {1}', className, python), cancellable: true },
    (_progress, token) =>
      client.request(
        PullBlock,
        {
          target,
          out: dest.fsPath,
          python,
          validate: true,
          timeoutSeconds: setting('validation.timeoutSeconds', folder.uri),
          memoryMb,
          allowWeakSandbox: weakSandboxAccepted,
          wholeClasses: setting('pull.wholeClasses', folder.uri),
        },
        token,
      ),
  );
  log.info(`[pull] ${report.target} -> ${dest.fsPath}: ${report.status} (tier ${report.tier ?? 'none'})`);
  // messages are not awaited: the command resolves with the report while the message waits for the user
  if (report.status === 'validated') {
    const req = vscode.l10n.t('Write Requirements');
    const weaker = report.validation?.weakSandbox ? ` ${vscode.l10n.t('(weaker sandbox: {0})', report.validation.weakSandbox)}` : '';
    void vscode.window.showInformationMessage(`${vscode.l10n.t('{0} validated: tier {1} ({2})', className, report.tier ?? '', path.basename(dest.fsPath))}${weaker}`, req).then(async (pick) => {
      if (pick === req) await writeRequirements(report, vscode.Uri.joinPath(folder.uri, sub, name.replace(/\.py$/, '.requirements.txt')));
    });
  } else {
    showFailure(log, report, vscode.Uri.joinPath(folder.uri, sub, name.replace(/\.py$/, '.requirements.txt')));
  }
  return report;
}

/** Writes the pulled file's requirements (PEP 440 specifiers that pip installs) and opens them. */
async function writeRequirements(report: PullReport, file: vscode.Uri): Promise<void> {
  await vscode.workspace.fs.writeFile(file, new TextEncoder().encode(requirementsText(report.requirements, report.imports)));
  await vscode.window.showTextDocument(file);
}

function showFailure(log: vscode.LogOutputChannel, report: PullReport, requirementsFile: vscode.Uri): void {
  log.warn(`[pull] ${report.target}: ${report.status} at tier ${report.tier ?? 'none'}: ${report.category}: ${report.message}`);
  const show = vscode.l10n.t('Show Log');
  // a package the interpreter lacks: what to install is one click away
  const req = report.category === 'missing-package' ? [vscode.l10n.t('Write Requirements')] : [];
  void vscode.window
    .showWarningMessage(vscode.l10n.t('{0} did not validate (tier {1}): {2}: {3}', report.target, report.tier ?? 'none', report.category ?? '', report.message ?? ''), show, ...req)
    .then(async (pick) => {
      if (pick === show) log.show();
      else if (pick && pick === req[0]) await writeRequirements(report, requirementsFile);
    });
}
