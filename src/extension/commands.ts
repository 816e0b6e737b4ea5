/**
 * Every command of the extension is registered here, over one context (`Deps`), one file per feature: search,
 * repositories, pull into the workspace, pulled blocks; the pull waiting in its diff editor is settled here.
 */
import type * as vscode from 'vscode';
import { register } from './ctx';
import type { Deps } from './ctx';
import { registerPullCommands } from './pullIntoWorkspace';
import { registerRepositoryCommands } from './repositoryCommands';
import { registerSearchCommands } from './searchCommands';
import { registerPulledCommands } from './pulled';

export function registerCommands(context: vscode.ExtensionContext, deps: Deps): void {
  const reg = (id: string, fn: (...args: unknown[]) => unknown): void => register(context, id, deps.log, deps.session, fn);
  registerSearchCommands(reg, deps);
  registerRepositoryCommands(reg, deps);
  registerPullCommands(reg, deps);
  registerPulledCommands(context, reg, deps);
  // the pull waiting in its diff editor: Accept writes it, Cancel writes nothing (true when one was waiting)
  reg('nnrag.acceptPull', () => deps.session.settlePendingPull(true));
  reg('nnrag.cancelPull', () => deps.session.settlePendingPull(false));
}
