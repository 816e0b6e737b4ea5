/** Module names for pulled files: how a class name becomes one, and which names a pulled file must not take. */
import { STDLIB } from './stdlib';

/** Packages of the PyTorch world a pulled file must not shadow (besides the standard library). */
export const PROTECTED_PACKAGES: ReadonlySet<string> = new Set([
  'torch',
  'torchvision',
  'torchaudio',
  'numpy',
  'timm',
  'transformers',
  'einops',
  'scipy',
  'PIL',
  'mmcv',
  'mmdet',
  'mmengine',
]);

/** `ResidualBlock` -> `residual_block`, `SEBlock` -> `se_block`. */
export function snakeCase(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase();
}

/** Module names that Python tools run or import by themselves (pytest, site, setuptools, nox, Django, packages):
 * a pulled file named so would run the block's code outside the sandbox. */
export const RESERVED_MODULES: ReadonlySet<string> = new Set([
  'conftest',
  'sitecustomize',
  'usercustomize',
  'setup',
  '__init__',
  '__main__',
  'noxfile',
  'manage',
]);

/** Files that test runners, documentation builders and task runners import or run by convention (pytest, Sphinx,
 * invoke, fabric, doit, paver, nox, setuptools, Django), and folders whose files they do. */
const RUN_BY_CONVENTION = /^(?:test_.*|.*_test|conftest|conf|tasks|fabfile|dodo|pavement|noxfile|setup|manage)\.py$/;
const RUN_BY_CONVENTION_FOLDERS = new Set(['tests', 'test', 'docs', 'doc', 'testing']);

/**
 * Why a code assistant (MCP, a language-model tool) may not write `file` under `root`, beyond `fileNameProblem`: a
 * name or a folder that another tool loads by itself, so the block would run outside the sandbox; else undefined.
 */
export function assistantFileProblem(file: string, root: string): string | undefined {
  const name = file.split(/[\\/]/).pop() ?? file;
  if (RUN_BY_CONVENTION.test(name)) return `'${name}' is a name test runners, documentation builders or task runners load by themselves`;
  const rel = file.startsWith(root) ? file.slice(root.length) : file;
  const folder = rel
    .split(/[\\/]/)
    .slice(0, -1)
    .find((p) => RUN_BY_CONVENTION_FOLDERS.has(p.toLowerCase()));
  if (folder) return `a file in a folder named '${folder}' is loaded by test runners or documentation builders; choose another folder`;
  return undefined;
}

/**
 * Why `name` (a file name, no folders) cannot hold a pulled block, or undefined when it can: not a Python module
 * name, a module Python tools run by themselves, or one that shadows the standard library, a PyTorch-world package
 * or a module the interpreter has installed (`installed`, when known).
 */
export function fileNameProblem(name: string, installed: ReadonlySet<string> = new Set()): string | undefined {
  if (/[\\/]/.test(name) || name.includes('..')) return 'a file name only, without folders';
  if (!/^[A-Za-z_][A-Za-z0-9_]*\.py$/.test(name)) return 'use a Python module name ending in .py (letters, digits, _)';
  const module = name.slice(0, -3);
  if (RESERVED_MODULES.has(module)) return `'${name}' is a file Python tools run by themselves`;
  if (STDLIB.has(module) || PROTECTED_PACKAGES.has(module) || installed.has(module)) return `'${module}' would shadow the module of that name`;
  return undefined;
}
