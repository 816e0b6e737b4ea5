/** The Pulled Blocks view: every pulled file of the workspace with its state (the commands on them: pulled.ts). */
import * as path from 'path';
import * as vscode from 'vscode';
import type { PulledFileStatus } from '../core/pull/update';
import { GetPulledStatus } from '../shared/protocol';
import type { NnragClient } from './client';
import { describePulled, verdictMeaning } from '../core/pull/pulledState';

export type PulledItem = PulledFileStatus & { uri: string };

/** The line of the header every pulled file has (core/emit/emit.ts writes it). */
const MARKER = '# nnrag-provenance: ';

/** Whether `text` starts with a pulled file's header: comment lines, one of them the provenance record. */
export function hasHeader(text: string): boolean {
  for (const line of text.split('\n', 400)) {
    if (line.startsWith(MARKER)) return true;
    if (!line.startsWith('#')) return false;
  }
  return false;
}
const EXCLUDE = '**/{node_modules,.git,.venv,venv,__pycache__,.tox,site-packages}/**';

export class PulledBlocksProvider implements vscode.TreeDataProvider<PulledItem> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private items: PulledItem[] = [];
  /** Files read before that were not pulled, by modification time: not read again until they change. */
  private readonly notPulled = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly client: NnragClient) {}

  /** Asks the view to list again (a burst of file events is one refresh). */
  refresh(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.changed.fire(), 300);
  }

  /** Every pulled file of the workspace with its state (the editor's text for open files). */
  async list(): Promise<PulledItem[]> {
    const files = await vscode.workspace.findFiles('**/*.py', EXCLUDE, 5000);
    const texts: { uri: string; text: string }[] = [];
    for (const uri of files) {
      const key = uri.toString();
      const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
      let text = open?.getText();
      if (text === undefined) {
        const mtime = (await vscode.workspace.fs.stat(uri).then(undefined, () => undefined))?.mtime;
        if (mtime !== undefined && this.notPulled.get(key) === mtime) continue;
        text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri).then(undefined, () => new Uint8Array()));
        // the header sits in the first lines
        if (!hasHeader(text)) {
          if (mtime !== undefined) this.notPulled.set(key, mtime);
          continue;
        }
      }
      if (hasHeader(text)) texts.push({ uri: key, text });
    }
    const states = texts.length ? await this.client.request(GetPulledStatus, { files: texts }) : [];
    this.items = states.sort((a, b) => a.uri.localeCompare(b.uri));
    // the palette offers the pulled-file commands wherever the workspace has pulled files
    void vscode.commands.executeCommand('setContext', 'nnrag.hasPulledFiles', this.items.length > 0);
    return this.items;
  }

  async getChildren(element?: PulledItem): Promise<PulledItem[]> {
    if (element) return [];
    return this.list();
  }

  getTreeItem(s: PulledItem): vscode.TreeItem {
    const uri = vscode.Uri.parse(s.uri);
    const item = new vscode.TreeItem(path.basename(uri.fsPath), vscode.TreeItemCollapsibleState.None);
    item.resourceUri = uri;
    // the words and icon every place shows for this state
    const words = describePulled(s);
    item.description = words.label;
    item.iconPath = new vscode.ThemeIcon(words.icon);
    const changed = s.changed.map((c) => `- ${c.names.join(', ')} (${c.path}${c.state === 'missing' ? ', gone' : ''})`).join('\n');
    const means = verdictMeaning(s.validation);
    item.tooltip = new vscode.MarkdownString(
      `**${s.target}**\n\n${words.label}${means ? `\n\n${means}` : ''}${changed ? `\n\n${vscode.l10n.t('Changed upstream:')}\n${changed}` : ''}${s.reason ? `\n\n${s.reason}` : ''}`,
    );
    item.command = { command: 'vscode.open', title: vscode.l10n.t('Open'), arguments: [uri] };
    item.contextValue = `pulled.${s.state}`;
    return item;
  }
}
