/**
 * Pull into the workspace: one block (or several together) pulled and validated in a scratch folder, shown against
 * what is there in a diff to Accept or Cancel, written as one undoable edit; insert a block at the cursor; the
 * block's requirements.
 */
import { sentence } from '../core/base/text';
import { existsSync } from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { mergePyproject, mergeRequirements, requirementsText } from '../core/validate/requirements';
import { setting } from './config';
import type { PullReport } from '../core/pull/types';
import { EDITOR_BUILDER_BUDGET_S, GetPulledStatus, GetSandbox, PullBlock, PullTogether, WriteManifests } from '../shared/protocol';
import { snakeCase } from '../core/emit/moduleNames';
import { lacksTorch } from './interpreter';
import { reportVerdict, verdictWords } from '../core/pull/pulledState';
import { checkFileName, targetOf } from './ctx';
import type { Deps, Reg, Session } from './ctx';
import { searchQuickPick } from './searchCommands';

export function registerPullCommands(reg: Reg, deps: Deps): void {
  const { client } = deps;
  // the second argument (a file name) skips the file-name prompt; the result is the pull report. From the tree with
  // several blocks selected, VS Code passes the selection second: they are pulled together
  reg('nnrag.pullBlock', async (arg, fileName) => {
    if (Array.isArray(fileName)) {
      const targets = [...new Set(fileName.map(targetOf).filter((t): t is string => !!t))];
      if (targets.length > 1) return pullSeveral(deps, targets);
      fileName = undefined;
    }
    let target = targetOf(arg);
    if (!target) target = (await searchQuickPick(client, '', deps.indexChanged))?.target;
    if (!target) return undefined;
    return pullIntoWorkspace(deps, target, typeof fileName === 'string' ? fileName : undefined);
  });

  // a block pulled beside the file being edited (or where the user says), and its import inserted at the cursor
  reg('nnrag.insertBlockAtCursor', async (arg, fileName) => {
    const editor = vscode.window.activeTextEditor;
    const folder = editor && editor.document.uri.scheme === 'file' ? vscode.workspace.getWorkspaceFolder(editor.document.uri) : undefined;
    if (!editor || !folder || editor.document.languageId !== 'python')
      throw new Error(vscode.l10n.t('Open a Python file of the workspace first: the block is pulled beside it and imported at the cursor'));
    const target = targetOf(arg) ?? (await searchQuickPick(client, '', deps.indexChanged))?.target;
    if (!target) return undefined;
    const here = path.relative(folder.uri.fsPath, path.dirname(editor.document.uri.fsPath)).split(path.sep).join('/');
    const at = editor.selection.active;
    const report = await pullIntoWorkspace(deps, target, typeof fileName === 'string' ? `${here ? `${here}/` : ''}${fileName}` : undefined, {
      into: { folder, sub: here },
    });
    if (!report?.out) return report;
    const statement = importFrom(editor.document.uri.fsPath, report.out, target.split('.').pop() ?? '');
    // the editor that asked, at the line the cursor was on
    const doc = await vscode.workspace.openTextDocument(editor.document.uri);
    const shown = await vscode.window.showTextDocument(doc, editor.viewColumn);
    await shown.edit((b) => b.insert(new vscode.Position(at.line, 0), `${statement}\n`));
    return { ...report, inserted: statement };
  });
}

/**
 * Whether a block's code may run here: only in a trusted workspace, and in a weaker sandbox than bubblewrap's only when
 * the user agrees (once a session). Says why not when it may not.
 */
export async function mayRunCode({ client, log, session }: Pick<Deps, 'client' | 'log' | 'session'>, what: string, memoryMb: number): Promise<boolean> {
  if (!vscode.workspace.isTrusted) {
    const manage = vscode.l10n.t('Manage Workspace Trust');
    void vscode.window
      .showWarningMessage(vscode.l10n.t('{0}: validation runs its code, so it is off in an untrusted workspace.', what), manage)
      .then((pick) => pick === manage && vscode.commands.executeCommand('workbench.trust.manage'));
    return false;
  }
  const sandbox = await client.request(GetSandbox, { memoryMb });
  if (sandbox.weaker && !session.weakSandboxAccepted) {
    const run = vscode.l10n.t('Run Anyway');
    const pick = await vscode.window.showWarningMessage(
      vscode.l10n.t('{0}: validating runs its code, and this machine only has a weaker sandbox: {1}. Run it anyway?', what, sandbox.weaker),
      { modal: true },
      run,
    );
    if (pick !== run) {
      log.info(`[validate] ${what}: not validated (weaker sandbox declined: ${sandbox.weaker})`);
      return false;
    }
    session.weakSandboxAccepted = true;
  }
  return true;
}

