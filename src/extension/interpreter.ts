/**
 * The interpreter that validates pulled blocks: the one picked for NN-RAG (`nnrag.pythonPath`, what "Select Python
 * Interpreter" writes) wins; else the Python extension's active environment when that extension is installed
 * (following its changes), else `python.defaultInterpreterPath`, else `python3`.
 */
import { execFile } from 'child_process';
import { PythonExtension } from '@vscode/python-extension';
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
  return repositories.map((r) => (r.kind === 'python-env' && !r.python ? { ...r, python } : r));
}

export class InterpreterService implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Interpreter>();
  readonly onDidChange = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [this.changed];
  /** The Python extension's published API (`@vscode/python-extension`), when that extension is installed. */
  private api: PythonExtension | undefined;
  /** interpreter path -> module name -> installed? */
  private readonly installed = new Map<string, Map<string, Promise<boolean>>>();

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
    if (given) return updateSetting('pythonPath', given);
    const current = this.current();
    // the environments the Python extension knows, then the usual ones
    const known = (this.api?.environments?.known ?? []).map((e) => e.path);
    const candidates = [current.path, ...known, '/usr/bin/python3', 'python3'].filter((v, i, a) => a.indexOf(v) === i);
    const choice = await vscode.window.showQuickPick(
      [...candidates.map((p) => ({ label: p, description: p === current.path ? `in use (${current.source})` : '' })), { label: vscode.l10n.t('Enter a path…'), description: '' }],
      { title: vscode.l10n.t('Python interpreter for validating blocks') },
    );
    if (!choice) return undefined;
    let value = choice.label;
    if (choice.label === vscode.l10n.t('Enter a path…')) {
      const typed = await vscode.window.showInputBox({ prompt: vscode.l10n.t('Path to a Python interpreter with torch'), value: current.path });
      if (!typed) return undefined;
      value = typed;
    }
    return updateSetting('pythonPath', value);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
