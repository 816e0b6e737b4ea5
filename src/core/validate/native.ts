/**
 * `--build-native`: a block that needs a repository's own compiled operator (a C++ extension built with
 * `torch.utils.cpp_extension`) gets it built from the indexed repository's CPU sources, inside the sandbox, with the
 * user's interpreter (its torch headers, g++ and ninja), and cached by the sources' content and the interpreter.
 * Which sources: pull/nativeSources.ts.
 */
import { readOwnFile, removeTree } from '../base/files';
import * as fs from 'fs';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { createHash } from 'crypto';
import { NnragError } from '../base/errors';
import { interpreterInfo, torchVersionKey } from './interpreter';
import { runInSandbox } from './bubblewrap';
export { NATIVE_FOLDER } from './report';

/** What building a compiled module takes, found in its repository. */
export interface NativeSources {
  /** The Python module the code imports (`pkg._C`). */
  module: string;
  repo: string;
  /** The name the module is built and loaded under (its `PyInit_` name). */
  buildName: string;
  /** The C++ files compiled (repository-relative), and the CUDA ones left out. */
  sources: string[];
  cudaLeftOut: string[];
  /** Every file staged for the build (sources and headers), repository-relative, with its bytes. */
  files: Map<string, Uint8Array>;
  /** Folders searched for included headers besides the sources' own (repository-relative). */
  include?: string[];
}

export interface NativeBuild {
  module: string;
  buildName: string;
  /** The built shared object, in the cache. */
  file: string;
  /** The name the pulled file loads it by, under NATIVE_FOLDER beside it. */
  fileName: string;
  key: string;
  cached: boolean;
  seconds: number;
  sources: string[];
  cudaLeftOut: string[];
}

/** The cache key of a build: what is compiled, by which interpreter and torch. */
async function buildKey(spec: NativeSources, python: string): Promise<string> {
  const h = createHash('sha256').update('nnrag-native-1\0').update(spec.buildName).update('\0');
  for (const [rel, bytes] of [...spec.files].sort(([a], [b]) => a.localeCompare(b))) h.update(rel).update('\0').update(bytes).update('\0');
  for (const s of spec.sources) h.update(`src:${s}\0`);
  for (const d of spec.include ?? []) h.update(`inc:${d}\0`);
  const info = await interpreterInfo(python);
  h.update(info.executable)
    .update('\0')
    .update(await torchVersionKey(python));
  return h.digest('hex').slice(0, 24);
}

/**
 * Builds `spec` with `python` in the sandbox (or takes the cached build); the result is a shared object in
 * `cacheDir/<key>/`. Throws a 'native-build' error naming the compiler's last lines when it does not build.
 */
export async function buildNative(
  spec: NativeSources,
  options: { python: string; runner: string; cacheDir: string; signal?: AbortSignal; timeoutMs?: number },
): Promise<NativeBuild> {
  const started = Date.now();
  const key = await buildKey(spec, options.python);
  const folder = path.join(options.cacheDir, key);
  const so = path.join(folder, `${spec.buildName}.so`);
  const fileName = `${spec.buildName}-${key.slice(0, 12)}.so`;
  const result = (cached: boolean): NativeBuild => ({
    module: spec.module,
    buildName: spec.buildName,
    file: so,
    fileName,
    key,
    cached,
    seconds: (Date.now() - started) / 1000,
    sources: spec.sources,
    cudaLeftOut: spec.cudaLeftOut,
  });
  if (fs.existsSync(path.join(folder, 'built.json')) && fs.existsSync(so)) return result(true);
  if (!spec.sources.length) {
    throw new NnragError(
      'native-build',
      `${spec.module} of ${spec.repo} has only CUDA sources (${spec.cudaLeftOut.join(', ')}): it cannot be built for the CPU`,
    );
  }
  await fsp.mkdir(options.cacheDir, { recursive: true });
  const stage = await fsp.mkdtemp(path.join(options.cacheDir, '.stage-'));
  try {
    const src = path.join(stage, 'src');
    for (const [rel, bytes] of spec.files) {
      // repository-relative paths only: nothing is written outside the staging folder
      if (path.isAbsolute(rel) || rel.split(/[\\/]/).includes('..')) throw new NnragError('native-build', `${spec.repo} names a source outside itself: ${rel}`);
      await fsp.mkdir(path.join(src, path.dirname(rel)), { recursive: true });
      await fsp.writeFile(path.join(src, rel), bytes);
    }
    const out = path.join(stage, 'out');
    await fsp.mkdir(out);
    const includes = [...new Set([...spec.sources.map((s) => path.posix.dirname(s)), ...(spec.include ?? [])])];
    const run = await runInSandbox(options.python, path.join(path.dirname(path.resolve(options.runner)), 'build_native.py'), {
      inHost: src,
      workHost: out,
      args: (inDir, workDir) => [
        JSON.stringify({
          name: spec.buildName,
          sources: spec.sources.map((s) => `${inDir}/${s}`),
          include: ['.', ...includes].map((d) => `${inDir}/${d}`),
          out: workDir,
        }),
      ],
      timeoutMs: options.timeoutMs ?? 900_000,
      signal: options.signal,
    });
    const built = path.join(out, `${spec.buildName}.so`);
    if (run.code !== 0 || !fs.existsSync(built)) {
      // the compiler's and the loader's own lines (`op.cpp:1:10: fatal error: ...`), not the command that ran it
      const lines = run.stderr.split('\n').filter((l) => l.trim());
      const cause = lines.filter((l) => /:\d+:\d+: (?:fatal )?error:|undefined (?:reference|symbol)|ImportError/.test(l));
      const said = (cause.length ? cause.slice(0, 4) : lines.slice(-4)).join('\n');
      const cuda = spec.cudaLeftOut.length ? ` (CUDA sources left out: ${spec.cudaLeftOut.join(', ')}; the operator may have no CPU implementation)` : '';
      throw new NnragError('native-build', `building ${spec.module} from ${spec.sources.join(', ')} of ${spec.repo} failed${cuda}: ${said.slice(0, 800)}`);
    }
    await fsp.mkdir(folder, { recursive: true });
    // only a regular file the build made in its own folder leaves it (a link to a host file would carry that file)
    const bytes = await readOwnFile(built, out).catch((err: unknown) => {
      throw new NnragError(
        'native-build',
        `building ${spec.module} of ${spec.repo} left no ordinary file: ${err instanceof Error ? err.message : String(err)}`,
      );
    });
    await fsp.rm(so, { force: true });
    await fsp.writeFile(so, bytes, { flag: 'wx' });
    await fsp.writeFile(
      path.join(folder, 'built.json'),
      JSON.stringify({ module: spec.module, repo: spec.repo, sources: spec.sources, python: options.python }, null, 2),
    );
    return result(false);
  } finally {
    await removeTree(stage);
  }
}
