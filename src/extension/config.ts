/**
 * The extension's settings, typed, read in one place. Their defaults live in package.json's
 * `contributes.configuration` (VS Code answers with them when nothing is set); DEFAULTS mirrors them for the type and
 * for a test that keeps the two equal.
 */
import * as vscode from 'vscode';
import { DEFAULTS } from './defaults';
export { DEFAULTS };

export type Settings = typeof DEFAULTS;
export type SettingKey = keyof Settings;

/** A setting's value in effect (for `scope`, a resource: a workspace folder's own value counts). */
export function setting<K extends SettingKey>(key: K, scope?: vscode.Uri): Settings[K] {
  return vscode.workspace.getConfiguration('nnrag', scope).get<Settings[K]>(key) ?? DEFAULTS[key];
}

/** Writes a setting in the user's settings. */
export function updateSetting<K extends SettingKey>(key: K, value: Settings[K]): Thenable<void> {
  return vscode.workspace.getConfiguration('nnrag').update(key, value, vscode.ConfigurationTarget.Global);
}

/** Whether a configuration change touches one of `keys`. */
export function affects(e: vscode.ConfigurationChangeEvent, ...keys: SettingKey[]): boolean {
  return keys.some((k) => e.affectsConfiguration(`nnrag.${k}`));
}
