/**
 * Where a compiled module's C++ sources are in an indexed repository (for `--build-native`, validate/native.ts
 * builds them): the `setup.py` extension that names the module (its literal source list), else the C++ file that
 * binds a Python module (`PYBIND11_MODULE(TORCH_EXTENSION_NAME | name, m)`) with the C++ files beside and below it.
 * CUDA sources (`.cu`, `cuda/` folders, `*_cuda.cpp`) are left out: an operator with no CPU implementation fails to
 * load and says so.
 */
import { repoKind } from '../sources/kinds';
import * as fs from 'fs';
import { promises as fsp } from 'fs';
import * as path from 'path';
import * as git from 'isomorphic-git';
import { NnragError } from '../base/errors';
import { isImported } from '../store/sourceText';
import type { RepoRow } from '../store/sourceText';
import { SKIP_DIRS as SOURCE_SKIP_DIRS } from '../sources/folder';
import type { NativeSources } from '../validate/native';

const CPP = /\.(?:cpp|cc|cxx)$/;
const HEADER = /\.(?:h|hpp|hh|hxx|inl|cuh)$/;
const CUDA = /(?:\.cu$|(?:^|\/)cuda\/|_cuda\.(?:cpp|cc|cxx)$|_gpu\.(?:cpp|cc|cxx)$)/;
/** Other accelerators' sources (their SDKs' headers are not here): left out like CUDA's. */
const DEVICE = /(?:^|\/)(?:npu|mlu|mps|musa|hip|rocm|xpu|dipu|diopi|ascend|parrots)\//;
/** What a source never lists, and build outputs and vendored code (another project's C++). */
const SKIP_DIRS = new Set([...SOURCE_SKIP_DIRS, 'build', 'dist', 'third_party', 'docs']);
const MAX_FILE = 4 << 20;

/** The repository's files whose names `want` accepts (read on demand, never beyond a size cap). */
async function repoFiles(repo: RepoRow, want: (rel: string) => boolean): Promise<Map<string, () => Promise<Uint8Array>>> {
  const out = new Map<string, () => Promise<Uint8Array>>();
  // an imported index's rows name another machine's folders: nothing of them is read here
  if (isImported(repo) || !repo.root) return out;
  if (repoKind(repo.kind).tree === 'git-objects' && repo.commit) {
    const gitdir = repo.root;
    for (const rel of await git.listFiles({ fs, gitdir, ref: repo.commit })) {
      if (!want(rel) || rel.split('/').some((p) => SKIP_DIRS.has(p))) continue;
      out.set(rel, async () => (await git.readBlob({ fs, gitdir, oid: repo.commit!, filepath: rel })).blob);
    }
    return out;
  }
  const root = repoKind(repo.kind).tree === 'folder' ? repo.root : null;
  if (!root || !fs.existsSync(root)) return out;
  const walk = async (dir: string, rel: string, depth: number): Promise<void> => {
    if (depth > 10) return;
    for (const e of await fsp.readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory() && !SKIP_DIRS.has(e.name) && !e.name.startsWith('.')) await walk(path.join(dir, e.name), r, depth + 1);
      else if (e.isFile() && want(r)) {
        const full = path.join(dir, e.name);
        out.set(r, async () => {
          if ((await fsp.stat(full)).size > MAX_FILE) throw new NnragError('usage', `${r} is too large to build from`);
          return fsp.readFile(full);
        });
      }
    }
  };
  await walk(root, '', 0);
  return out;
}

/** The text of a balanced call starting at `open` (the index of its '('). */
function callText(text: string, open: number): string {
  let depth = 0;
  for (let i = open; i < text.length && i < open + 20_000; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')' && --depth === 0) return text.slice(open, i + 1);
  }
  return text.slice(open, open + 20_000);
}

/**
 * The sources of the compiled module `qualname` needs (the module itself or a name inside it), found in `repo`;
 * undefined when the repository has none.
 */
/** What a repository holds for building compiled modules: its C++ files (read on demand), the extensions its
 * setup.py files declare, and the C++ files that bind a Python module. Scanned once per repository and pull session. */
export interface RepoScan {
  repo: RepoRow;
  all: Map<string, () => Promise<Uint8Array>>;
  declared: { names: string[]; sources: string[]; setup: string }[];
  binders: { rel: string; name: string }[];
  claimed: Set<string>;
}

