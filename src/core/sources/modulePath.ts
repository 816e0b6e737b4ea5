/** Dotted import paths for files of a source, the way Python would import them from the source root. */

/**
 * `a/b/c.py` -> `a.b.c`, `a/b/__init__.py` -> `a.b` (a package); a `src/` layout's `src.` is dropped;
 * `prefix` is prepended when the root itself is a package (`torchvision`).
 */
export function modulePathOf(relPath: string, prefix: string, srcLayout: boolean): { module: string; isPackage: boolean } {
  let p = relPath.replace(/\\/g, '/').replace(/\.pyi?$/, '');
  if (srcLayout && p.startsWith('src/')) p = p.slice(4);
  const parts = p.split('/').filter(Boolean);
  let isPackage = false;
  if (parts[parts.length - 1] === '__init__') {
    parts.pop();
    isPackage = true;
  }
  const all = prefix ? [...prefix.split('.'), ...parts] : parts;
  return { module: all.join('.'), isPackage };
}

/** True when every part is a valid Python identifier (files like `setup-old.py` cannot be imported). */
export function isImportable(module: string): boolean {
  return module.length > 0 && module.split('.').every((p) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(p));
}