/** A new folder in global storage where a pull is made and validated before the user sees it. */
async function newScratchDir(deps: Deps): Promise<vscode.Uri> {
  const dir = vscode.Uri.joinPath(deps.storage, 'preview', `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`);
  await vscode.workspace.fs.createDirectory(dir);
  return dir;
}

/** Where the workspace's memory keeps the folder pulls were last written to. */
const LAST_PULL_FOLDER = 'nnrag.lastPullFolder';

/** `models/conv.py` -> the folder and the file name (`/`-separated, relative to the workspace folder). */
export function splitDestination(v: string): { dir: string; base: string } {
  const parts = v.trim().replace(/\\/g, '/').split('/').filter(Boolean);
  return { dir: parts.slice(0, -1).join('/'), base: parts[parts.length - 1] ?? '' };
}

/** Why a folder (relative to the workspace folder) cannot hold a pull, if it cannot. */
export function folderProblem(dir: string): string | undefined {
  for (const seg of dir ? dir.split('/') : []) {
    if (seg === '..' || seg === '.' || !/^[\w.-]+$/.test(seg)) return vscode.l10n.t("'{0}' is not a folder inside the workspace", dir);
  }
  return undefined;
}

/** The workspace folder pulls go into, and `nnrag.pullFolder` inside it (never outside). */
function pullFolder(): { folder: vscode.WorkspaceFolder; sub: string } {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder) throw new Error(vscode.l10n.t('Open a folder first: pulled blocks are written into the workspace'));
  const sub = setting('pullFolder', folder.uri).replace(/^[\\/]+/, '');
  if (sub.split(/[\\/]/).includes('..')) throw new Error(vscode.l10n.t('nnrag.pullFolder must stay inside the workspace'));
  return { folder, sub };
}

/** Throws, saying why, when `existing` (the text at `dest`) is not a pull of NN-RAG left as it was pulled. */
async function refuseReplacing(client: Deps['client'], dest: vscode.Uri, existing: string, name: string): Promise<void> {
  const st = (await client.request(GetPulledStatus, { files: [{ uri: dest.toString(), text: existing }] }))[0];
  if (!st || st.edited) {
    throw new Error(
      st
        ? vscode.l10n.t(
            '{0} was edited since it was pulled: NN-RAG: Update Pulled Block keeps your edits (or turn on nnrag.pull.preview to replace it after a diff)',
            name,
          )
        : vscode.l10n.t('{0} exists and was not pulled by NN-RAG: choose another name (or turn on nnrag.pull.preview to replace it after a diff)', name),
    );
  }
}

/**
 * Pulls `target` into the workspace's pull folder. The block is pulled and validated (trusted workspaces only) in a
 * scratch file first; with `nnrag.pull.preview` the file is shown against what is there now in a diff editor, to
 * Accept or Cancel; the accepted text is written as one undoable edit, and nothing at all on Cancel. `confirmed`: the
 * user already agreed to this write (a language-model tool's confirmation), so the diff is not shown.
 */
