/**
 * The interpreter that validates pulled blocks: the one picked for NN-RAG (`nnrag.pythonPath`, what "Select Python
 * Interpreter" writes) wins; else the Python extension's active environment when that extension is installed
 * (following its changes), else `python.defaultInterpreterPath`, else `python3`.
 */
import { repoKind } from '../core/sources/kinds';
import { execFile } from 'child_process';
import { PythonExtension } from '@vscode/python-extension';
import { accessSync, constants as fsConstants, promises as fsp, statSync } from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import type { SourceConfig } from '../core/sources/types';
import { affects, setting, updateSetting } from './config';

export interface Interpreter {
  path: string;
  source: 'python extension' | 'python.defaultInterpreterPath' | 'nnrag.pythonPath' | 'PATH';
}

/**
 * The repositories to index, each installed-package entry without its own `python` read from `python`, the
 * interpreter selected for NN-RAG (Add Repository writes none: the packages are those of the interpreter in use, and
 * selecting another one indexes that one's).
 */
export function withInterpreter(repositories: SourceConfig[], python: string): SourceConfig[] {
  return repositories.map((r) => (repoKind(r.kind).installed && !r.python ? { ...r, python } : r));
}

export interface InterpreterVersions {
  python?: string;
  /** The installed torch distribution's version; undefined without torch. */
  torch?: string;
  /** Why the interpreter could not be asked (not found, not Python). */
  error?: string;
}

/**
 * The file a command runs: a bare name is looked up on PATH as a shell would, a path is made absolute. Links are not
 * followed (a venv's `python` links to the system's but is another interpreter).
 */
export function onPath(command: string, env: NodeJS.ProcessEnv = process.env): string {
  if (command.includes('/')) return path.resolve(command);
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, command);
    try {
      accessSync(file, fsConstants.X_OK);
      if (statSync(file).isFile()) return path.resolve(file);
    } catch {
      // not here
    }
  }
  return command;
}

