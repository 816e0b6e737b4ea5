/** The third-party packages the file imports that the pull's interpreter cannot import (none without one). */
async function absentPackages(closure: ClosureResult, options: PullOptions, stdlib: ReadonlySet<string> | undefined): Promise<Set<string>> {
  if (!options.python) return new Set();
  const tops = [
    ...new Set(
      [...closure.externals.values()]
        .filter((e) => !e.native && !e.indexed)
        .map((e) => e.module.split('.')[0])
        .filter((m) => m !== 'torch' && !stdlib?.has(m)),
    ),
  ];
  if (!tops.length) return new Set();
  const importable = await importableModules(options.python, tops);
  return new Set(tops.filter((m) => !importable.has(m)));
}

/** Stage 2 of a pull, emit: the file's text made in memory from the resolution. */
import { repoKind } from '../sources/kinds';
import type { Emission, PullOptions, Resolution } from './types';
import { resolveBlock } from './stageResolve';
import type { PullSession } from './session';
import { createHash } from 'crypto';
import { performance } from 'perf_hooks';
import type { ClassRef } from '../store/target';
import { emitFile } from '../emit/emit';
import type { PythonParser } from '../parse/parser';
import { shortenDocstrings } from '../emit/docstrings';
import type { ClosureResult } from '../resolve/closure';
import type { ModuleRecord } from '../resolve/moduleTable';
import { importedUncommitted, isImported } from '../store/sourceText';
import { committedBlob } from '../sources/open';
import { importableModules, stdlibModules } from '../validate/interpreter';
import { nativeNote } from './natives';

/** `text` with its docstrings cut (docstrings.ts), from the session's memory when it was cut before. */
function shortened(session: PullSession, text: string, parser: PythonParser): string {
  if (!text.includes('"""') && !text.includes("'''")) return text;
  const key = createHash('sha1').update(text).digest('hex');
  let out = session.shortened.get(key);
  if (out === undefined) {
    if (session.shortened.size > 20_000) session.shortened.clear();
    out = shortenDocstrings(text, (t) => parser.docstrings(t));
    session.shortened.set(key, out);
  }
  return out;
}

/** Names of the other repositories whose code the closure inlines. */
function inlinedNames(session: PullSession, closure: ClosureResult, rootRepo: number): string[] {
  const ids = new Set<number>();
  for (const n of closure.units.values()) if (n.rec.repoId !== rootRepo) ids.add(n.rec.repoId);
  return [...ids].map((id) => session.repos.get(id)?.name ?? String(id)).sort();
}

const committed = new WeakMap<PullSession, Map<string, Promise<string | undefined>>>();

/** Of the modules `recs`, the files of a local git checkout whose indexed blob is not the one its commit holds at that
 * path (changed or added and not committed); each asked of the checkout once a session. */
async function uncommittedFiles(session: PullSession, recs: ModuleRecord[]): Promise<Set<number>> {
  let known = committed.get(session);
  if (!known) committed.set(session, (known = new Map()));
  const out = new Set<number>();
  for (const rec of recs) {
    const repo = session.repos.get(rec.repoId);
    const file = session.files.get(rec.fileId);
    if (!repo || !file) continue;
    // an imported repository: its exporter's checkout said which files were not committed (the archive's record)
    if (isImported(repo)) {
      if (importedUncommitted(repo, file.path)) out.add(rec.fileId);
      continue;
    }
    if (!repoKind(repo.kind).workingTree || !repo.commit || !/^[0-9a-f]{40}$/.test(repo.commit)) continue;
    const key = `${repo.root}\0${repo.commit}\0${file.path}`;
    let blob = known.get(key);
    if (!blob) known.set(key, (blob = committedBlob(repo.root, repo.commit, file.path)));
    if ((await blob) !== file.hash) out.add(rec.fileId);
  }
  return out;
}

/** Stage 2 of a pull, emit: the file's text made in memory from the resolution (what was inlined and why in its
 * header, the files a checkout has not committed in its provenance). Nothing is written. */
export async function emitResolution(session: PullSession, resolved: Resolution, options: PullOptions): Promise<Emission> {
  const { ref, target, closure, natives } = resolved;
  // the files of a git checkout that its commit does not hold as indexed (changes not committed): said in provenance
  const uncommitted = new Set<number>();
  const emitCtx = {
    parsed: (r: ModuleRecord) => session.parsed.get(r.fileId)!,
    source: (r: ModuleRecord) => {
      const repo = session.repos.get(r.repoId)!;
      const file = session.files.get(r.fileId)!;
      return {
        repo: repo.name,
        url: repo.url,
        location: repo.location,
        commit: repo.commit,
        license: repo.license,
        path: file.path,
        blob: file.hash,
        ...(uncommitted.has(r.fileId) ? { uncommitted: true } : {}),
      };
    },
    // the interpreter's own standard library, when there is one to ask
    stdlib: options.python ? await stdlibModules(options.python) : undefined,
    shorten: options.fullDocstrings ? undefined : (text: string) => shortened(session, text, options.parser),
  };
  const inlinedRepos = inlinedNames(session, closure, ref.repoId);
  const notes = inlinedRepos.length
    ? [
        `also inlined: code of ${inlinedRepos.join(', ')} (${options.inline === 'all' ? 'as asked' : `indexed, and not importable by ${options.python ?? 'the interpreter'}`})`,
      ]
    : [];
  notes.push(...natives.map(nativeNote));
  if (closure.keptMissing.length)
    notes.push(
      `imported inside functions as written, found nowhere (compiled, or gone): ${closure.keptMissing.join(', ')}; only code that runs them needs them`,
    );
  if (closure.leftOut.length) {
    const shown = closure.leftOut.slice(0, 12).join(', ');
    const more = closure.leftOut.length > 12 ? ` and ${closure.leftOut.length - 12} more` : '';
    notes.push(`left out, as the original never ran them while validated (nn-rag pull --full keeps them): ${shown}${more}`);
  }
  for (const id of await uncommittedFiles(
    session,
    [...closure.units.values()].map((n) => n.rec),
  ))
    uncommitted.add(id);
  const emitted = emitFile(closure, { ...emitCtx, notes, provided: options.shared, absent: await absentPackages(closure, options, emitCtx.stdlib) }, target);
  return { ...resolved, emitted, inlinedRepos, emitCtx, timings: { ...resolved.timings, t2: performance.now() } };
}

/** Resolves and emits `ref`'s file in memory (nothing written, nothing run). */
export async function emitBlock(session: PullSession, ref: ClassRef, options: PullOptions): Promise<Emission> {
  return emitResolution(session, await resolveBlock(session, ref, options), options);
}
