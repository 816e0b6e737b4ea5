/** `nn-rag status` and `nn-rag update`: pulled files against their upstream. */
import { reportVerdict, STALE_WORDS, verdictWords } from '../core/pull/pulledState';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import type { ClassRef } from '../core/store/target';
import { parseProvenance, readProvenance } from '../core/emit/pulledFile';
import { readManifest, writeManifests } from '../core/emit/manifest';
import { writeText } from '../core/emit/writeSafe';
import { NnragError } from '../core/base/errors';
import { companionsOf } from '../core/pull/shared';
import { pulledFileStatus } from '../core/pull/update';
import type { PulledFileStatus } from '../core/pull/update';
import type { ValidationReport } from '../core/validate/runner';
import { createTwoFilesPatch } from 'diff';
import { EXIT, cacheDir, flag, intOpt, openDb, parse, pythonOf } from './env';
import type { CliEnv } from './env';
import { Workspace } from '../core/workspace/workspace';
import { warnBeforeValidating } from './pullCommands';
import { DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S } from '../core/validate/limits';

/** The `.py` files under `roots` (files and folders; links, hidden folders and caches are skipped). */
async function pythonFilesUnder(roots: string[]): Promise<string[]> {
  const files: string[] = [];
  const walk = async (p: string, depth: number, top: boolean): Promise<void> => {
    const st = await fsp.lstat(p).catch(() => undefined);
    if (!st) throw new NnragError('not-found', `no such file or folder: ${p}`);
    if (st.isSymbolicLink()) return;
    if (st.isFile() && (p.endsWith('.py') || top)) files.push(p);
    else if (st.isDirectory() && depth < 8) {
      for (const e of (await fsp.readdir(p)).sort())
        if (!e.startsWith('.') && e !== 'node_modules' && e !== '__pycache__') await walk(path.join(p, e), depth + 1, false);
    }
  };
  for (const r of roots) await walk(r, 0, true);
  return files;
}

export async function statusCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, {});
  const files = await pythonFilesUnder(args.positionals.length ? args.positionals : ['.']);
  const db = await openDb(args, env);
  const rows: (PulledFileStatus & { file: string })[] = [];
  try {
    for (const f of files) {
      const st = pulledFileStatus(db, await fsp.readFile(f, 'utf8').catch(() => ''));
      if (st) rows.push({ file: f, ...st });
    }
  } finally {
    db.close();
  }
  if (flag(args, 'json')) env.out(`${JSON.stringify(rows, null, 1)}\n`);
  else if (!rows.length) env.out('no pulled files here\n');
  else {
    for (const r of rows) {
      const upstream = r.changed.length
        ? `upstream changed: ${r.changed.map((c) => `${c.names.join(', ')} (${c.path}${c.state === 'missing' ? ', gone' : ''})`).join('; ')}`
        : undefined;
      const what =
        r.state === 'conflicted'
          ? `${r.conflicts} unresolved conflict${r.conflicts === 1 ? '' : 's'} (<<<<<<< markers)${upstream ? `; ${upstream}` : ''}`
          : r.state === 'changed'
            ? upstream!
            : r.state === 'damaged'
              ? `damaged header: ${r.reason}`
              : r.state === 'unknown'
                ? (r.reason ?? 'repository not in this index')
                : r.sourcesDiffer
                  ? 'up to date; its header names other sources than the index holds (nn-rag update writes them again)'
                  : 'up to date';
      env.out(`${r.file}  ${r.target}  ${what}${r.edited && r.state !== 'damaged' ? '; edited locally' : ''}${r.stale ? `; ${STALE_WORDS}` : ''}\n`);
    }
  }
  // like `git diff --exit-code`: 1 when something is out of date
  return rows.some((r) => r.state === 'changed' || r.state === 'damaged' || r.state === 'conflicted') ? EXIT.failed : EXIT.ok;
}

/**
 * `nn-rag update FILE|FOLDER...`: pulls each pulled file's block again from the index and keeps the user's edits: a
 * three-way merge of the edited body and the new upstream body against the body as pulled (kept in .nnrag/NAME.manifest.json).
 * Conflicts are written with markers (exit 1). `--dry-run` prints what would change as a unified diff and writes
 * nothing; an updated file is validated again unless `--no-validate`.
 */
