/**
 * Pulled files in the workspace: the Pulled Blocks view (each file's state), and Compare with Upstream, Update and
 * Validate on one of them. An update is applied as one undoable edit of the open document; conflicts stay as
 * markers, which VS Code's merge-conflict actions resolve.
 */
import { createHash } from 'crypto';
import * as path from 'path';
import * as vscode from 'vscode';
import type { Requirement, ValidationReport } from '../core/validate/runner';
import { GetProvenance, GetPulledStatus, PlanUpdate, ValidatePulled, WriteManifests } from '../shared/protocol';
import type { NnragClient } from './client';
import { setting } from './config';
import { reportVerdict, tierRank, verdictWords } from '../core/pull/pulledState';
import { firstLine } from '../core/base/text';
import type { ValidationProblems } from './problems';
import { importFromWorkspace, mayRunCode, writeRequirements } from './pullIntoWorkspace';
import { hasHeader, type PulledBlocksProvider, type PulledItem } from './pulledView';
import type { Deps, Reg } from './ctx';
import { lacksTorch } from './interpreter';
import type { Provenance } from '../core/emit/pulledFile';
import { RECORDS_FOLDER, type RequiredRepos } from '../core/emit/manifest';

/** The document of a command's argument: a view item, a URI (string or Uri) or, without one, the active editor's. */
async function documentOf(arg: unknown): Promise<vscode.TextDocument> {
  const given = (arg as PulledItem | undefined)?.uri ?? arg;
  let uri = typeof given === 'string' ? vscode.Uri.parse(given) : given instanceof vscode.Uri ? given : vscode.window.activeTextEditor?.document.uri;
  if (!uri) throw new Error(vscode.l10n.t('Open a pulled file first'));
  // a side of Compare with Upstream (its title bar's Update): the pulled file it shows
  if (uri.scheme === UPSTREAM_SCHEME) uri = vscode.Uri.file(uri.path);
  const doc = await vscode.workspace.openTextDocument(uri);
  if (!hasHeader(doc.getText()))
    throw new Error(
      vscode.l10n.t('{0} was not pulled by NN-RAG (it has no provenance header): Compare, Update and Validate work on pulled files', path.basename(uri.fsPath)),
    );
  return doc;
}

/** Texts shown on the right of a Compare with Upstream (what a pull gives today). */
export const UPSTREAM_SCHEME = 'nnrag-upstream';

/** Replaces the document's whole text with `text` (one undoable edit) and saves it. */
async function replaceAll(doc: vscode.TextDocument, text: string): Promise<void> {
  const edit = new vscode.WorkspaceEdit();
  edit.replace(doc.uri, new vscode.Range(0, 0, doc.lineCount, 0), text);
  if (!(await vscode.workspace.applyEdit(edit))) throw new Error(vscode.l10n.t('VS Code did not apply the edit to {0}', path.basename(doc.uri.fsPath)));
  await doc.save();
}