export async function pullIntoWorkspace(
  deps: Deps,
  target: string,
  fileName?: string,
  { confirmed = false, into }: { confirmed?: boolean; into?: { folder: vscode.WorkspaceFolder; sub: string } } = {},
): Promise<PullReport | undefined> {
  const { client, interpreter, log } = deps;
  const configured = into ?? pullFolder();
  const folder = configured.folder;
  const className = target.split('.').pop() ?? 'block';
  // the name may carry a folder (`models/conv_block.py`), relative to the workspace folder
  const check = async (v: string): Promise<string | undefined> => {
    const { dir, base } = splitDestination(v);
    return (
      folderProblem(dir) ??
      checkFileName(base) ??
      ((await interpreter.hasModule(base.slice(0, -3))) ? vscode.l10n.t("'{0}' would shadow an installed module", base.slice(0, -3)) : undefined)
    );
  };
  // asked: the folder last chosen in this workspace (or the one given), then the file name
  const startIn = into?.sub ?? deps.session.memory.get<string>(LAST_PULL_FOLDER) ?? configured.sub;
  const typed =
    fileName === undefined
      ? await vscode.window.showInputBox({
          title: vscode.l10n.t('Pull {0}', target),
          // Insert at Cursor puts it beside the file being edited, and that folder is not remembered for the next pull
          prompt:
            into === undefined
              ? vscode.l10n.t('Where to write it, relative to the workspace folder (the folder is remembered for the next pull)')
              : vscode.l10n.t('Where to write it, relative to the workspace folder (beside the file you are editing)'),
          value: `${startIn ? `${startIn}/` : ''}${snakeCase(className)}.py`,
          valueSelection: startIn ? [startIn.length + 1, startIn.length + 1 + snakeCase(className).length] : undefined,
          validateInput: check,
        })
      : fileName.includes('/')
        ? fileName
        : `${configured.sub ? `${configured.sub}/` : ''}${fileName}`;
  if (!typed) return undefined;
  const refused = await check(typed);
  if (refused) throw new Error(refused);
  const { dir: sub, base: name } = splitDestination(typed);
  // remembered for the next pull, but not where Insert at Cursor put a block beside the file being edited
  if (fileName === undefined && into === undefined) await deps.session.memory.update(LAST_PULL_FOLDER, sub);
  const dest = vscode.Uri.joinPath(folder.uri, sub, name);
  const preview = !confirmed && setting('pull.preview', folder.uri);
  const existing = await readIfExists(dest);
  // without a diff to look at (or by a language-model tool), a file that holds something other than an untouched
  // pull is never replaced
  if (existing !== undefined && !preview) await refuseReplacing(client, dest, existing, name);

  // 1. pull into a scratch file, and validate it there with the selected interpreter (cancellable)
  const scratchDir = await newScratchDir(deps);
  const scratch = vscode.Uri.joinPath(scratchDir, name);
  try {
    const memoryMb = setting('validation.memoryMb', folder.uri);
    const wholeClasses = setting('pull.wholeClasses', folder.uri);
    const fullDocstrings = setting('pull.fullDocstrings', folder.uri);
    const inlineMetadata = setting('pull.inlineMetadata', folder.uri);
    // one pull, validated where code may run (a trusted workspace, a sandbox the user accepts)
    const python = (await mayRunCode(deps, vscode.l10n.t('Pulled {0}', className), memoryMb)) ? interpreter.current().path : undefined;
    let report = await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: python ? vscode.l10n.t('Validating {0} with {1}', className, python) : vscode.l10n.t('Pulling {0}', className),
        cancellable: true,
      },
      (_progress, token) =>
        client.request(
          PullBlock,
          {
            target,
            out: scratch.fsPath,
            python,
            validate: python !== undefined,
            timeoutSeconds: setting('validation.timeoutSeconds', folder.uri),
            memoryMb,
            allowWeakSandbox: deps.session.weakSandboxAccepted,
            wholeClasses,
            full: setting('pull.full', folder.uri),
            fullDocstrings,
            inlineMetadata,
            builderBudgetSeconds: EDITOR_BUILDER_BUDGET_S,
          },
          token,
        ),
    );

    // 2. what will be written, against what is there: Accept or Cancel
    const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(scratch));
    if (preview && !(await confirmInDiff(deps, text, dest, existing, report, className))) {
      log.info(`[pull] ${target}: cancelled in the diff; nothing written`);
      return undefined;
    }

    // 3. one edit: undo takes it back whole
    const edit = new vscode.WorkspaceEdit();
    await setFileText(edit, dest, text, existing !== undefined);
    if (!(await vscode.workspace.applyEdit(edit))) throw new Error(vscode.l10n.t('VS Code did not apply the edit to {0}', dest.fsPath));
    // the walkthrough's last step ticks once a block was pulled (after the diff closed, so it takes no picker's focus)
    void vscode.commands.executeCommand('setContext', 'nnrag.pulledBlock', true);
    const written = await vscode.workspace.openTextDocument(dest);
    await written.save();
    await vscode.window.showTextDocument(written);
    await client.request(WriteManifests, { file: dest.fsPath, report, text });
    // a failed validation is in the Problems panel, at the line it is about; a pass clears it
    if (report.status !== 'extracted')
      deps.problems.set(dest, text, { ok: report.status === 'validated', tier: report.tier, category: report.category, message: report.message }, className);
    // the report names the file written (not the scratch copy validated)
    report = { ...report, out: dest.fsPath };
    log.info(`[pull] ${report.target} -> ${dest.fsPath}: ${report.status} (tier ${report.tier ?? 'none'})`);
    const requirementsFile = vscode.Uri.joinPath(folder.uri, sub, name.replace(/\.py$/, '.requirements.txt'));
    // messages are not awaited: the command resolves with the report while the message waits for the user
    if (report.status === 'validated') {
      const req = vscode.l10n.t('Write Requirements');
      const copy = vscode.l10n.t('Copy Import Statement');
      const weaker = report.validation?.weakSandbox ? ` ${vscode.l10n.t('(weaker sandbox: {0})', report.validation.weakSandbox)}` : '';
      void vscode.window
        .showInformationMessage(`${vscode.l10n.t('{0} {1} ({2})', className, verdictWords(reportVerdict(report)), name)}${weaker}`, copy, req)
        .then(async (pick) => {
          if (pick === req) await writeRequirements(deps.session, report, requirementsFile);
          else if (pick === copy) await vscode.env.clipboard.writeText(importStatement(sub, name, className));
        });
    } else if (report.status === 'failed') {
      showFailure(deps, report, requirementsFile);
    }
    return report;
  } finally {
    await closeTabsOf(scratch);
    await vscode.workspace.fs.delete(scratchDir, { recursive: true, useTrash: false }).then(undefined, () => undefined);
  }
}

