/**
 * The extension's settings, typed, read in one place. Their defaults live in package.json's
 * `contributes.configuration` (VS Code answers with them when nothing is set); DEFAULTS mirrors them for the type and
 * for a test that keeps the two equal.
 */
import * as vscode from 'vscode';
import { DEFAULTS, MACHINE_SETTINGS } from './defaults';
export { DEFAULTS };

export type Settings = typeof DEFAULTS;
export type SettingKey = keyof Settings;

/** A setting's value in effect (for `scope`, a resource: a workspace folder's own value counts). */
export function setting<K extends SettingKey>(key: K, scope?: vscode.Uri): Settings[K] {
  return vscode.workspace.getConfiguration('nnrag', scope).get<Settings[K]>(key) ?? DEFAULTS[key];
}

/**
 * Where a setting takes its value from now: the folder's, the workspace's (when the workspace is trusted: an untrusted
 * one's value is ignored) or the user's settings, with the value there. A change goes there, so it takes effect.
 */
export function scopeInEffect<K extends SettingKey>(key: K): { key: string; value: Settings[K] | undefined; target: vscode.ConfigurationTarget } {
  const where = vscode.workspace.getConfiguration('nnrag').inspect<Settings[K]>(key);
  if (vscode.workspace.isTrusted && where?.workspaceFolderValue !== undefined)
    return { key: vscode.l10n.t('folder'), value: where.workspaceFolderValue, target: vscode.ConfigurationTarget.WorkspaceFolder };
  if (vscode.workspace.isTrusted && where?.workspaceValue !== undefined)
    return { key: vscode.l10n.t('workspace'), value: where.workspaceValue, target: vscode.ConfigurationTarget.Workspace };
  // in a remote window (SSH, WSL, a container, code-server) VS Code writes a machine setting's "user" value into the
  // remote machine's settings, not the User tab: the message names the scope it is written to
  if (vscode.env.remoteName && MACHINE_SETTINGS.has(key))
    return { key: vscode.l10n.t('remote'), value: where?.globalValue, target: vscode.ConfigurationTarget.Global };
  return { key: vscode.l10n.t('user'), value: where?.globalValue, target: vscode.ConfigurationTarget.Global };
}

/** Writes a setting in the scope it takes effect from (scopeInEffect); says which. */
export async function updateSetting<K extends SettingKey>(key: K, value: Settings[K]): Promise<string> {
  const { key: scope, target } = scopeInEffect(key);
  await vscode.workspace.getConfiguration('nnrag').update(key, value, target);
  return scope;
}

/** Whether a configuration change touches one of `keys`. */
export function affects(e: vscode.ConfigurationChangeEvent, ...keys: SettingKey[]): boolean {
  return keys.some((k) => e.affectsConfiguration(`nnrag.${k}`));
}