/** The Python and torch versions of an interpreter, read from its metadata (torch is not imported). */
export async function describeInterpreter(python: string): Promise<InterpreterVersions> {
  // what the path is, said in words before anything runs it (a folder, a file that is not a program)
  if (python.includes('/')) {
    const st = await fsp.stat(python).catch(() => undefined);
    if (!st) return { error: 'not found' };
    if (st.isDirectory()) return { error: 'a folder, not a program' };
    if (!(st.mode & 0o111)) return { error: 'not executable' };
  }
  return new Promise<InterpreterVersions>((resolve) => {
    const code =
      'import json, platform\ntry:\n    from importlib.metadata import version\n    t = version("torch")\nexcept Exception:\n    t = None\nprint(json.dumps({"python": platform.python_version(), "torch": t}))';
    execFile(python, ['-I', '-c', code], { timeout: 15_000 }, (err, stdout) => {
      // (never the command line in a message: it holds the whole probe)
      if (err) return resolve({ error: (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'not found' : 'not a Python interpreter' });
      try {
        const v = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as { python?: string; torch?: string | null };
        resolve({ python: v.python, torch: v.torch ?? undefined });
      } catch {
        resolve({ error: 'not a Python interpreter' });
      }
    });
  });
}

/** Whether a failed validation says only that the interpreter has no torch (nothing about the file). */
export function lacksTorch(v: { category?: string | null; message?: string | null }): boolean {
  return v.category === 'missing-package' && /'torch'/.test(v.message ?? '');
}

/** "Python 3.11.2 · torch 2.14.1", "Python 3.11.2 · no torch", "not found". */
export function versionsLabel(v: InterpreterVersions): string {
  if (v.error) return v.error;
  return `Python ${v.python ?? '?'} · ${v.torch ? `torch ${v.torch}` : 'no torch'}`;
}

/** Where the interpreters used before are remembered, and how many. */
const SEEN_KEY = 'nnrag.interpretersUsed';
const MAX_SEEN = 12;

export class InterpreterService implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Interpreter>();
  readonly onDidChange = this.changed.event;
  private readonly chosen = new vscode.EventEmitter<string>();
  /** The user chose an interpreter in the picker (and confirmed it, when it has no torch). */
  readonly onDidChoose = this.chosen.event;
  private readonly disposables: vscode.Disposable[] = [this.changed, this.chosen];
  /** The Python extension's published API (`@vscode/python-extension`), when that extension is installed. */
  private api: PythonExtension | undefined;
  /** interpreter path -> module name -> installed? */
  private readonly installed = new Map<string, Map<string, Promise<boolean>>>();
  /** interpreter path -> its Python and torch versions, asked once while the interpreter in use stays the same */
  private readonly versions = new Map<string, Promise<InterpreterVersions>>();

  /** `seen`: where the interpreters the user used are remembered (the extension's global state), so the picker keeps
   * offering them after a switch. */
  constructor(private readonly seen?: vscode.Memento) {
    // a change of interpreter (or of its packages, when the user re-selects it) asks the versions again
    this.disposables.push(this.changed.event(() => this.versions.clear()));
  }

  /** The Python and torch versions of `python` (`describeInterpreter`), asked once until the interpreter changes. */
  describe(python: string): Promise<InterpreterVersions> {
    let answer = this.versions.get(python);
    if (!answer) {
      answer = describeInterpreter(python);
      this.versions.set(python, answer);
    }
    return answer;
  }

  /** What the picker offers: the one in use, those used before (most recent first), the environments the Python
   * extension knows, then the usual ones. */
  candidates(): string[] {
    const known = (this.api?.environments?.known ?? []).map((e) => e.path);
    // one entry per executable: "python3" is the file PATH finds (a venv's link to it stays its own entry)
    const seen = new Set<string>();
    return [this.current().path, ...this.used(), ...known, '/usr/bin/python3', 'python3'].filter((v) => {
      const file = onPath(v);
      if (seen.has(file)) return false;
      seen.add(file);
      return true;
    });
  }

  /** The interpreters used before, most recent first. */
  private used(): string[] {
    return (this.seen?.get<string[]>(SEEN_KEY) ?? []).filter((p) => typeof p === 'string');
  }

  private remember(python: string): void {
    void this.seen?.update(SEEN_KEY, [python, ...this.used().filter((p) => p !== python)].slice(0, MAX_SEEN));
  }

  async init(): Promise<void> {
    try {
      this.api = await PythonExtension.api();
      this.disposables.push(this.api.environments.onDidChangeActiveEnvironmentPath(() => this.changed.fire(this.current())));
    } catch {
      // not installed, disabled, or an older extension without the environments API
      this.api = undefined;
    }
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (affects(e, 'pythonPath') || e.affectsConfiguration('python.defaultInterpreterPath')) this.changed.fire(this.current());
      }),
    );
  }

  current(): Interpreter {
    // an explicit pick beats what is inherited, as the setting says
    const own = setting('pythonPath');
    if (own) return { path: own, source: 'nnrag.pythonPath' };
    const fromExt = this.api?.environments?.getActiveEnvironmentPath(vscode.workspace.workspaceFolders?.[0]?.uri)?.path;
    if (fromExt) return { path: fromExt, source: 'python extension' };
    const def = vscode.workspace.getConfiguration('python').get<string>('defaultInterpreterPath');
    if (def && def !== 'python') return { path: def, source: 'python.defaultInterpreterPath' };
    return { path: 'python3', source: 'PATH' };
  }

  /**
   * Would a file `NAME.py` shadow a module the interpreter has installed? Asks the interpreter once per name
   * (`find_spec` finds without importing). Not asked in an untrusted workspace, nor when the interpreter fails.
   */
  hasModule(name: string): Promise<boolean> {
    if (!vscode.workspace.isTrusted || !/^[A-Za-z_]\w*$/.test(name)) return Promise.resolve(false);
    const python = this.current().path;
    let known = this.installed.get(python);
    if (!known) this.installed.set(python, (known = new Map()));
    let answer = known.get(name);
    if (!answer) {
      answer = new Promise((resolve) => {
        const code = `import importlib.util, sys; sys.path = [p for p in sys.path if p]; print(importlib.util.find_spec(${JSON.stringify(name)}) is not None)`;
        execFile(python, ['-I', '-c', code], { timeout: 10_000 }, (err, stdout) => resolve(!err && stdout.trim() === 'True'));
      });
      known.set(name, answer);
    }
    return answer;
  }

  /**
   * Lets the user type or pick an interpreter (or takes `given`); writes `nnrag.pythonPath` where it takes effect and
   * resolves with that scope.
   */
  async pick(given?: string): Promise<string | undefined> {
    const current = this.current();
    if (given) {
      this.remember(current.path);
      this.remember(given);
      return updateSetting('pythonPath', given);
    }
    const candidates = this.candidates();
    const enter = vscode.l10n.t('Enter a path…');
    const quickPick = vscode.window.createQuickPick<vscode.QuickPickItem>();
    quickPick.title = vscode.l10n.t('Python interpreter for validating blocks');
    // (an editor that takes the focus meanwhile, such as the walkthrough, does not close it)
    quickPick.ignoreFocusOut = true;
    const described = new Map<string, string>();
    const render = (): void => {
      quickPick.items = [
        ...candidates.map((p) => ({
          label: p,
          description: [described.get(p) ?? '…', p === current.path ? vscode.l10n.t('in use ({0})', current.source) : ''].filter(Boolean).join(' · '),
        })),
        { label: enter, description: '' },
      ];
    };
    render();
    quickPick.busy = true;
    const withTorch = new Set<string>();
    void Promise.all(
      candidates.map(async (p) => {
        const v = await this.describe(p);
        if (v.torch) withTorch.add(p);
        described.set(p, versionsLabel(v));
        render();
      }),
    ).then(() => {
      quickPick.busy = false;
      // the default: the first with torch (the one in use when it has torch)
      const first = quickPick.items.find((i) => withTorch.has(i.label));
      if (first) quickPick.activeItems = [first];
    });
    const choice = await new Promise<string | undefined>((resolve) => {
      quickPick.onDidAccept(() => resolve(quickPick.selectedItems[0]?.label));
      quickPick.onDidHide(() => resolve(undefined));
      quickPick.show();
    });
    quickPick.dispose();
    if (!choice) return undefined;
    let value = choice;
    if (choice === enter) {
      const typed = await vscode.window.showInputBox({ prompt: vscode.l10n.t('Path to a Python interpreter with torch'), value: current.path });
      if (!typed) return undefined;
      value = typed;
    }
    // one without torch (or that does not run) validates nothing: said before it is taken
    const versions = await this.describe(value);
    if (!versions.torch) {
      const use = vscode.l10n.t('Use Anyway');
      const other = vscode.l10n.t('Choose Another');
      // Choose Another first (the default); one that is not a Python interpreter cannot be used anyway
      const pick = versions.error
        ? await vscode.window.showWarningMessage(
            vscode.l10n.t('{0} is {1}: choose a Python interpreter with torch.', value, versions.error),
            { modal: true },
            other,
          )
        : await vscode.window.showWarningMessage(
            vscode.l10n.t('{0} is Python {1} without torch: pulled blocks cannot be validated with it.', value, versions.python ?? '?'),
            { modal: true },
            other,
            use,
          );
      if (pick === other) return this.pick();
      if (pick !== use) return undefined;
    }
    this.remember(current.path);
    this.remember(value);
    const scope = await updateSetting('pythonPath', value);
    // the choice is confirmed, and the walkthrough's step ticks on it (not on the picker opening), only for an
    // interpreter that can validate (one without torch was kept as asked, and the step is not done)
    if (versions.torch) this.chosen.fire(value);
    void vscode.window.showInformationMessage(
      versions.torch
        ? vscode.workspace.isTrusted
          ? vscode.l10n.t('NN-RAG validates pulled blocks with {0} ({1}).', value, versionsLabel(versions))
          : vscode.l10n.t(
              'NN-RAG will validate pulled blocks with {0} ({1}) once you trust this workspace; validation is off in Restricted Mode.',
              value,
              versionsLabel(versions),
            )
        : vscode.l10n.t('NN-RAG uses {0}, which has no torch: pulled blocks will not be validated.', value),
    );
    return scope;
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