/**
 * Several blocks pulled together into the pull folder: each in its own file, what they share once in
 * `_nnrag_common.py`; validated (trusted workspaces) in a scratch folder, then, after Accept (with
 * `nnrag.pull.preview`), written as one undoable edit. Files holding edits or not pulled by NN-RAG are never replaced.
 */
export async function pullSeveral(deps: Deps, targets: string[]): Promise<{ reports: PullReport[]; files: string[]; shared?: string } | undefined> {
  const { client, interpreter, log } = deps;
  const { folder, sub } = pullFolder();
  const destDir = vscode.Uri.joinPath(folder.uri, sub);
  const scratchDir = await newScratchDir(deps);
  try {
    const memoryMb = setting('validation.memoryMb', folder.uri);
    const run = (await mayRunCode(deps, vscode.l10n.t('Pulling {0} blocks', targets.length), memoryMb)) ? interpreter.current().path : undefined;
    const result = await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: vscode.l10n.t('Pulling {0} blocks together{1}', targets.length, run ? vscode.l10n.t(', validating with {0}', run) : ''),
        cancellable: true,
      },
      (_p, token) =>
        client.request(
          PullTogether,
          {
            targets,
            dir: scratchDir.fsPath,
            dest: destDir.fsPath,
            python: run,
            validate: run !== undefined,
            timeoutSeconds: setting('validation.timeoutSeconds', folder.uri),
            memoryMb,
            allowWeakSandbox: deps.session.weakSandboxAccepted,
            wholeClasses: setting('pull.wholeClasses', folder.uri),
            full: setting('pull.full', folder.uri),
            fullDocstrings: setting('pull.fullDocstrings', folder.uri),
            inlineMetadata: setting('pull.inlineMetadata', folder.uri),
            builderBudgetSeconds: EDITOR_BUILDER_BUDGET_S,
          },
          token,
        ),
    );
    const written = [...result.files, ...(result.shared ? [result.shared.file] : [])];
    const dests = written.map((f) => vscode.Uri.joinPath(destDir, path.basename(f)));
    // never over a file of the user's: only untouched pulls (and our shared module, checked by the server) are replaced
    for (const [i, dest] of dests.entries()) {
      const existing = await readIfExists(dest);
      if (existing === undefined || i >= result.files.length) continue;
      const st = (await client.request(GetPulledStatus, { files: [{ uri: dest.toString(), text: existing }] }))[0];
      if (!st || st.edited)
        throw new Error(
          vscode.l10n.t('{0} holds your edits or was not pulled by NN-RAG: pull the blocks into another folder, or one by one', path.basename(dest.fsPath)),
        );
    }
    const names = dests.map((d) => path.basename(d.fsPath)).join(', ');
    const verdicts = result.reports.filter((r) => r.status === 'validated').length;
    const preview = setting('pull.preview', folder.uri);
    const failures = result.reports.filter((r) => r.status === 'failed').map((r) => `${r.target.split('.').pop()}: ${pullVerdict(r).short}`);
    if (
      preview &&
      !(await acceptOrCancel(
        deps.session,
        `${vscode.l10n.t('Pull {0} blocks into {1}/: {2} ({3} of {0} validated)', targets.length, sub, names, verdicts)}${failures.length ? `; ${failures.join('; ')}` : ''}`,
      ))
    ) {
      log.info(`[pull] ${targets.join(', ')}: cancelled; nothing written`);
      return undefined;
    }
    const edit = new vscode.WorkspaceEdit();
    const texts: string[] = [];
    for (const [i, dest] of dests.entries()) {
      const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.file(written[i])));
      texts.push(text);
      await setFileText(edit, dest, text, (await readIfExists(dest)) !== undefined);
    }
    if (!(await vscode.workspace.applyEdit(edit))) throw new Error(vscode.l10n.t('VS Code did not apply the edit to {0}', destDir.fsPath));
    void vscode.commands.executeCommand('setContext', 'nnrag.pulledBlock', true);
    for (const dest of dests) await (await vscode.workspace.openTextDocument(dest)).save();
    for (const [i, r] of result.reports.entries()) await client.request(WriteManifests, { file: dests[i].fsPath, report: r, text: texts[i] });
    await vscode.window.showTextDocument(dests[0]);
    log.info(
      `[pull] ${targets.length} blocks -> ${destDir.fsPath}: ${result.reports.map((r) => `${r.target} ${r.status}${r.tier ? ` (${r.tier})` : ''}`).join(', ')}`,
    );
    const failed = result.reports.filter((r) => r.status === 'failed');
    if (failed.length)
      void vscode.window.showWarningMessage(
        vscode.l10n.t(
          '{0} of {1} blocks did not validate: {2}',
          failed.length,
          targets.length,
          failed.map((r) => `${r.target.split('.').pop()} (${r.category})`).join(', '),
        ),
      );
    else
      void vscode.window.showInformationMessage(
        vscode.l10n.t(
          'Pulled {0} blocks into {1}/{2}',
          targets.length,
          sub,
          result.shared ? vscode.l10n.t('; {0} definitions they share are in {1}', result.shared.definitions, path.basename(result.shared.file)) : '',
        ),
      );
    return {
      reports: result.reports,
      files: dests.slice(0, result.files.length).map((d) => d.fsPath),
      shared: result.shared ? dests[dests.length - 1].fsPath : undefined,
    };
  } finally {
    await vscode.workspace.fs.delete(scratchDir, { recursive: true, useTrash: false }).then(undefined, () => undefined);
  }
}

