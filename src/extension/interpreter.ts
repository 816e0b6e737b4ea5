/**
 * The interpreter that validates pulled blocks: the Python extension's active environment when that extension
 * is installed (following its changes), else `python.defaultInterpreterPath`, else `nnrag.pythonPath`, else `python3`.
 */
import * as vscode from 'vscode';

interface PythonApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

export interface Interpreter {
  path: string;
  source: 'python extension' | 'python.defaultInterpreterPath' | 'nnrag.pythonPath' | 'PATH';
}

export class InterpreterService implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Interpreter>();
  readonly onDidChange = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [this.changed];
  private api: PythonApi | undefined;

  async init(): Promise<void> {
    const ext = vscode.extensions.getExtension<PythonApi>('ms-python.python');
    if (ext) {
      try {
        this.api = ext.isActive ? ext.exports : await ext.activate();
        const sub = this.api?.environments?.onDidChangeActiveEnvironmentPath(() => this.changed.fire(this.current()));
        if (sub) this.disposables.push(sub);
      } catch {
        this.api = undefined;
      }
    }
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('nnrag.pythonPath') || e.affectsConfiguration('python.defaultInterpreterPath')) this.changed.fire(this.current());
      }),
    );
  }

  current(): Interpreter {
    const fromExt = this.api?.environments?.getActiveEnvironmentPath()?.path;
    if (fromExt) return { path: fromExt, source: 'python extension' };
    const def = vscode.workspace.getConfiguration('python').get<string>('defaultInterpreterPath');
    if (def && def !== 'python') return { path: def, source: 'python.defaultInterpreterPath' };
    const own = vscode.workspace.getConfiguration('nnrag').get<string>('pythonPath');
    if (own) return { path: own, source: 'nnrag.pythonPath' };
    return { path: 'python3', source: 'PATH' };
  }

  /** Lets the user type or pick an interpreter; writes `nnrag.pythonPath`. */
  async pick(): Promise<void> {
    const current = this.current();
    const candidates = ['/usr/bin/python3', 'python3', current.path].filter((v, i, a) => a.indexOf(v) === i);
    const choice = await vscode.window.showQuickPick(
      [...candidates.map((p) => ({ label: p, description: p === current.path ? `in use (${current.source})` : '' })), { label: vscode.l10n.t('Enter a path…'), description: '' }],
      { title: vscode.l10n.t('Python interpreter for validating blocks') },
    );
    if (!choice) return;
    let value = choice.label;
    if (choice.label === vscode.l10n.t('Enter a path…')) {
      const typed = await vscode.window.showInputBox({ prompt: vscode.l10n.t('Path to a Python interpreter with torch'), value: current.path });
      if (!typed) return;
      value = typed;
    }
    await vscode.workspace.getConfiguration('nnrag').update('pythonPath', value, vscode.ConfigurationTarget.Global);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
