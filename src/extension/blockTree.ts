/** The block tree: repositories -> categories -> blocks, filtered by the active search query. */
import * as vscode from 'vscode';
import type { NnragClient } from './client';
import { ListTree } from '../shared/protocol';
import type { TreeNode } from '../shared/protocol';
import { verdictMeaning, verdictWords } from '../core/pull/pulledState';

export class BlockTreeProvider implements vscode.TreeDataProvider<TreeNode> {
  private readonly changed = new vscode.EventEmitter<TreeNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private query = '';

  constructor(
    private readonly client: NnragClient,
    private readonly media: vscode.Uri,
  ) {}

  get activeQuery(): string {
    return this.query;
  }

  setQuery(query: string): void {
    this.query = query;
    void vscode.commands.executeCommand('setContext', 'nnrag.hasQuery', query.length > 0);
    this.refresh();
  }

  refresh(): void {
    this.changed.fire(undefined);
  }

  getChildren(element?: TreeNode): Promise<TreeNode[]> {
    return this.client.request(ListTree, { parent: element, query: this.query });
  }

  getTreeItem(node: TreeNode): vscode.TreeItem {
    if (node.kind === 'block' && node.hit) {
      const h = node.hit;
      const item = new vscode.TreeItem(h.name, vscode.TreeItemCollapsibleState.None);
      item.contextValue = 'block';
      item.description = `${h.module}${h.validation ? ` · ${verdictWords(h.validation)}` : ''}`;
      const means = verdictMeaning(h.validation);
      item.tooltip = new vscode.MarkdownString(
        `**${h.name}**${h.signature}\n\n${h.doc ? `${h.doc}\n\n` : ''}\`${h.target}\`\n\n${h.path}:${h.line}${means ? `\n\n${means}` : ''}`,
      );
      item.iconPath = h.abstract ? new vscode.ThemeIcon('symbol-interface') : vscode.Uri.joinPath(this.media, 'block.svg');
      item.command = { command: 'nnrag.openSource', title: vscode.l10n.t('Open Source'), arguments: [node] };
      return item;
    }
    // (a repository still indexing may have no blocks yet: it stays expandable; a failing one with none has nothing)
    const item = new vscode.TreeItem(node.label, node.error && !node.count ? vscode.TreeItemCollapsibleState.None : vscode.TreeItemCollapsibleState.Collapsed);
    item.contextValue = node.kind;
    item.description = node.count !== undefined ? String(node.count) : undefined;
    item.iconPath = new vscode.ThemeIcon(node.kind === 'repo' ? 'repo' : 'symbol-folder');
    if (node.installed) {
      // installed packages: which version, from which interpreter (the tooltip gives the paths whole)
      const { version, python, folder } = node.installed;
      item.description = [String(node.count ?? 0), version, python].filter(Boolean).join(' · ');
      item.tooltip = new vscode.MarkdownString()
        .appendMarkdown(`**${node.label}**${version ? ` ${version}` : ''}\n\n`)
        .appendText(`${vscode.l10n.t('installed package of {0}', python ?? vscode.l10n.t('the selected interpreter'))}\n${folder}`);
    }
    if (node.observed && !node.installed) {
      // how much of the repository its own tests and builders showed: the tooltip says it whole
      const o = node.observed;
      item.description = vscode.l10n.t('{0} · observed {1}/{2}', String(node.count ?? 0), o.observed, o.entries);
      item.tooltip = vscode.l10n.t('{0}: observed {1} of {2} entries ({3} blocks fed)', node.label, o.observed, o.entries, o.fed);
    }
    if (node.shared) {
      // the team's index: read-only here (no Re-index or Remove)
      item.contextValue = 'shared';
      item.description = vscode.l10n.t('{0} · shared', String(node.count ?? 0));
      item.tooltip = vscode.l10n.t('From the shared index (nnrag.sharedIndex): read-only, fetched again at start, on Re-index and on Refresh Shared Index');
      item.iconPath = new vscode.ThemeIcon('cloud');
    }
    if (node.shadowsShared) {
      // the user's own copy of a repository the shared index holds too: this one is searched and pulled
      item.description = vscode.l10n.t('{0} · yours (the shared copy is not used)', String(item.description ?? node.count ?? 0));
      item.tooltip = vscode.l10n.t(
        'The shared index (nnrag.sharedIndex) holds a repository named {0} too: yours is indexed and used here, the shared copy is not.',
        node.label,
      );
    }
    if (node.error) {
      item.contextValue = 'repo.failing';
      item.description = vscode.l10n.t('cannot index{0}', node.count ? ` · ${vscode.l10n.t('{0} blocks from before', node.count)}` : '');
      item.tooltip = new vscode.MarkdownString().appendText(node.error);
      item.iconPath = new vscode.ThemeIcon('error', new vscode.ThemeColor('list.errorForeground'));
    }
    return item;
  }
}