/** Adds to `edit` what makes `dest` hold `text`: a new file, or the whole of the one there replaced. */
async function setFileText(edit: vscode.WorkspaceEdit, dest: vscode.Uri, text: string, exists: boolean): Promise<void> {
  if (!exists) {
    edit.createFile(dest, { ignoreIfExists: false });
    edit.insert(dest, new vscode.Position(0, 0), text);
  } else {
    const current = await vscode.workspace.openTextDocument(dest);
    edit.replace(dest, new vscode.Range(0, 0, current.lineCount, 0), text);
  }
}

/** `from blocks.residual_block import ResidualBlock`: how the workspace's code imports a pulled block. */
/**
 * The import of `className` from the pulled file `pulled`, for code in `from`: the module's name in the same folder
 * (relative, `from .conv_block import X`, when the folder is a package), else the dotted path from `from`'s folder.
 */
export function importFrom(from: string, pulled: string, className: string): string {
  const rel = path.relative(path.dirname(from), pulled).split(path.sep);
  const module = rel[rel.length - 1].replace(/\.py$/, '');
  if (rel.length === 1) return `from ${existsSync(path.join(path.dirname(from), '__init__.py')) ? '.' : ''}${module} import ${className}`;
  if (rel.some((p) => p === '..')) {
    // above the file's folder: a relative import of the package, written as far as it goes
    return `from ${'.'.repeat(rel.filter((p) => p === '..').length + 1)}${rel
      .filter((p) => p !== '..')
      .slice(0, -1)
      .concat(module)
      .join('.')} import ${className}`;
  }
  return `from ${[...rel.slice(0, -1), module].join('.')} import ${className}`;
}

