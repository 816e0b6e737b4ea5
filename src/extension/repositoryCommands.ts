/** Repositories: index again (all, one, the shared index), add, remove, disable and enable, the interpreter, the log. */
import { repoKind } from '../core/sources/kinds';
import { execFile } from 'child_process';
import * as vscode from 'vscode';
import { repositoryNames } from '../core/sources/names';
import type { SourceConfig } from '../core/sources/types';
import { ObserveRepositories, ReindexRepositories, UseSharedIndex } from '../shared/protocol';
import { mayRunCode } from './pullIntoWorkspace';
import { scopeInEffect, setting } from './config';
import { repoNameOf } from './ctx';
import type { Deps, Reg } from './ctx';
import { withInterpreter } from './interpreter';

export function registerRepositoryCommands(reg: Reg, deps: Deps): void {
  const { client, tree, interpreter, log } = deps;
  reg('nnrag.reindex', async () => {
    const repositories = withInterpreter(setting('repositories'), interpreter.current().path);
    const shared = setting('sharedIndex') || undefined;
    const status = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('NN-RAG: re-indexing {0} repositories', repositories.length), cancellable: true },
      async (_progress, token) => {
        // the shared index first: downloaded again only when it changed
        if (shared) await client.request(UseSharedIndex, { location: shared }, token);
        return client.request(ReindexRepositories, { repositories }, token);
      },
    );
    tree.refresh();
    return status;
  });
  reg('nnrag.refreshSharedIndex', async () => {
    const shared = setting('sharedIndex');
    if (!shared) {
      void vscode.window.showInformationMessage(vscode.l10n.t('NN-RAG: no shared index is set (the nnrag.sharedIndex setting is empty).'));
      return undefined;
    }
    const status = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('NN-RAG: refreshing the shared index') },
      () => client.request(UseSharedIndex, { location: shared }),
    );
    tree.refresh();
    // what it did, in words: refused (the copy before stays), or which repositories it brings
    const s = status.shared;
    if (s?.state === 'refused' || s?.state === 'unreachable')
      void vscode.window.showWarningMessage(vscode.l10n.t('NN-RAG: the shared index could not be refreshed: {0}', s.message ?? ''));
    else if (s)
      vscode.window.setStatusBarMessage(
        s.state === 'downloaded'
          ? vscode.l10n.t('NN-RAG: shared index refreshed ({0} repositories)', s.repositories.length)
          : vscode.l10n.t('NN-RAG: the shared index is up to date ({0} repositories)', s.repositories.length),
        5000,
      );
    return status;
  });
  // the shared index's nodes: the one setting that brings them (removing it removes them)
  reg('nnrag.openSharedIndexSetting', async () => {
    await vscode.commands.executeCommand('workbench.action.openSettings', 'nnrag.sharedIndex');
    return 'nnrag.sharedIndex';
  });

  reg('nnrag.showLog', () => log.show());
  // a path given (a test, another extension) is taken as the pick; resolves with the settings scope written
  reg('nnrag.selectInterpreter', (given) => interpreter.pick(typeof given === 'string' ? given : undefined));

  // an entry as the argument (a SourceConfig) skips the prompts
  reg('nnrag.addRepository', async (given) => {
    if (given && typeof given === 'object' && typeof (given as SourceConfig).location === 'string') return addRepository(given as SourceConfig);
    const entry = await promptForRepository(interpreter.current().path);
    if (!entry) return;
    return addRepository(entry);
  });

  // a repository node of the tree (or a name): indexed again alone (changed files only), the others left as they are
  reg('nnrag.reindexRepository', async (arg) => {
    const name = repoNameOf(arg);
    if (!name) return undefined;
    const status = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('NN-RAG: re-indexing {0}', name), cancellable: true },
      (_progress, token) => client.request(ReindexRepositories, { only: name }, token),
    );
    tree.refresh();
    return status;
  });

  // the repositories' own tests, builders and configs run under the observer (in the sandbox): pulls then build and
  // feed blocks as their repositories do; one repository from its node, else all
  reg('nnrag.observeRepositories', async (arg) => {
    const name = repoNameOf(arg);
    const memoryMb = setting('validation.memoryMb');
    if (!(await mayRunCode(deps, name ? vscode.l10n.t('Observing {0}', name) : vscode.l10n.t('Observing the repositories'), memoryMb))) return undefined;
    const summaries = await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: vscode.l10n.t("NN-RAG: running {0}'s tests and builders under the observer", name ?? vscode.l10n.t('the repositories')),
        cancellable: true,
      },
      (_progress, token) =>
        client.request(
          ObserveRepositories,
          { python: interpreter.current().path, memoryMb, repos: name ? [name] : undefined, allowWeakSandbox: deps.session.weakSandboxAccepted },
          token,
        ),
    );
    const seen = summaries.filter((s) => !s.skipped);
    const said = seen.map((s) =>
      s.coverage
        ? vscode.l10n.t('{0}: observed {1} of {2} entries ({3} blocks fed)', s.repo, s.coverage.observed, s.coverage.entries, s.coverage.fed)
        : vscode.l10n.t('{0}: {1} of {2} entries run', s.repo, s.ran, s.entries),
    );
    // the tree's repository nodes say it too
    tree.refresh();
    void vscode.window.showInformationMessage(
      said.length ? said.join('; ') : vscode.l10n.t('No local repository to observe: installed packages and git repositories have no tests here to run'),
    );
    return summaries;
  });
  registerSettingsCommands(reg);
}

