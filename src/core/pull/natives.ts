/**
 * A pull's compiled operators (`--build-native`): the modules the closure found with no Python source, looked up in
 * the indexed repositories' C++ sources, built (or taken from the cache) and copied beside the pulled file.
 */
import { readOwnFile } from '../base/files';
import * as path from 'path';
import { errorMessage } from '../base/errors';
import type { Problem } from '../resolve/closure';
import type { RepoRow } from '../store/sourceText';
import { buildNative, NATIVE_FOLDER } from '../validate/native';
import { findNativeSources, scanRepository } from './nativeSources';
import type { RepoScan } from './nativeSources';
import type { NativeBuild, NativeSources } from '../validate/native';
import { writeText } from '../emit/writeSafe';

export interface NativeOutcome {
  builds: NativeBuild[];
  /** Why a module was not built, by the name the closure needs. */
  failed: Map<string, string>;
}

/** Per pull session: each repository scanned once, and each module's answer. */
const found = new WeakMap<object, { scans: Map<number, Promise<RepoScan | undefined>>; answers: Map<string, Promise<NativeSources | undefined>> }>();

/** The sources of compiled module `qualname` in the repositories (the block's own first), cached per session. */
export function nativeSourcesOf(session: { repos: Map<number, RepoRow> }, rootRepo: number, qualname: string): Promise<NativeSources | undefined> {
  let known = found.get(session);
  if (!known) found.set(session, (known = { scans: new Map(), answers: new Map() }));
  const memo = known;
  let hit = memo.answers.get(qualname);
  if (!hit) {
    hit = (async () => {
      const repos = [...session.repos.values()].sort((a, b) => Number(b.id === rootRepo) - Number(a.id === rootRepo));
      for (const repo of repos) {
        let scan = memo.scans.get(repo.id);
        if (!scan) memo.scans.set(repo.id, (scan = scanRepository(repo).catch(() => undefined)));
        const scanned = await scan;
        const spec = scanned && (await findNativeSources(scanned, qualname).catch(() => undefined));
        if (spec) return spec;
      }
      return undefined;
    })();
    memo.answers.set(qualname, hit);
  }
  return hit;
}

/** Builds every compiled module the closure's `native-extension` problems name. */
export async function buildNatives(
  session: { repos: Map<number, RepoRow> },
  rootRepo: number,
  problems: Problem[],
  options: { python?: string; runner?: string; cacheDir: string; signal?: AbortSignal },
): Promise<NativeOutcome> {
  const builds = new Map<string, NativeBuild>();
  const failed = new Map<string, string>();
  for (const p of problems.filter((q) => q.kind === 'native-extension')) {
    const spec = await nativeSourcesOf(session, rootRepo, p.name);
    if (!spec) {
      failed.set(p.name, `${p.detail}, and no C++ sources that build it were found in the indexed repositories (--build-native)`);
      continue;
    }
    if (builds.has(spec.module)) continue;
    if (!options.python || !options.runner) {
      failed.set(p.name, `${p.detail}: building it needs an interpreter with torch (--python)`);
      continue;
    }
    try {
      builds.set(spec.module, await buildNative(spec, { python: options.python, runner: options.runner, cacheDir: options.cacheDir, signal: options.signal }));
    } catch (err) {
      failed.set(p.name, errorMessage(err));
    }
  }
  return { builds: [...builds.values()], failed };
}

/** Copies the built operators into NATIVE_FOLDER beside `out` (never outside `root`). */
export async function placeNatives(builds: NativeBuild[], out: string, root: string | undefined): Promise<void> {
  for (const b of builds) await writeText(path.join(path.dirname(out), NATIVE_FOLDER, b.fileName), await readOwnFile(b.file), root ?? path.dirname(out));
}

/** The header's line for a built operator: what it is, what it was built from, how to build it again. */
export function nativeNote(b: NativeBuild): string {
  const cuda = b.cudaLeftOut.length ? `; CUDA sources left out: ${b.cudaLeftOut.join(', ')}` : '';
  return `needs the compiled operator ${b.module}, built for the CPU from ${b.sources.join(', ')} (${NATIVE_FOLDER}/${b.fileName} beside this file; nn-rag pull --build-native builds it again)${cuda}`;
}
