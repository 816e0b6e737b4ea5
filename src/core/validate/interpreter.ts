/**
 * What an interpreter is, asked of it once with a short script of ours (no block code runs): its executable, version,
 * folders and whether it has torch; its standard library and which modules it can import; what identifies its torch.
 */
import { execFile } from 'child_process';
import { NnragError } from '../base/errors';

/** What an interpreter is, asked of it once (no block code runs for this). */
export interface InterpreterInfo {
  /** sys.executable: what the sandbox runs (a venv's own python, so the venv applies). */
  executable: string;
  version: string;
  hasTorch: boolean;
  /** Folders the interpreter reads: prefixes, the executable's folder, sys.path entries. */
  folders: string[];
}

const PROBE = `import sys, os, json, importlib.util
folders = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable))] + sys.path
print(json.dumps({"executable": sys.executable, "version": sys.version.split()[0], "hasTorch": importlib.util.find_spec("torch") is not None, "folders": [f for f in folders if f and os.path.isdir(f)]}))`;

export const asked = new Map<string, Promise<unknown>>();

/**
 * Runs `code` with the interpreter in isolated mode (no block code: questions about the interpreter itself) and
 * parses the JSON of its last line; cached per interpreter, code and arguments while it succeeds.
 */
function askPython<T>(python: string, code: string, args: string[] = []): Promise<T> {
  const key = [python, code, ...args].join('\0');
  let known = asked.get(key) as Promise<T> | undefined;
  if (!known) {
    known = new Promise<T>((resolve, reject) => {
      execFile(
        python,
        ['-I', '-c', code, ...args],
        { timeout: 30_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' } },
        (err, stdout, stderr) => {
          if (err) {
            const errno = (err as NodeJS.ErrnoException).code;
            reject(
              new NnragError(
                'interpreter',
                errno === 'ENOENT'
                  ? `Python interpreter not found: ${python}`
                  : `cannot run ${python}: ${String(stderr || err.message)
                      .trim()
                      .split('\n')
                      .pop()}`,
              ),
            );
            return;
          }
          try {
            resolve(JSON.parse(stdout.trim().split('\n').pop() ?? '') as T);
          } catch {
            reject(new NnragError('interpreter', `${python} does not answer like a Python interpreter`));
          }
        },
      );
    });
    asked.set(key, known);
    known.catch(() => asked.delete(key));
  }
  return known;
}

/** Asks the interpreter where it lives and whether it has torch (cached per path). */
export function interpreterInfo(python: string): Promise<InterpreterInfo> {
  return askPython<InterpreterInfo>(python, PROBE);
}

const STDLIB_NAMES = 'import json, sys\nprint(json.dumps(sorted(getattr(sys, "stdlib_module_names", []))))';

/** The interpreter's standard-library modules (`sys.stdlib_module_names`, Python 3.10+); undefined when it cannot say. */
export async function stdlibModules(python: string): Promise<ReadonlySet<string> | undefined> {
  const names = await askPython<string[]>(python, STDLIB_NAMES).catch(() => []);
  return names.length ? new Set(names) : undefined;
}

const FIND_SPEC = 'import importlib.util, json, sys\nprint(json.dumps([n for n in sys.argv[1:] if importlib.util.find_spec(n) is not None]))';

/** Which of `names` (top-level modules) the interpreter can import, asked without importing them (find_spec); none
 * when the interpreter cannot answer. */
export async function importableModules(python: string, names: string[]): Promise<Set<string>> {
  const wanted = [...new Set(names)].filter((n) => /^[\p{L}_][\p{L}\p{N}_]*$/u.test(n)).sort();
  return new Set(await askPython<string[]>(python, FIND_SPEC, wanted).catch(() => []));
}

const TORCH_VERSION =
  'import hashlib, importlib.util, json, os\nspec = importlib.util.find_spec("torch")\nloc = list(spec.submodule_search_locations or []) if spec else []\nfile = os.path.join(loc[0], "version.py") if loc else ""\nprint(json.dumps(hashlib.sha256(open(file, "rb").read()).hexdigest() if file and os.path.exists(file) else ""))';

/** What identifies the interpreter's torch for a cache key (its version.py, read without importing torch). */
export async function torchVersionKey(python: string): Promise<string> {
  return askPython<string>(python, TORCH_VERSION).catch(() => '');
}
