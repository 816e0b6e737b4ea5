/** Search: the QuickPick over the index, and what to do with a block found (pull, open its source, its dependencies). */
import * as vscode from 'vscode';
import type { SearchHit } from '../core/search/search';
import { ExplainDependencies, ReadSource, SearchBlocks, SuggestSearch } from '../shared/protocol';
import type { IndexStatus } from '../shared/protocol';
import type { NnragClient } from './client';
import { verdictWords } from '../core/pull/pulledState';
import { setting } from './config';
import { targetOf } from './ctx';
import { SearchSession } from './searchSession';
import type { Deps, Reg, Session } from './ctx';

/** Text of an index or a server as a list shows it: `$(name)` written as it is, not drawn as an icon. */
const plain = (text: string): string => text.replace(/\$\(/g, '$\u200b(');

function hitItem(h: SearchHit): vscode.QuickPickItem & { hit: SearchHit } {
  // what the block is, before it is chosen: its verdict (if a pull recorded one), license and first docstring line
  const facts = [
    h.repo,
    h.category,
    h.abstract ? 'abstract' : '',
    h.validation ? verdictWords(h.validation) : '',
    h.license ?? vscode.l10n.t('license not declared'),
  ];
  const firstLine =
    h.doc
      .split('\n')
      .find((l) => l.trim())
      ?.trim() ?? '';
  return {
    label: `$(symbol-class) ${plain(h.name)}`,
    // (a hit from the team's search server, nnrag.search.servers, says which: not this window's index)
    description: `${h.index ? `$(cloud) ${plain(h.index)} · ` : ''}${plain(facts.filter(Boolean).join(' · '))}${h.copies ? ` · ${vscode.l10n.t('{0} copies in {1} repositories', h.copies.count, h.copies.repos)}` : ''}`,
    detail: plain(`${firstLine ? `${firstLine.slice(0, 120)} — ` : ''}${h.path}:${h.line}  ${h.name}${h.signature || '()'}`),
    alwaysShow: true,
    hit: h,
  };
}

/** The search QuickPick, backed by the server; resolves with the chosen block. `withServers`: the team's search
 * servers' blocks too (only where a block found there is handled as one: it is not in this window's index). */
export function searchQuickPick(
  client: NnragClient,
  initial = '',
  indexChanged?: vscode.Event<IndexStatus>,
  ui?: Session,
  withServers = false,
): Promise<SearchHit | undefined> {
  return new Promise((resolve) => {
    type Item = vscode.QuickPickItem & { hit?: SearchHit; meant?: string };
    const qp = vscode.window.createQuickPick<Item>();
    qp.title = vscode.l10n.t('NN-RAG: Search Blocks');
    qp.placeholder = vscode.l10n.t('Name, words, docstring or signature (e.g. residual block, attention, ConvBN)');
    qp.matchOnDescription = false;
    // it stays open while the index finishes and when an editor (the first-run walkthrough) takes the focus
    qp.ignoreFocusOut = true;
    qp.matchOnDetail = false;
    qp.value = initial;
    const done = (hit: SearchHit): void => {
      resolve(hit);
      qp.hide();
    };
    const ask = async (text: string): Promise<Item[]> => {
      // the user's own embedding model, when they serve one on this machine
      const url = setting('search.embeddings').trim();
      // the team's search servers, when the user named them
      const named = withServers ? setting('search.servers') : [];
      const servers = Array.isArray(named) ? named.filter((s): s is string => typeof s === 'string' && s.trim() !== '') : [];
      const hits = await client.request(SearchBlocks, {
        text,
        limit: 50,
        ...(url ? { embeddings: { url, model: setting('search.embeddingModel') } } : {}),
        ...(servers.length ? { servers } : {}),
      });
      if (hits.length || !text.trim()) return hits.map(hitItem);
      const meant = await client.request(SuggestSearch, { text }).catch(() => ({ meant: undefined }));
      return [
        meant.meant
          ? {
              label: `$(lightbulb) ${vscode.l10n.t('Did you mean "{0}"?', meant.meant)}`,
              detail: vscode.l10n.t('No block matches "{0}". Press Enter to search for "{1}".', text, meant.meant),
              alwaysShow: true,
              meant: meant.meant,
            }
          : {
              label: `$(info) ${vscode.l10n.t('No block matches "{0}"', text)}`,
              detail: vscode.l10n.t('Try other words, an abbreviation (attn, bn, FPN) or part of a class name; NN-RAG: Add Repository indexes more code.'),
              alwaysShow: true,
            },
      ];
    };
    // one sequence number per keystroke; Enter acts on the list shown for the text in the box (searchSession.ts)
    const session = new SearchSession<Item>(
      ask,
      {
        show: (_text, items) => {
          qp.items = items;
          // on screen once the editor reports an active item of this list (searchSession.ts)
          return false;
        },
        clear: () => (qp.items = []),
        busy: (on) => (qp.busy = on),
        choose: (item) => {
          if (item.meant) {
            qp.value = item.meant;
            void session.replace(item.meant);
          } else if (item.hit) done(item.hit);
        },
      },
      initial,
    );
    qp.onDidChangeValue((v) => session.typed(v));
    qp.onDidChangeActive((active) => session.displayed(active));
    qp.onDidAccept(() => session.accept(qp.selectedItems[0] ?? qp.activeItems[0]));
    // the index grows while the picker is open (the first index after start): the same text is asked again
    const sub = indexChanged?.((st) => {
      if (st.state === 'ready') void session.refresh();
    });
    qp.onDidHide(() => {
      if (ui?.searchBox === qp) ui.searchBox = undefined;
      session.close();
      sub?.dispose();
      resolve(undefined);
      qp.dispose();
    });
    void session.refresh();
    qp.show();
    if (ui) ui.searchBox = qp;
  });
}

export function registerSearchCommands(reg: Reg, deps: Deps): void {
  const { client, tree, interpreter } = deps;
  // resolves with the chosen block and what was done with it (the integration tests read it)
  reg('nnrag.searchBlocks', async (initial) => {
    const hit = await searchQuickPick(client, typeof initial === 'string' ? initial : tree.activeQuery, deps.indexChanged, deps.session, true);
    if (!hit) return undefined;
    // the walkthrough's search step ticks on a block found (after the picker closed)
    void vscode.commands.executeCommand('setContext', 'nnrag.searchedBlock', true);
    if (hit.index !== undefined) {
      // found by the team's server: its source is there, not in this window's index
      const copy = vscode.l10n.t('Copy Target');
      const add = vscode.l10n.t('Add Repository');
      const choice = await vscode.window.showInformationMessage(
        vscode.l10n.t(
          "{0} is in the team's index at {1}, not in this window's: add its repository ({2}) to pull it, or start from the team's whole index (nnrag.sharedIndex).",
          hit.name,
          hit.index,
          hit.repo,
        ),
        copy,
        add,
      );
      if (choice === copy) await vscode.env.clipboard.writeText(hit.target);
      else if (choice === add) await vscode.commands.executeCommand('nnrag.addRepository');
      return { target: hit.target, action: choice, result: undefined };
    }
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

  // what a pull would bring with the block, as a tree in the Dependencies view (nothing is written or run)
  reg('nnrag.showDependencies', async (arg) => {
    const target = targetOf(arg) ?? (await searchQuickPick(client, '', deps.indexChanged))?.target;
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