export async function scanRepository(repo: RepoRow): Promise<RepoScan> {
  const all = await repoFiles(repo, (rel) => CPP.test(rel) || HEADER.test(rel) || /\.cu$/.test(rel) || /(?:^|\/)setup\.py$/.test(rel));
  const text = async (rel: string): Promise<string> => Buffer.from(await all.get(rel)!()).toString('utf8');
  // the extensions setup.py declares, with their sources written out: the surest answer
  const declared: RepoScan['declared'] = [];
  for (const setup of [...all.keys()].filter((r) => r.endsWith('setup.py'))) {
    const src = await text(setup);
    const base = path.posix.dirname(setup) === '.' ? '' : `${path.posix.dirname(setup)}/`;
    for (const m of src.matchAll(/(?:CppExtension|CUDAExtension|Extension)\s*\(\s*(?:name\s*=\s*)?['"]([\w.]+)['"]/g)) {
      const call = callText(src, src.indexOf('(', m.index));
      const listed = [...call.matchAll(/['"]([^'"\n]+\.(?:cpp|cc|cxx|cu))['"]/g)].map((x) => path.posix.normalize(`${base}${x[1]}`));
      declared.push({ names: [m[1], m[1].split('.').pop()!], sources: listed, setup });
    }
  }
  // the C++ files that bind a module (none setup.py gives another module)
  const claimed = new Set(declared.flatMap((d) => d.sources));
  const binders: RepoScan['binders'] = [];
  for (const rel of [...all.keys()].filter((r) => CPP.test(r) && !claimed.has(r))) {
    const bind = /PYBIND11_MODULE\s*\(\s*(\w+)\s*,/.exec(await text(rel));
    if (bind) binders.push({ rel, name: bind[1] });
  }
  return { repo, all, declared, binders, claimed };
}

export async function findNativeSources(repo: RepoRow | RepoScan, qualname: string): Promise<NativeSources | undefined> {
  const { all, declared, binders, claimed } = 'all' in repo ? repo : await scanRepository(repo);
  const name = 'all' in repo ? repo.repo.name : repo.name;
  const parts = qualname.split('.');
  // shortest first, below the top package (which has Python source): `pkg._C.op` is the name op of module pkg._C
  const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('.')).slice(parts.length > 1 ? 1 : 0);
  for (const module of prefixes) {
    const d = declared.find((e) => e.names[0] === module) ?? declared.find((e) => !e.names[0].includes('.') && e.names[0] === module.split('.').pop());
    if (d && d.sources.length && d.sources.every((l) => all.has(l))) return staged(module, name, 'TORCH_EXTENSION_NAME', d.sources, all);
  }
  // else a C++ file that binds the module, with the C++ files beside and below it
  for (const module of prefixes) {
    const last = module.split('.').pop()!;
    // a literal module name is certain; TORCH_EXTENSION_NAME only where the file's path names the module, or where
    // it is the repository's only binding and the name looks like a compiled module's (`_C`, `_ext`)
    const generic = binders.filter((b) => b.name === 'TORCH_EXTENSION_NAME');
    const hit =
      binders.find((b) => b.name === last) ??
      generic.find((b) => b.rel.split('/').some((seg) => seg.replace(/\.\w+$/, '').replace(/^_+/, '') === last.replace(/^_+/, ''))) ??
      (generic.length === 1 && last.startsWith('_') ? generic[0] : undefined);
    if (!hit) continue;
    const dir = path.posix.dirname(hit.rel);
    const near = [...all.keys()].filter((r) => (CPP.test(r) || /\.cu$/.test(r)) && !claimed.has(r) && (dir === '.' || r.startsWith(`${dir}/`)));
    return staged(module, name, hit.name, near, all);
  }
  return undefined;
}

async function staged(module: string, repo: string, bindName: string, sources: string[], all: Map<string, () => Promise<Uint8Array>>): Promise<NativeSources> {
  const cpu = sources.filter((s) => !CUDA.test(s) && !DEVICE.test(s)).sort();
  const cuda = sources.filter((s) => CUDA.test(s)).sort();
  // the sources and every header in the repository (an include is relative to its file, a source's folder, or a
  // folder of headers: one where a header that some staged file includes by a relative name is found)
  const files = new Map<string, Uint8Array>();
  const headers = [...all.keys()].filter((r) => HEADER.test(r) && !DEVICE.test(r));
  for (const rel of [...cpu, ...headers]) files.set(rel, await all.get(rel)!());
  const include = new Set<string>();
  for (const bytes of files.values()) {
    for (const m of Buffer.from(bytes)
      .toString('utf8')
      .matchAll(/^\s*#\s*include\s+"([^"]+)"/gm)) {
      const wanted = path.posix.normalize(m[1]);
      if (wanted.startsWith('..')) continue;
      for (const h of headers) if (h.endsWith(`/${wanted}`)) include.add(h.slice(0, -wanted.length - 1));
    }
  }
  const buildName = bindName === 'TORCH_EXTENSION_NAME' ? `nnrag_${module.replace(/\W/g, '_')}` : bindName;
  return { module, repo, buildName, sources: cpu, cudaLeftOut: cuda, files, include: [...include].sort() };
}