/** The commands that change `nnrag.repositories` where it takes effect: open it, remove, disable, enable an entry. */
function registerSettingsCommands(reg: Reg): void {
  // the settings file that holds nnrag.repositories in effect, to correct an entry (a failing repository's node)
  reg('nnrag.openRepositorySettings', async () => {
    const { key, target } = repositoriesInEffect();
    const T = vscode.ConfigurationTarget;
    const command =
      target === T.Global
        ? vscode.env.remoteName
          ? 'workbench.action.openRemoteSettingsFile'
          : 'workbench.action.openSettingsJson'
        : target === T.WorkspaceFolder
          ? 'workbench.action.openFolderSettingsFile'
          : 'workbench.action.openWorkspaceSettingsFile';
    await vscode.commands.executeCommand(command);
    return key;
  });

  // a repository node of the tree (or a name): out of the settings where it is defined, and so out of the index
  reg('nnrag.removeRepository', async (arg) => {
    const name = repoNameOf(arg);
    if (!name) return undefined;
    const { key, list, target } = repositoriesInEffect();
    const kept = list.filter((r) => !repositoryNames(r).includes(name));
    if (kept.length === list.length) {
      void vscode.window.showWarningMessage(
        vscode.l10n.t('{0} is not in nnrag.repositories ({1}): it comes from another settings scope or is being removed already', name, key),
      );
      return undefined;
    }
    await vscode.workspace.getConfiguration('nnrag').update('repositories', kept, target);
    void vscode.window.showInformationMessage(vscode.l10n.t('Removed {0} from nnrag.repositories in the {1} settings', name, key));
    return key;
  });

  // kept in the settings with `enabled: false`: not indexed (its blocks leave the index) until enabled again
  reg('nnrag.disableRepository', async (arg) => {
    const name = repoNameOf(arg);
    if (!name) return undefined;
    const { key, list, target } = repositoriesInEffect();
    if (!list.some((r) => repositoryNames(r).includes(name))) {
      void vscode.window.showWarningMessage(vscode.l10n.t('{0} is not in nnrag.repositories ({1}): it comes from another settings scope', name, key));
      return undefined;
    }
    await vscode.workspace.getConfiguration('nnrag').update(
      'repositories',
      list.map((r) => (repositoryNames(r).includes(name) ? { ...r, enabled: false } : r)),
      target,
    );
    void vscode.window.showInformationMessage(
      vscode.l10n.t('Disabled {0} in nnrag.repositories ({1} settings): NN-RAG: Enable Repository indexes it again', name, key),
    );
    return key;
  });

  // a disabled repository (picked from a list when none is given) is indexed again
  reg('nnrag.enableRepository', async (arg) => {
    const { key, list, target } = repositoriesInEffect();
    const disabled = list.filter((r) => r.enabled === false);
    let name = typeof arg === 'string' ? arg : undefined;
    if (!name) {
      if (!disabled.length) {
        void vscode.window.showInformationMessage(vscode.l10n.t('No repository is disabled in nnrag.repositories ({0} settings)', key));
        return undefined;
      }
      name = (
        await vscode.window.showQuickPick(
          disabled.map((r) => ({ label: repositoryNames(r)[0], description: r.location })),
          { title: vscode.l10n.t('NN-RAG: Enable Repository') },
        )
      )?.label;
    }
    if (!name) return undefined;
    const enable = (r: SourceConfig): SourceConfig => {
      const { enabled: _off, ...rest } = r;
      return rest;
    };
    if (!disabled.some((r) => repositoryNames(r).includes(name))) return undefined;
    await vscode.workspace.getConfiguration('nnrag').update(
      'repositories',
      list.map((r) => (repositoryNames(r).includes(name) ? enable(r) : r)),
      target,
    );
    return key;
  });
}

