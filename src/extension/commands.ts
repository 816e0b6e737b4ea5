/** The extension's commands, one file per feature: search, repositories, pull into the workspace (pulled blocks: pulled.ts). */
import type * as vscode from 'vscode';
import { register } from './ctx';
import type { Deps } from './ctx';
import { registerPullCommands } from './pullIntoWorkspace';
import { registerRepositoryCommands } from './repositoryCommands';
import { registerSearchCommands } from './searchCommands';

export function registerCommands(context: vscode.ExtensionContext, deps: Deps): void {
  const reg = (id: string, fn: (...args: unknown[]) => unknown): void => register(context, id, deps.log, deps.session, fn);
  registerSearchCommands(reg, deps);
  registerRepositoryCommands(reg, deps);
  registerPullCommands(reg, deps);
}