/** The import of a pulled file's block from code at the workspace folder's top (its path as a dotted module). */
export function importFromWorkspace(file: vscode.Uri, className: string): string {
  const folder = vscode.workspace.getWorkspaceFolder(file);
  const rel = folder ? path.relative(folder.uri.fsPath, file.fsPath) : path.basename(file.fsPath);
  const dir = path.dirname(rel);
  return importStatement(dir === '.' ? '' : dir, path.basename(rel), className);
}

export function importStatement(sub: string, fileName: string, className: string): string {
  const parts = [...sub.split(/[\\/]/).filter(Boolean), fileName.replace(/\.py$/, '')];
  return `from ${parts.join('.')} import ${className}`;
}

async function readIfExists(uri: vscode.Uri): Promise<string | undefined> {
  const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  if (open) return open.getText();
  try {
    return new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
  } catch {
    return undefined;
  }
}

/** Closes the editors (diffs included) that show `uri`. */
async function closeTabsOf(uri: vscode.Uri): Promise<void> {
  const key = uri.toString();
  const tabs = vscode.window.tabGroups.all
    .flatMap((g) => g.tabs)
    .filter((t) => {
      const input = t.input;
      if (input instanceof vscode.TabInputTextDiff) return input.modified.toString() === key || input.original.toString() === key;
      return input instanceof vscode.TabInputText && input.uri.toString() === key;
    });
  if (tabs.length) await vscode.window.tabGroups.close(tabs).then(undefined, () => undefined);
}

/**
 * Waits for Accept or Cancel of the pull that `question` describes: the notification that asks (its Accept and Cancel
 * buttons), or the Accept / Cancel Pull commands (the diff editor's title bar, their keybindings). Closing the diff
 * (`diff`: its right side) cancels: nothing is written unseen. `show` opens what the user judges by.
 */
async function acceptOrCancel(session: Session, question: string, show?: () => Thenable<unknown>, diff?: vscode.Uri): Promise<boolean> {
  const { answer, settle } = session.waitForPull();
  await vscode.commands.executeCommand('setContext', 'nnrag.pullPending', true);
  // the question is a notification that lasts exactly as long as the pull waits (a message with buttons cannot be
  // closed by the extension: it stayed after Accept, its buttons then doing nothing); Accept and Cancel are also
  // status bar items, gone with it
  const items = pendingPullItems();
  void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: question, cancellable: true }, (_progress, token) => {
    const cancelled = token.onCancellationRequested(() => settle(false));
    return answer.finally(() => cancelled.dispose());
  });
  session.pullQuestion = question;
  const closed =
    diff &&
    vscode.window.tabGroups.onDidChangeTabs((e) => {
      if (e.closed.some((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.toString() === diff.toString())) settle(false);
    });
  try {
    if (show) await show();
    return await answer;
  } finally {
    closed?.dispose();
    items.dispose();
    session.pullQuestion = undefined;
  }
}

/** The status bar's Accept and Cancel of the pull that waits (the diff's title bar and Ctrl+Alt+Enter do the same). */
function pendingPullItems(): vscode.Disposable {
  const accept = vscode.window.createStatusBarItem('nnrag.acceptPull', vscode.StatusBarAlignment.Left, 1000);
  accept.name = vscode.l10n.t('NN-RAG: Accept Pull');
  accept.text = `$(check) ${vscode.l10n.t('Accept Pull')}`;
  accept.tooltip = vscode.l10n.t('Write the pulled block shown in the diff (Ctrl+Alt+Enter)');
  accept.command = 'nnrag.acceptPull';
  accept.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
  const cancel = vscode.window.createStatusBarItem('nnrag.cancelPull', vscode.StatusBarAlignment.Left, 999);
  cancel.name = vscode.l10n.t('NN-RAG: Cancel Pull');
  cancel.text = `$(close) ${vscode.l10n.t('Cancel')}`;
  cancel.tooltip = vscode.l10n.t('Write nothing (Ctrl+Alt+Backspace)');
  cancel.command = 'nnrag.cancelPull';
  accept.show();
  cancel.show();
  return vscode.Disposable.from(accept, cancel);
}