/**
 * The selected interpreter changed from `before` to `now`: the installed-package repositories that follow it are
 * indexed from `now`; one message says so, with a button that keeps them on `before` instead (their entries then name
 * it). Says nothing when none follows.
 */
export async function offerToKeepInterpreter(before: string, now: string): Promise<void> {
  const { list, target } = repositoriesInEffect();
  const following = list.filter((r) => repoKind(r.kind).installed && !r.python);
  if (!following.length) return;
  const names = following.map((r) => r.location).join(', ');
  const keepOn = async (): Promise<void> =>
    vscode.workspace.getConfiguration('nnrag').update(
      'repositories',
      list.map((r) => (following.includes(r) ? { ...r, python: before } : r)),
      target,
    );
  // said as it is: indexed from the new interpreter only when it has them (nothing is written unless asked)
  const has = await importable(
    now,
    following.map((r) => r.location),
  );
  const keep = vscode.l10n.t('Keep {0}', before);
  const pick = await vscode.window.showInformationMessage(
    following.every((r) => has.has(r.location))
      ? vscode.l10n.t('The installed packages {0} are now indexed from {1} (they came from {2}).', names, now, before)
      : vscode.l10n.t('{0} does not have {1}, which came from {2}: keep indexing them from {2}?', now, names, before),
    keep,
  );
  if (pick === keep) await keepOn();
}

/** Which of `names` (top-level packages) `python` can import, asked without importing them; none when it cannot say. */
function importable(python: string, names: string[]): Promise<Set<string>> {
  const code = 'import importlib.util, json, sys\nprint(json.dumps([n for n in sys.argv[1:] if importlib.util.find_spec(n) is not None]))';
  return new Promise((resolve) =>
    execFile(python, ['-I', '-c', code, ...names], { timeout: 15_000 }, (err, stdout) => {
      try {
        resolve(err ? new Set() : new Set(JSON.parse(stdout.trim().split('\n').pop() ?? '[]') as string[]));
      } catch {
        resolve(new Set());
      }
    }),
  );
}

/** `nnrag.repositories` where it takes effect (scopeInEffect): additions and removals go there. */
function repositoriesInEffect(): { key: string; list: SourceConfig[]; target: vscode.ConfigurationTarget } {
  const { key, value, target } = scopeInEffect('repositories');
  return { key, list: value ?? [], target };
}

async function addRepository(entry: SourceConfig): Promise<string> {
  const { key, list, target } = repositoriesInEffect();
  await vscode.workspace.getConfiguration('nnrag').update('repositories', [...list, entry], target);
  void vscode.window.showInformationMessage(vscode.l10n.t('Added {0} to nnrag.repositories in the {1} settings', entry.name ?? entry.location, key));
  return key;
}

/** Asks what to index: a git URL, a local folder or installed packages (of `python`, which the prompt names). */
async function promptForRepository(python: string): Promise<SourceConfig | undefined> {
  const kinds = [
    { label: vscode.l10n.t('Git URL'), source: 'git' as const },
    { label: vscode.l10n.t('Local folder'), source: 'folder' as const },
    { label: vscode.l10n.t('Installed package'), source: 'python-env' as const },
  ];
  const kind = await vscode.window.showQuickPick(kinds, { title: vscode.l10n.t('Add a repository to index') });
  if (!kind) return undefined;
  let entry: SourceConfig | undefined;
  if (kind.source === 'folder') {
    const picked = await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, openLabel: vscode.l10n.t('Index this folder') });
    if (picked?.[0]) entry = { location: picked[0].fsPath, kind: 'folder' };
  } else if (kind.source === 'git') {
    const url = await vscode.window.showInputBox({
      prompt: vscode.l10n.t('http(s) URL of a git repository, or a file:// URL of a local checkout'),
      placeHolder: 'https://github.com/owner/repo.git',
      validateInput: (v) =>
        /^(https?:\/\/[^\s@]+|file:\/\/\S+)$/.test(v.trim())
          ? undefined
          : /^(ssh:\/\/|[\w.-]+@[\w.-]+:)/.test(v.trim())
            ? vscode.l10n.t('ssh URLs cannot be fetched here: give the https URL, or clone it and add the folder')
            : vscode.l10n.t('An http:// or https:// URL without credentials, or a file:// URL'),
    });
    if (url) entry = /^file:\/\//.test(url.trim()) ? { location: url.trim(), kind: 'folder' } : { location: url.trim(), kind: 'git' };
  } else {
    const pkgs = await vscode.window.showInputBox({
      prompt: vscode.l10n.t('Installed packages of {0} (the interpreter selected for NN-RAG), comma-separated', python),
      value: 'torchvision',
    });
    if (pkgs) entry = { location: pkgs.trim(), kind: 'python-env' };
  }
  return entry;
}