/** Validates `text` as the document's next content (where code may run); the text with the verdict in its header. */
async function validateAsNext(deps: Deps, doc: vscode.TextDocument, text: string): Promise<{ validation: ValidationReport; text: string } | undefined> {
  const { client, interpreter, log, session } = deps;
  const name = path.basename(doc.uri.fsPath);
  const folder = vscode.workspace.getWorkspaceFolder(doc.uri)?.uri;
  const memoryMb = setting('validation.memoryMb', folder);
  if (!(await mayRunCode(deps, name, memoryMb))) return undefined;
  const python = interpreter.current().path;
  const r = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('Validating {0} with {1}', name, python), cancellable: true },
    (_p, token) =>
      client.request(
        ValidatePulled,
        {
          file: doc.uri.fsPath,
          text,
          python,
          timeoutSeconds: setting('validation.timeoutSeconds', folder),
          memoryMb,
          allowWeakSandbox: session.weakSandboxAccepted,
        },
        token,
      ),
  );
  const v = r.validation;
  log.info(`[validate] ${doc.uri.fsPath}: ${v.ok ? 'passed' : 'failed'} (tier ${v.tier ?? 'none'})${v.category ? ` ${v.category}: ${v.message}` : ''}`);
  // an interpreter without torch says nothing about the file: its verdict is not recorded over the one it has
  if (lacksTorch(v)) {
    const select = vscode.l10n.t('Select Interpreter');
    void vscode.window
      .showWarningMessage(vscode.l10n.t('{0} was not validated: {1} has no torch. Its recorded verdict is kept.', name, python), select)
      .then((pick) => pick === select && vscode.commands.executeCommand('nnrag.selectInterpreter'));
    return undefined;
  }
  deps.problems.set(doc.uri, r.text, v, v.class ?? undefined);
  // a lower tier than the header recorded says why (an update or an edit that is no longer compared, or differs)
  const before = (await client.request(GetProvenance, { text: doc.getText() }))?.validation;
  // the reasons go with the new verdict; the old one is said on its own ("It was validated: equivalent before.")
  const lower = before && tierRank(v.tier) < tierRank(before.tier) ? ` ${vscode.l10n.t('It was {0} before.', verdictWords(before))}` : '';
  const words = verdictWords(reportVerdict(v));
  const why = v.ok ? (v.equivalence?.reason ?? v.equivalence?.differences?.[0]) : v.message;
  const reason = `${name}: ${words}${why ? `: ${firstLine(why)}` : '.'}`;
  // (a reason that ends in a parenthesis is a sentence only with its full stop, before the next one)
  const said = `${lower && !/[.!?…]$/.test(reason) ? `${reason}.` : reason}${lower}`;
  if (v.ok && !lower) void vscode.window.showInformationMessage(said);
  else void vscode.window.showWarningMessage(said);
  return r;
}

/**
 * One truth for a pulled file's verdict, its header: an edit makes it stale at once in the view and the Problems panel
 * (the CodeLens reads the same status), and an opened file (after a reload too) shows what its header says.
 */
function followPulledDocuments(context: vscode.ExtensionContext, deps: Deps): void {
  const { client, pulled: provider, log } = deps;
  const pending = new Map<string, NodeJS.Timeout>();
  const follow = (doc: vscode.TextDocument): void => {
    if (doc.uri.scheme !== 'file' || doc.languageId !== 'python' || !hasHeader(doc.getText())) return;
    const key = doc.uri.toString();
    clearTimeout(pending.get(key));
    pending.set(
      key,
      setTimeout(() => {
        pending.delete(key);
        void syncProblems(client, deps.problems, doc).catch((err: unknown) =>
          log.warn(`[problems] ${doc.uri.fsPath}: ${err instanceof Error ? err.message : String(err)}`),
        );
        provider.refresh();
      }, 300),
    );
  };
  context.subscriptions.push(
    vscode.workspace.onDidChangeTextDocument((e) => e.contentChanges.length && follow(e.document)),
    vscode.workspace.onDidOpenTextDocument(follow),
    { dispose: () => pending.forEach((t) => clearTimeout(t)) },
  );
  for (const doc of vscode.workspace.textDocuments) follow(doc);
  // the Problems panel as the headers say, for every pulled file of the workspace, open or not (after a reload too)
  void provider
    .list()
    .then((items) => restoreProblems(deps.problems, items))
    .catch((err: unknown) => log.warn(`[problems] ${err instanceof Error ? err.message : String(err)}`));
}

/** The Problems entries of the pulled files, from their headers: the text an editor holds, else the file's. */
async function restoreProblems(problems: ValidationProblems, items: PulledItem[]): Promise<void> {
  for (const st of items) {
    const uri = vscode.Uri.parse(st.uri);
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === st.uri);
    const text = open?.getText() ?? new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
    showStatus(problems, uri, text, st);
  }
}

/** The Problems entry of a pulled file as its header says: a failure judged on this body, a verdict the body changed
 * since (information, not an error of this body), or none. */
