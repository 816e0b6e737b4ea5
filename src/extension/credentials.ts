/**
 * Git credentials, asked for only when a git server wants them: a GitHub session from VS Code's authentication for
 * github.com, else a token kept in SecretStorage (asked for once per origin). Never read from or written to settings.
 */
import * as vscode from 'vscode';
import type { GitCredentials } from '../core/sources/git';

const KEY = (origin: string): string => `nnrag.git:${origin}`;

export class GitCredentialService {
  /** Origins whose prompt the user dismissed in this window: do not ask again on every fetch. */
  private readonly declined = new Set<string>();

  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  async credentialsFor(url: string): Promise<GitCredentials | null> {
    const origin = new URL(url).origin;
    if (origin === 'https://github.com') {
      try {
        const session = await vscode.authentication.getSession('github', ['repo'], { createIfNone: !this.declined.has(origin) });
        if (session) return { username: 'x-access-token', password: session.accessToken };
      } catch (err) {
        this.log.warn(`[git] no GitHub session: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    const stored = await this.secrets.get(KEY(origin));
    if (stored) return JSON.parse(stored) as GitCredentials;
    if (this.declined.has(origin)) return null;
    const username = await vscode.window.showInputBox({
      title: vscode.l10n.t('{0} asks for credentials', origin),
      prompt: vscode.l10n.t('User name (kept in VS Code secret storage, never in settings)'),
      ignoreFocusOut: true,
    });
    const password =
      username === undefined
        ? undefined
        : await vscode.window.showInputBox({
            title: vscode.l10n.t('{0} asks for credentials', origin),
            prompt: vscode.l10n.t('Password or access token'),
            password: true,
            ignoreFocusOut: true,
          });
    if (username === undefined || password === undefined) {
      this.declined.add(origin);
      return null;
    }
    const creds = { username, password };
    await this.secrets.store(KEY(origin), JSON.stringify(creds));
    return creds;
  }

  /** The server refused what we gave: forget the stored secret so the next fetch asks again. */
  async rejected(url: string): Promise<void> {
    const origin = new URL(url).origin;
    await this.secrets.delete(KEY(origin));
    this.log.warn(`[git] ${origin} refused the stored credentials; they were removed`);
  }
}
