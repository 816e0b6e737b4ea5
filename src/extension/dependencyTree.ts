/**
 * The Dependencies view: what a pull of one block would bring with it, as a tree from the block down (each definition
 * under what needs it), with the lines each takes in the file.
 */
import * as vscode from 'vscode';
import type { DependencyGraph } from '../core/emit/emit';
import type { FileSizes } from '../core/emit/why';

interface Item {
  id: number;
  /** The definitions from the block down to this one (a definition already on the path is shown, not expanded). */
  path: number[];
}

export class DependencyTreeProvider implements vscode.TreeDataProvider<Item> {
  private readonly changed = new vscode.EventEmitter<Item | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private shown?: { target: string; sizes: FileSizes; graph: DependencyGraph; root: number; next: Map<number, number[]> };

  /** Shows the dependencies of `target` (as `ExplainDependencies` answered); returns the root item to reveal. */
  show(target: string, sizes: FileSizes, graph: DependencyGraph): Item | undefined {
    const name = target.split('.').pop() ?? target;
    const module = target
      .replace(/^[^:]*:/, '')
      .split('.')
      .slice(0, -1)
      .join('.');
    const root = graph.nodes.findIndex((n) => n.module === module && n.names.includes(name));
    const next = new Map<number, number[]>();
    for (const e of graph.edges) {
      const list = next.get(e.from);
      if (list) list.push(e.to);
      else next.set(e.from, [e.to]);
    }
    this.shown = { target, sizes, graph, root, next };
    this.changed.fire(undefined);
    return root >= 0 ? { id: root, path: [root] } : undefined;
  }

  getChildren(item?: Item): Item[] {
    const s = this.shown;
    if (!s || s.root < 0) return [];
    if (!item) return [{ id: s.root, path: [s.root] }];
    if (item.path.indexOf(item.id) !== item.path.length - 1) return [];
    const children = [...new Set(s.next.get(item.id) ?? [])].map((id) => ({ id, path: [...item.path, id] }));
    // the largest first: what makes the file long is on top
    return children.sort((a, b) => s.graph.nodes[b.id].lines - s.graph.nodes[a.id].lines);
  }

  getParent(item: Item): Item | undefined {
    return item.path.length > 1 ? { id: item.path[item.path.length - 2], path: item.path.slice(0, -1) } : undefined;
  }

  getTreeItem(item: Item): vscode.TreeItem {
    const s = this.shown!;
    const node = s.graph.nodes[item.id];
    const repeated = item.path.indexOf(item.id) !== item.path.length - 1;
    const hasChildren = !repeated && (s.next.get(item.id)?.length ?? 0) > 0;
    const label = node.names.join(', ') || vscode.l10n.t('(a statement of {0})', node.module);
    const t = new vscode.TreeItem(
      label,
      item.path.length === 1
        ? vscode.TreeItemCollapsibleState.Expanded
        : hasChildren
          ? vscode.TreeItemCollapsibleState.Collapsed
          : vscode.TreeItemCollapsibleState.None,
    );
    t.id = item.path.join('/');
    t.description =
      item.path.length === 1
        ? vscode.l10n.t('{0} lines in the file: the block {1}, pulled in {2}', s.sizes.total, s.sizes.block, s.sizes.pulled)
        : `${vscode.l10n.t('{0} lines', node.lines)} · ${node.module}${repeated ? ` · ${vscode.l10n.t('shown above')}` : ''}`;
    t.tooltip = item.path.map((id) => s.graph.nodes[id].names[0] ?? s.graph.nodes[id].module).join(' → ');
    t.iconPath = new vscode.ThemeIcon(item.path.length === 1 ? 'symbol-class' : node.repo === s.graph.nodes[s.root].repo ? 'symbol-method' : 'package');
    return t;
  }
}