async function syncProblems(client: NnragClient, problems: ValidationProblems, doc: vscode.TextDocument): Promise<void> {
  const text = doc.getText();
  const [st] = await client.request(GetPulledStatus, { files: [{ uri: doc.uri.toString(), text }] });
  // the file may have been deleted while the status was asked (its entry was cleared then): it gets none back
  if (doc.uri.scheme === 'file' && !(await exists(doc.uri))) return problems.clear(doc.uri);
  showStatus(problems, doc.uri, text, st);
}

async function exists(uri: vscode.Uri): Promise<boolean> {
  return vscode.workspace.fs.stat(uri).then(
    () => true,
    () => false,
  );
}

function showStatus(problems: ValidationProblems, uri: vscode.Uri, text: string, st: PulledItem | undefined): void {
  const v = st?.validation;
  const className = st?.target.split('.').pop();
  if (!st || !v) problems.clear(uri);
  else if (st.stale) problems.stale(uri, text, v, className);
  else problems.set(uri, text, { ok: v.status !== 'failed' && v.status !== 'error', tier: v.tier, category: v.category, message: v.message }, className);
}

/** A pulled file of the workspace, picked (the palette's Write Requirements with no pulled file active). */
async function pickPulled(provider: PulledBlocksProvider): Promise<string | undefined> {
  const items = await provider.list();
  if (!items.length) throw new Error(vscode.l10n.t('This workspace has no pulled file yet: pull a block first'));
  const picked = await vscode.window.showQuickPick(
    items.map((i) => ({
      label: path.basename(vscode.Uri.parse(i.uri).fsPath),
      description: vscode.workspace.asRelativePath(vscode.Uri.parse(i.uri)),
      uri: i.uri,
    })),
    { title: vscode.l10n.t('Write the requirements of which pulled file?'), ignoreFocusOut: true },
  );
  return picked?.uri;
}

/**
 * The merge editor (the command VS Code's git extension opens it with); the markers stay when it is not there. Its
 * three sides are files in the extension's own storage, so the editor VS Code restores after a reload has them.
 */
async function openMergeEditor(
  storage: vscode.Uri,
  log: vscode.LogOutputChannel,
  file: vscode.Uri,
  texts: { base: string; yours: string; upstream: string },
): Promise<void> {
  const folder = vscode.Uri.joinPath(storage, 'merge', createHash('sha256').update(file.toString()).digest('hex').slice(0, 16));
  const side = async (name: string, text: string): Promise<vscode.Uri> => {
    const uri = vscode.Uri.joinPath(folder, `${name}-${path.basename(file.fsPath)}`);
    await vscode.workspace.fs.writeFile(uri, Buffer.from(text, 'utf8'));
    return uri;
  };
  try {
    await vscode.commands.executeCommand('_open.mergeEditor', {
      base: await side('base', texts.base),
      input1: { uri: await side('yours', texts.yours), title: vscode.l10n.t('Yours') },
      input2: { uri: await side('upstream', texts.upstream), title: vscode.l10n.t('Upstream') },
      output: file,
    });
  } catch (err) {
    log.info(`[update] no merge editor here (${err instanceof Error ? err.message : String(err)}); the conflict markers are in the file`);
  }
}

