/** Installed packages of a Python interpreter, indexed in place (no cloning). */
import { execFile } from 'child_process';
import { NnragError } from '../base/errors';
import { openFolder } from './folder';
import type { OpenedSource, SourceConfig } from './types';

export interface InstalledPackage {
  name: string;
  dir: string | null;
  version: string | null;
  license: string | null;
  distribution: string | null;
}

const PROBE = `
import importlib.util, json, sys
try:
    import importlib.metadata as md
except ImportError:
    md = None
out = []
dists = md.packages_distributions() if md and hasattr(md, "packages_distributions") else {}
for name in sys.argv[1:]:
    item = {"name": name, "dir": None, "version": None, "license": None, "distribution": None}
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        spec = None
    if spec is not None and spec.submodule_search_locations:
        item["dir"] = list(spec.submodule_search_locations)[0]
    dist = (dists.get(name) or [name])[0]
    if md:
        try:
            meta = md.metadata(dist)
            item["version"] = md.version(dist)
            item["license"] = meta.get("License")
            item["distribution"] = dist
        except Exception:
            pass
    out.append(item)
print(json.dumps(out))
`;

export function probePackages(python: string, names: string[], timeoutMs = 60_000): Promise<InstalledPackage[]> {
  return new Promise((resolve, reject) => {
    execFile(python, ['-I', '-c', PROBE, ...names], { timeout: timeoutMs, maxBuffer: 4 << 20 }, (err, stdout, stderr) => {
      if (err) {
        const code = (err as NodeJS.ErrnoException).code;
        reject(
          new NnragError(
            'interpreter',
            code === 'ENOENT' ? `Python interpreter not found: ${python}` : `cannot ask ${python} for packages: ${stderr || err.message}`,
          ),
        );
        return;
      }
      try {
        resolve(JSON.parse(stdout) as InstalledPackage[]);
      } catch {
        reject(new NnragError('interpreter', `unexpected answer from ${python}: ${stdout.slice(0, 200)}`));
      }
    });
  });
}

/** One source per installed package; a package that is not installed is an error naming it. */
export async function openPythonPackages(python: string, names: string[], base: Partial<SourceConfig> = {}): Promise<OpenedSource[]> {
  for (const n of names) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(n)) throw new NnragError('bad-source', `'${n}' is not an importable package name`);
  }
  const found = await probePackages(python, names);
  const missing = found.filter((p) => !p.dir).map((p) => p.name);
  if (missing.length) {
    throw new NnragError('bad-source', `not installed for ${python} (or not a package): ${missing.join(', ')}`);
  }
  const sources: OpenedSource[] = [];
  for (const p of found) {
    const src = await openFolder(
      { ...base, location: p.dir!, name: base.name ?? p.name, kind: 'python-env', python },
      {
        kind: 'python-env',
        license: normaliseLicense(p.license),
        commit: p.version ? `${p.distribution ?? p.name}==${p.version}` : undefined,
      },
    );
    sources.push(src);
  }
  return sources;
}

function normaliseLicense(raw: string | null): string | undefined {
  if (!raw || raw === 'UNKNOWN') return undefined;
  const t = raw.trim();
  return t.length > 60 ? t.split('\n')[0].slice(0, 60) : t;
}