/** The verdict a pull diff shows before Accept: the tier, or why it failed (category and message). */
export function pullVerdict(report: PullReport): { short: string; detail: string } {
  // the words every other place shows for a verdict (CodeLens, views, tree, search)
  const short = verdictWords(reportVerdict(report));
  if (report.status !== 'failed') return { short, detail: '' };
  // a sentence of its own, cut at a word's end: the action text that follows it stays apart
  return { short, detail: sentence(`${short}: ${(report.message ?? '').split('\n')[0]}`, 300) };
}

/** The read-only right side of a pull's diff: the text Accept writes, by URI (`PREVIEW_SCHEME`). */
export const previewTexts = new Map<string, string>();
export const PREVIEW_SCHEME = 'nnrag-pull-preview';

/**
 * Shows the pulled text against the destination (empty for a new file) and waits for Accept or Cancel. The right side
 * is read-only: what is shown is what Accept writes (keys typed into an editable scratch file changed it unseen).
 */
async function confirmInDiff(
  deps: Deps,
  text: string,
  dest: vscode.Uri,
  existing: string | undefined,
  report: PullReport,
  className: string,
): Promise<boolean> {
  const left = existing === undefined ? vscode.Uri.from({ scheme: EMPTY_SCHEME, path: dest.path }) : dest;
  const right = vscode.Uri.from({ scheme: PREVIEW_SCHEME, path: dest.path, query: String(Date.now()) });
  previewTexts.set(right.toString(), text);
  try {
    return await confirmPreview(deps, left, right, dest, existing, report, className);
  } finally {
    await closeTabsOf(right);
    previewTexts.delete(right.toString());
  }
}

async function confirmPreview(
  deps: Deps,
  left: vscode.Uri,
  scratch: vscode.Uri,
  dest: vscode.Uri,
  existing: string | undefined,
  report: PullReport,
  className: string,
): Promise<boolean> {
  const verdict = pullVerdict(report);
  const title =
    existing === undefined
      ? vscode.l10n.t('Pull {0} into {1} (new file, {2})', className, path.basename(dest.fsPath), verdict.short)
      : vscode.l10n.t('Pull {0} into {1} (replaces it, {2})', className, path.basename(dest.fsPath), verdict.short);
  const st = existing === undefined ? undefined : (await deps.client.request(GetPulledStatus, { files: [{ uri: dest.toString(), text: existing }] }))[0];
  const warning =
    existing === undefined
      ? ''
      : !st
        ? ` ${vscode.l10n.t('{0} was not pulled by NN-RAG; Accept replaces it.', path.basename(dest.fsPath))}`
        : st.edited
          ? ` ${vscode.l10n.t('It holds your edits; Accept replaces them (Update keeps them).')}`
          : '';
  const how = vscode.l10n.t("Accept or Cancel in the diff's title bar or the status bar; Cancel here writes nothing.");
  return acceptOrCancel(
    deps.session,
    `${title}.${verdict.detail ? ` ${verdict.detail}` : ''}${warning} ${how}`,
    () => vscode.commands.executeCommand('vscode.diff', left, scratch, title, { preview: false }),
    scratch,
  );
}

/** The empty left side of a new file's diff. */
export const EMPTY_SCHEME = 'nnrag-empty';

/**
 * Writes the pulled file's requirements (PEP 440 specifiers that pip installs): merged into the project's
 * `requirements.txt` or `pyproject.toml` (a distribution it names keeps your entry), or into a file beside the block,
 * as the user chose the first time in this workspace. Opens what it wrote.
 */