export function registerPulledCommands(context: vscode.ExtensionContext, reg: Reg, deps: Deps): void {
  const { client, pulled: provider, log } = deps;
  // Compare, Update and Validate are offered in the palette for pulled files only
  const activeIsPulled = (): void => {
    const doc = vscode.window.activeTextEditor?.document;
    void vscode.commands.executeCommand('setContext', 'nnrag.activeIsPulled', !!doc && doc.languageId === 'python' && hasHeader(doc.getText()));
  };
  activeIsPulled();
  context.subscriptions.push(vscode.window.onDidChangeActiveTextEditor(activeIsPulled), vscode.workspace.onDidSaveTextDocument(activeIsPulled));
  followPulledDocuments(context, deps);
  const upstreamTexts = new Map<string, string>();
  const upstreamChanged = new vscode.EventEmitter<vscode.Uri>();
  context.subscriptions.push(
    upstreamChanged,
    vscode.workspace.registerTextDocumentContentProvider(UPSTREAM_SCHEME, {
      onDidChange: upstreamChanged.event,
      provideTextDocumentContent: (uri) => upstreamTexts.get(uri.toString()) ?? '',
    }),
  );

  // what upstream changed since the pull: the file as pulled against what a pull gives today (the user's own edits
  // are not in either side, so they do not show as if Update removed them); Update is in the diff's title bar.
  // Without the pulled body (no manifest), the file as it is against upstream. Resolves with the upstream text.
  reg('nnrag.compareUpstream', async (arg) => {
    const doc = await documentOf(arg);
    const plan = await client.request(PlanUpdate, { file: doc.uri.fsPath, text: doc.getText() });
    const right = vscode.Uri.from({ scheme: UPSTREAM_SCHEME, path: doc.uri.path, query: 'upstream' });
    upstreamTexts.set(right.toString(), plan.upstream);
    upstreamChanged.fire(right);
    const name = path.basename(doc.uri.fsPath);
    let left = doc.uri;
    if (plan.pulled !== undefined) {
      left = vscode.Uri.from({ scheme: UPSTREAM_SCHEME, path: doc.uri.path, query: 'pulled' });
      upstreamTexts.set(left.toString(), plan.pulled);
      upstreamChanged.fire(left);
    }
    const title =
      plan.pulled !== undefined
        ? vscode.l10n.t('Compare with upstream: {0}, as pulled ↔ what a pull gives now', name)
        : vscode.l10n.t('Compare with upstream: {0} ↔ what a pull gives now', name);
    await vscode.commands.executeCommand('vscode.diff', left, right, title, { preview: true });
    return plan.upstream;
  });

  const validate = (doc: vscode.TextDocument, text: string): Promise<{ validation: ValidationReport; text: string } | undefined> =>
    validateAsNext(deps, doc, text);

  // pulls the block again and keeps the user's edits (three-way merge), validates the result, and applies it as one
  // undoable edit with the verdict in its header; conflicts are written with markers and not run
  reg('nnrag.updatePulled', async (arg) => {
    const doc = await documentOf(arg);
    const name = path.basename(doc.uri.fsPath);
    if (doc.isDirty) await doc.save();
    const plan = await client.request(PlanUpdate, { file: doc.uri.fsPath, text: doc.getText() });
    if (plan.state === 'up-to-date' || plan.next === undefined) {
      void vscode.window.showInformationMessage(vscode.l10n.t('{0} is up to date with its upstream', name));
      return { state: plan.state };
    }
    const checked = plan.state === 'conflicts' ? undefined : await validate(doc, plan.next);
    const yours = doc.getText();
    await replaceAll(doc, checked?.text ?? plan.next);
    await vscode.window.showTextDocument(doc);
    // conflicts: VS Code's merge editor over the file (with its markers), the pulled base, your text and upstream's
    if (plan.state === 'conflicts' && plan.pulled !== undefined)
      await openMergeEditor(context.globalStorageUri, log, doc.uri, { base: plan.pulled, yours, upstream: plan.upstream });
    // the manifest and required_repos.json say what the header now says
    await client.request(WriteManifests, { file: doc.uri.fsPath, base: plan.base, text: doc.getText(), requirements: checked?.validation.requirements });
    provider.refresh();
    if (plan.state !== 'conflicts') {
      // what the update did, then the validation's verdict (its own message says it)
      void vscode.window.showInformationMessage(updateWords(name, plan));
    } else {
      void vscode.window.showWarningMessage(
        vscode.l10n.t(
          '{0}: updated with {1} conflicts between your edits and upstream; resolve them (the merge editor is open), then NN-RAG: Validate Pulled Block',
          name,
          plan.conflicts,
        ),
      );
    }
    return { state: plan.state, conflicts: plan.conflicts, upstreamChanges: plan.upstreamChanges, yourEdits: plan.yourEdits, validation: checked?.validation };
  });

  // validates the pulled file as the editor holds it and records the verdict in its header (one edit)
  reg('nnrag.validatePulled', async (arg) => {
    const doc = await documentOf(arg);
    const checked = await validate(doc, doc.getText());
    if (checked && checked.text !== doc.getText()) await replaceAll(doc, checked.text);
    if (checked) await client.request(WriteManifests, { file: doc.uri.fsPath, text: doc.getText(), requirements: checked.validation.requirements });
    provider.refresh();
    return checked?.validation;
  });

  // refreshes the view; resolves with the states it shows
  // what the success message of a pull offered, on any pulled file later: its import, its requirements
  /** The pulled file of a command's argument and its provenance record (a damaged one is refused by name). */
  const pulledOf = async (arg: unknown): Promise<{ doc: vscode.TextDocument; prov: Provenance }> => {
    const doc = await documentOf(arg);
    const prov = await client.request(GetProvenance, { text: doc.getText() });
    if (!prov) throw new Error(vscode.l10n.t('{0} has no NN-RAG provenance record', path.basename(doc.uri.fsPath)));
    return { doc, prov };
  };
  reg('nnrag.copyImport', async (arg) => {
    const { doc, prov } = await pulledOf(arg);
    const statement = importFromWorkspace(doc.uri, prov.block);
    await vscode.env.clipboard.writeText(statement);
    void vscode.window.showInformationMessage(vscode.l10n.t('Copied: {0}', statement));
    return statement;
  });
  reg('nnrag.writeRequirements', async (arg) => {
    // from the palette with no pulled file active: which one
    if (arg === undefined && !hasHeader(vscode.window.activeTextEditor?.document.getText() ?? '')) arg = await pickPulled(provider);
    if (arg === undefined) return;
    const { doc, prov } = await pulledOf(arg);
    // the versions the last validation found, from the folder's records (.nnrag/required_repos.json; beside the file
    // where an earlier version wrote it)
    const requirements: Requirement[] = [];
    for (const where of [
      vscode.Uri.joinPath(doc.uri, '..', RECORDS_FOLDER, 'required_repos.json'),
      vscode.Uri.joinPath(doc.uri, '..', 'required_repos.json'),
    ]) {
      try {
        const req = JSON.parse(new TextDecoder().decode(await vscode.workspace.fs.readFile(where))) as Partial<RequiredRepos>;
        const me = path.basename(doc.uri.fsPath);
        for (const [distribution, d] of Object.entries(req.distributions ?? {})) {
          if (d.needed_by.includes(me)) for (const module of d.modules) requirements.push({ module, distribution, version: d.version });
        }
        break;
      } catch {
        // none recorded there: the other place, else the modules are listed as not found
      }
    }
    await writeRequirements(deps.session, { requirements, imports: prov.imports }, vscode.Uri.file(doc.uri.fsPath.replace(/\.py$/, '.requirements.txt')));
  });

  reg('nnrag.refreshPulled', async () => {
    provider.refresh();
    const items = await provider.list();
    await restoreProblems(deps.problems, items);
    return items;
  });
}

/** What an update did, in one sentence. */
function updateWords(name: string, plan: { state: string; upstreamChanges?: number; yourEdits?: number }): string {
  if (plan.state === 'merged')
    return vscode.l10n.t(
      '{0}: merged {1} upstream {2}, kept your {3} {4}.',
      name,
      plan.upstreamChanges ?? 0,
      plan.upstreamChanges === 1 ? vscode.l10n.t('change') : vscode.l10n.t('changes'),
      plan.yourEdits ?? 0,
      plan.yourEdits === 1 ? vscode.l10n.t('edit') : vscode.l10n.t('edits'),
    );
  if (plan.state === 'header-refreshed') return vscode.l10n.t('{0}: the code is the same upstream; its header now names the sources as they are.', name);
  return vscode.l10n.t('{0}: replaced by the block as upstream has it now (you had not edited it).', name);
}