export async function updateCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, { 'dry-run': {}, 'no-validate': {}, python: { value: true }, timeout: { value: true }, 'memory-mb': { value: true } });
  if (!args.positionals.length) throw new NnragError('usage', 'update needs pulled FILEs or folders');
  const files: string[] = [];
  for (const f of await pythonFilesUnder(args.positionals)) {
    const { provenance, damaged } = parseProvenance(await fsp.readFile(f, 'utf8').catch(() => ''));
    // a file named on the command line must be a pulled one; in a folder, the others are left alone
    if (args.positionals.includes(f) || provenance || damaged) files.push(path.resolve(f));
  }
  if (!files.length) throw new NnragError('not-found', `no pulled files in ${args.positionals.join(', ')}`);
  if (!flag(args, 'dry-run') && !flag(args, 'no-validate')) await warnBeforeValidating(env, pythonOf(args, env), intOpt(args, 'memory-mb', DEFAULT_MEMORY_MB));
  const db = await openDb(args, env);
  const scratch = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-update-'));
  let failed = false;
  try {
    const ws = Workspace.over(db, env.assets, { runner: env.assets.runner, cacheDir: cacheDir(args, env) });
    for (const file of files) {
      let outcome: UpdateOutcome;
      try {
        outcome = await updateOne(file, { ws, scratch, dryRun: flag(args, 'dry-run') });
      } catch (err) {
        // one file that cannot be updated (a damaged header, no base to merge) does not stop the others
        if (files.length === 1 || !(err instanceof NnragError)) throw err;
        env.out(flag(args, 'json') ? `${JSON.stringify({ file, state: 'error', message: err.message })}\n` : `${file}: not updated: ${err.message}\n`);
        failed = true;
        continue;
      }
      // validated as a pull is, and compared with its original where that can be imported, unless the user's edits
      // are in it (they are meant to differ)
      const say = (line: Record<string, unknown>, human: string): void => env.out(flag(args, 'json') ? `${JSON.stringify({ file, ...line })}\n` : `${human}\n`);
      if (outcome.diff !== undefined) env.out(outcome.diff);
      let validation: ValidationReport | undefined;
      if (outcome.written && !flag(args, 'no-validate')) {
        const text = await fsp.readFile(file, 'utf8');
        validation = await ws.validateUpdated(file, text, outcome.ref, outcome.line.state === 'updated', {
          companions: companionsOf(file, text),
          python: pythonOf(args, env),
          runner: env.assets.runner,
          timeoutMs: intOpt(args, 'timeout', DEFAULT_TIMEOUT_S) * 1000,
          memoryMb: intOpt(args, 'memory-mb', DEFAULT_MEMORY_MB),
          signal: env.signal,
        });
      }
      const tier = validation
        ? `; validated again: ${verdictWords(reportVerdict(validation))}${validation.category ? `; why: ${validation.message}` : ''}`
        : '';
      say(
        { ...outcome.line, ...(validation ? { validation: { ok: validation.ok, tier: validation.tier, category: validation.category ?? null } } : {}) },
        `${outcome.human}${tier}`,
      );
      if (outcome.failed || (validation && !validation.ok)) failed = true;
    }
  } finally {
    db.close();
    await fsp.rm(scratch, { recursive: true, force: true });
  }
  return failed ? EXIT.failed : EXIT.ok;
}

interface UpdateOutcome {
  line: Record<string, unknown>;
  human: string;
  /** The file was written (and can be validated again). */
  written: boolean;
  failed: boolean;
  /** With --dry-run: what would change, as a unified diff. */
  diff?: string;
  /** The block the file holds. */
  ref?: ClassRef;
}

async function updateOne(file: string, { ws, scratch, dryRun }: { ws: Workspace; scratch: string; dryRun: boolean }): Promise<UpdateOutcome> {
  const text = await fsp.readFile(file, 'utf8').catch(() => {
    throw new NnragError('not-found', `no such file: ${file}`);
  });
  const manifest = await readManifest(file);
  const plan = await ws.planUpdate(text, manifest?.base_body, scratch, file, path.dirname(file));
  const target = plan.provenance.target;
  if (plan.state === 'up-to-date') return { written: false, failed: false, line: { state: 'up-to-date' }, human: `${file}: up to date with ${target}` };
  let w: { written: boolean; diff?: string } = { written: false };
  if (dryRun) w = { written: false, diff: createTwoFilesPatch(file, file, text, plan.next!, 'yours', 'after update') };
  else {
    await writeText(file, plan.next!);
    // the manifest says what the header written says (the base kept when the update did not move it)
    await writeManifests(file, readProvenance(plan.next!) ?? plan.provenance, undefined, plan.base);
    w = { written: true };
  }
  if (plan.state === 'header-refreshed') {
    return {
      ...w,
      written: false,
      failed: false,
      line: { state: 'header-refreshed' },
      human: `${file}: the code is up to date with ${target}; its header recorded other sources${dryRun ? ' and would be written again' : ' and was written again'}`,
    };
  }
  const would = dryRun ? 'would be ' : '';
  if (plan.state === 'conflicts') {
    const n = plan.conflicts;
    return {
      ...w,
      written: false,
      failed: true,
      line: { state: 'conflicts', conflicts: n, dryRun },
      human: `${file}: ${would}updated from upstream with ${n} conflict${n === 1 ? '' : 's'} between your edits and upstream${dryRun ? '' : '; resolve the <<<<<<< markers'}`,
    };
  }
  const edited = plan.state === 'merged';
  return {
    ...w,
    ref: plan.ref,
    failed: false,
    line: { state: edited ? 'merged' : 'updated', dryRun },
    human: `${file}: ${would}updated from upstream${edited ? ', your edits kept' : ''}`,
  };
}
