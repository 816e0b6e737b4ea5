/** `nn-rag status` and `nn-rag update`: pulled files against their upstream. */
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { findTarget } from '../core/store/target';
import { bodyHash, parseProvenance, readProvenance, splitPulled } from '../core/emit/emit';
import { manifestPath, writeManifests } from '../core/emit/manifest';
import type { Manifest } from '../core/emit/manifest';
import { merge3 } from '../core/emit/merge';
import { upstreamStatus } from '../core/emit/upstream';
import { NnragError } from '../core/base/errors';
import { PythonParser } from '../core/parse/parser';
import { openPullSession, pullBlock } from '../core/pull/pull';
import { loadModuleTable } from '../core/resolve/loadTable';
import { flag } from './env';
import { EXIT, openDb, parse } from './env';
import type { CliEnv } from './env';

export async function statusCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, {});
  const roots = args.positionals.length ? args.positionals : ['.'];
  const files: string[] = [];
  const walk = async (p: string, depth: number): Promise<void> => {
    const st = await fsp.lstat(p).catch(() => undefined);
    if (!st) throw new NnragError('not-found', `no such file or folder: ${p}`);
    if (st.isSymbolicLink()) return;
    if (st.isFile() && p.endsWith('.py')) files.push(p);
    else if (st.isDirectory() && depth < 8) {
      for (const e of await fsp.readdir(p)) if (!e.startsWith('.') && e !== 'node_modules' && e !== '__pycache__') await walk(path.join(p, e), depth + 1);
    }
  };
  for (const r of roots) await walk(r, 0);
  const db = await openDb(args, env);
  const rows: { file: string; target: string; state: string; reason?: string; changed: { names: string[]; path: string; state: string }[] }[] = [];
  try {
    for (const f of files) {
      const { provenance: prov, damaged } = parseProvenance(await fsp.readFile(f, 'utf8').catch(() => ''));
      if (damaged) {
        rows.push({ file: f, target: '?', state: 'damaged', reason: damaged, changed: [] });
        continue;
      }
      if (!prov) continue;
      let known = true;
      try {
        findTarget(db, prov.target);
      } catch {
        known = false;
      }
      const up = upstreamStatus(db, prov);
      rows.push({
        file: f,
        target: prov.target,
        state: known ? up.state : 'unknown',
        ...(known ? {} : { reason: `${prov.target} is not in this index` }),
        changed: up.entries.filter((e) => e.state === 'changed' || e.state === 'missing').map((e) => ({ names: e.names, path: e.path, state: e.state })),
      });
    }
  } finally {
    db.close();
  }
  if (flag(args, 'json')) env.out(`${JSON.stringify(rows, null, 1)}\n`);
  else if (!rows.length) env.out('no pulled files here\n');
  else {
    for (const r of rows) {
      const what =
        r.state === 'changed'
          ? `upstream changed: ${r.changed.map((c) => `${c.names.join(', ')} (${c.path}${c.state === 'missing' ? ', gone' : ''})`).join('; ')}`
          : r.state === 'damaged'
            ? `damaged header: ${r.reason}`
            : r.state === 'unknown'
              ? (r.reason ?? 'repository not in this index')
              : 'up to date';
      env.out(`${r.file}  ${r.target}  ${what}\n`);
    }
  }
  // like `git diff --exit-code`: 1 when something is out of date
  return rows.some((r) => r.state === 'changed' || r.state === 'damaged') ? EXIT.failed : EXIT.ok;
}

/**
 * `nn-rag update FILE`: pulls the file's block again from the index and keeps the user's edits: a three-way merge
 * of the edited body and the new upstream body against the body as pulled (kept in NAME.manifest.json). Conflicts
 * are written with markers, and the command exits 1.
 */
export async function updateCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, {});
  if (args.positionals.length !== 1) throw new NnragError('usage', 'update needs one pulled FILE');
  const file = path.resolve(args.positionals[0]);
  const text = await fsp.readFile(file, 'utf8').catch(() => {
    throw new NnragError('not-found', `no such file: ${file}`);
  });
  const { provenance: prov, damaged } = parseProvenance(text);
  if (damaged) throw new NnragError('bad-source', `${file} has a damaged NN-RAG header (${damaged}); pull the block again into another file and compare`);
  if (!prov) throw new NnragError('bad-source', `${file} has no NN-RAG provenance record: it was not pulled, or its header was removed`);
  const manifest = (await fsp
    .readFile(manifestPath(file), 'utf8')
    .then((t) => JSON.parse(t) as Manifest)
    .catch(() => undefined)) as Manifest | undefined;
  const db = await openDb(args, env);
  const scratch = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-update-'));
  try {
    const parser = await PythonParser.create(env.assets);
    const fresh = path.join(scratch, path.basename(file));
    await pullBlock(openPullSession(db, loadModuleTable(db)), findTarget(db, prov.target), { parser, out: fresh, validate: false, manifest: false });
    const freshText = await fsp.readFile(fresh, 'utf8');
    const freshProv = readProvenance(freshText)!;
    const upstream = splitPulled(freshText);
    const mine = splitPulled(text);
    const edited = bodyHash(text) !== prov.hash;
    const say = (line: Record<string, unknown>, human: string): void => env.out(flag(args, 'json') ? `${JSON.stringify({ file, ...line })}\n` : `${human}\n`);
    if (freshProv.hash === prov.hash) {
      if (JSON.stringify(freshProv.definitions) !== JSON.stringify(prov.definitions)) {
        // the same code, but the header records other sources (an edited header): it is written again
        await fsp.writeFile(file, `${upstream.header}${mine.body}`, 'utf8');
        say({ state: 'header-refreshed' }, `${file}: the code is up to date with ${prov.target}; its header recorded other sources and was written again`);
        return EXIT.ok;
      }
      say({ state: 'up-to-date' }, `${file}: up to date with ${prov.target}`);
      return EXIT.ok;
    }
    let body: string;
    let conflicts = 0;
    if (!edited) body = upstream.body;
    else if (manifest?.base_body !== undefined) {
      const merged = merge3(manifest.base_body, mine.body, upstream.body);
      body = merged.text;
      conflicts = merged.conflicts;
    } else {
      throw new NnragError('bad-source', `${file} was edited since the pull and ${path.basename(manifestPath(file))} keeps no base to merge against; pull again into another file and compare`);
    }
    await fsp.writeFile(file, `${upstream.header}${body}`, 'utf8');
    await writeManifests(file, freshProv, undefined, upstream.body);
    if (conflicts) {
      say({ state: 'conflicts', conflicts }, `${file}: updated from upstream with ${conflicts} conflict${conflicts === 1 ? '' : 's'} between your edits and upstream; resolve the <<<<<<< markers`);
      return EXIT.failed;
    }
    say({ state: edited ? 'merged' : 'updated' }, `${file}: updated from upstream${edited ? ', your edits kept' : ''}`);
    return EXIT.ok;
  } finally {
    db.close();
    await fsp.rm(scratch, { recursive: true, force: true });
  }
}