export async function writeRequirements(session: Session, report: Pick<PullReport, 'requirements' | 'imports'>, perBlock: vscode.Uri): Promise<void> {
  const project = vscode.workspace.getWorkspaceFolder(perBlock)?.uri ?? vscode.workspace.workspaceFolders?.[0]?.uri;
  const pyproject = project && vscode.Uri.joinPath(project, 'pyproject.toml');
  let where = session.memory.get<string>(REQUIREMENTS_CHOICE);
  if (!where && project) {
    const hasPyproject = pyproject !== undefined && (await readIfExists(pyproject)) !== undefined;
    const pick = await vscode.window.showQuickPick(
      [
        ...(hasPyproject
          ? [
              {
                label: vscode.l10n.t("Add to the project's pyproject.toml"),
                value: 'pyproject',
                description: vscode.l10n.t('[project] dependencies; entries already there are kept'),
              },
            ]
          : []),
        {
          label: vscode.l10n.t("Add to the project's requirements.txt"),
          value: 'project',
          description: vscode.l10n.t('distributions already there keep your line'),
        },
        { label: vscode.l10n.t('A requirements file beside each block'), value: 'beside', description: path.basename(perBlock.fsPath) },
      ],
      { title: vscode.l10n.t('Where do pulled blocks write their requirements? (asked once in this workspace)') },
    );
    if (!pick) return;
    where = pick.value;
    await session.memory.update(REQUIREMENTS_CHOICE, where);
  }
  const adding = requirementsText(report.requirements, report.imports);
  const into = async (file: vscode.Uri, merged: { text: string; added: string[] }, existing: string | undefined): Promise<void> => {
    await refuseLink(file);
    if (merged.added.length && merged.text !== existing) await vscode.workspace.fs.writeFile(file, new TextEncoder().encode(merged.text));
    await vscode.window.showTextDocument(file);
    const name = path.basename(file.fsPath);
    void vscode.window.showInformationMessage(
      merged.added.length
        ? vscode.l10n.t('{0}: added {1}', name, merged.added.join(', '))
        : vscode.l10n.t('{0} already names everything {1} needs', name, path.basename(perBlock.fsPath)),
    );
  };
  if (where === 'pyproject' && pyproject) {
    const existing = await readIfExists(pyproject);
    const merged = existing === undefined ? { problem: vscode.l10n.t('the project has no pyproject.toml') } : mergePyproject(existing, adding);
    if (!('problem' in merged)) return into(pyproject, merged, existing);
    // nothing is lost: the block's own requirements file, and why the project's was not changed
    void vscode.window.showWarningMessage(vscode.l10n.t('{0}; the requirements are in {1} instead', merged.problem, path.basename(perBlock.fsPath)));
  } else if (where === 'project' && project) {
    const file = vscode.Uri.joinPath(project, 'requirements.txt');
    const existing = await readIfExists(file);
    return into(file, mergeRequirements(existing ?? '', adding), existing);
  }
  await refuseLink(perBlock);
  await vscode.workspace.fs.writeFile(perBlock, new TextEncoder().encode(adding));
  await vscode.window.showTextDocument(perBlock);
}

/** NN-RAG writes no file through a link (it would change the file the link points to, wherever that is). */
async function refuseLink(file: vscode.Uri): Promise<void> {
  const st = await vscode.workspace.fs.stat(file).then(
    (s) => s,
    () => undefined,
  );
  if (st && st.type & vscode.FileType.SymbolicLink) throw new Error(vscode.l10n.t('{0} is a symbolic link; NN-RAG never writes through one', file.fsPath));
}
const REQUIREMENTS_CHOICE = 'nnrag.requirementsChoice';

function showFailure({ log, session }: Pick<Deps, 'log' | 'session'>, report: PullReport, requirementsFile: vscode.Uri): void {
  log.warn(`[pull] ${report.target}: ${report.status} at tier ${report.tier ?? 'none'}: ${report.category}: ${report.message}`);
  const show = vscode.l10n.t('Show Log');
  // a package the interpreter lacks: what to install is one click away; without torch, another interpreter is
  const noTorch = lacksTorch(report);
  const req = report.category === 'missing-package' && !noTorch ? [vscode.l10n.t('Write Requirements')] : [];
  const select = noTorch ? [vscode.l10n.t('Select Interpreter')] : [];
  void vscode.window.showWarningMessage(`${report.target}: ${pullVerdict(report).detail}`, show, ...req, ...select).then(async (pick) => {
    if (pick === show) log.show();
    else if (pick && pick === req[0]) await writeRequirements(session, report, requirementsFile);
    else if (pick && pick === select[0]) await vscode.commands.executeCommand('nnrag.selectInterpreter');
  });
}
