/** `nn-rag spec` (neutral specifications, one block or a batch) and `nn-rag report` (the paper's tables, or a page). */
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { findTarget, listBlockTargets } from '../core/blocks/target';
import { joinInside } from '../core/emit/writeSafe';
import { bodyHash, parseProvenance, readProvenance, splitPulled } from '../core/emit/emit';
import { manifestPath, writeManifests } from '../core/emit/manifest';
import type { Manifest } from '../core/emit/manifest';
import { merge3 } from '../core/emit/merge';
import { upstreamStatus } from '../core/emit/upstream';
import { errorMessage, NnragError } from '../core/errors';
import { indexStats } from '../core/index/stats';
import type { IndexStats } from '../core/index/stats';
import { PythonParser } from '../core/parse/parser';
import { openPullSession, pullBlock } from '../core/pull';
import { loadModuleTable } from '../core/resolve/loadTable';
import { blockSpec } from '../core/spec/spec';
import { TIERS } from '../core/validate/runner';
import { flag, intOpt, opt } from './args';
import { EXIT, openDb, parse } from './cli';
import type { CliEnv } from './cli';
import type { BatchSummary } from './pullCommands';
import { reportHtml } from './reportHtml';

export async function specCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, { all: {}, repo: { value: true }, 'out-dir': { value: true }, limit: { value: true } });
  const all = flag(args, 'all');
  if (!all && args.positionals.length !== 1) throw new NnragError('usage', 'spec needs one TARGET, or --all --out-dir DIR');
  if (all && !opt(args, 'out-dir')) throw new NnragError('usage', 'spec --all needs --out-dir DIR');
  const db = await openDb(args, env);
  try {
    const parser = await PythonParser.create(env.assets);
    const session = openPullSession(db, loadModuleTable(db));
    if (!all) {
      const spec = await blockSpec(db, findTarget(db, args.positionals[0]), parser, session);
      env.out(`${JSON.stringify(spec, null, flag(args, 'json') ? 1 : 2)}\n`);
      return EXIT.ok;
    }
    const outDir = path.resolve(opt(args, 'out-dir')!);
    const targets = listBlockTargets(db, opt(args, 'repo')).slice(0, intOpt(args, 'limit', Number.MAX_SAFE_INTEGER));
    const index: { target: string; file?: string; error?: string }[] = [];
    for (const [i, target] of targets.entries()) {
      if (env.signal?.aborted) break;
      try {
        const ref = findTarget(db, target);
        const spec = await blockSpec(db, ref, parser, session);
        const file = joinInside(outDir, ref.repo, `${ref.module}.${ref.name}.json`);
        await fsp.mkdir(path.dirname(file), { recursive: true });
        await fsp.writeFile(file, `${JSON.stringify(spec, null, 1)}\n`, 'utf8');
        index.push({ target, file: path.relative(outDir, file) });
      } catch (err) {
        index.push({ target, error: errorMessage(err) });
      }
      if (env.tty && !flag(args, 'json')) env.err(`\r\x1b[K[spec] ${i + 1}/${targets.length} ${target}`);
    }
    if (env.tty && !flag(args, 'json')) env.err('\r\x1b[K');
    await fsp.mkdir(outDir, { recursive: true });
    await fsp.writeFile(path.join(outDir, 'index.json'), `${JSON.stringify({ schema: 'nn-rag/spec-index@1', specs: index }, null, 1)}\n`, 'utf8');
    const failed = index.filter((x) => x.error).length;
    const line = { written: index.length - failed, failed, index: path.join(outDir, 'index.json') };
    env.out(flag(args, 'json') ? `${JSON.stringify(line)}\n` : `wrote ${line.written} specifications (${failed} failed); index ${line.index}\n`);
    return failed ? EXIT.failed : EXIT.ok;
  } finally {
    db.close();
  }
}

/** The batch extraction report, as the paper's tables: what `report --json` prints and the page shows. */
export interface ExtractionReport {
  schema: 'nn-rag/report@1';
  source: string;
  targeted: number;
  extracted: number;
  validated: number;
  pass_rate: number;
  /** Blocks that reached each tier (or beyond). */
  tiers: Record<string, number>;
  failure_categories: Record<string, number>;
  seconds_per_block: number;
  uniqueness: IndexStats['uniqueness'] | null;
  paper: { pass_rate: number; seconds_per_block: number };
}

export async function reportCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, { from: { value: true }, html: { value: true } });
  const from = opt(args, 'from') ?? args.positionals[0];
  if (!from) throw new NnragError('usage', 'report needs the report.json of a batch pull: nn-rag report --from OUT/report.json [--db F] [--html FILE]');
  let batch: { summary: BatchSummary };
  try {
    batch = JSON.parse(await fsp.readFile(from, 'utf8')) as { summary: BatchSummary };
    if (!batch.summary || typeof batch.summary.targeted !== 'number') throw new Error('no batch summary in it');
  } catch (err) {
    throw new NnragError('bad-source', `cannot read the batch report ${from}: ${errorMessage(err)}`);
  }
  let uniqueness: ExtractionReport['uniqueness'] = null;
  // uniqueness comes from the index the batch pulled from, when it is given
  if (opt(args, 'db')) {
    const db = await openDb(args, env);
    uniqueness = indexStats(db).uniqueness;
    db.close();
  }
  const s = batch.summary;
  const tiers: Record<string, number> = {};
  for (const t of TIERS) tiers[t] = s.tiers[t] ?? 0;
  const report: ExtractionReport = {
    schema: 'nn-rag/report@1',
    source: path.resolve(from),
    targeted: s.targeted,
    extracted: s.extracted,
    validated: s.validated,
    pass_rate: s.pass_rate,
    tiers,
    failure_categories: s.categories,
    seconds_per_block: s.seconds_per_block,
    uniqueness,
    paper: { pass_rate: 73, seconds_per_block: 2.5 },
  };
  const html = opt(args, 'html');
  if (html) {
    await fsp.writeFile(html, reportHtml(report), 'utf8');
  }
  if (flag(args, 'json')) env.out(`${JSON.stringify(report, null, 1)}\n`);
  else env.out(reportText(report, html));
  return EXIT.ok;
}

function reportText(r: ExtractionReport, html: string | undefined): string {
  const pct = (n: number): string => (r.targeted ? `${((100 * n) / r.targeted).toFixed(1)}%` : '-');
  const lines = [
    'Table 1: extraction and validation',
    `  blocks targeted      ${r.targeted}`,
    `  extracted            ${r.extracted} (${pct(r.extracted)})`,
    ...Object.entries(r.tiers).map(([t, n]) => `  ${`reached ${t}`.padEnd(20)} ${n} (${pct(n)})`),
    `  validated (forward)  ${r.validated} (${r.pass_rate}% of attempted; the paper: ${r.paper.pass_rate}%)`,
    `  time per block       ${r.seconds_per_block} s (the paper: ${r.paper.seconds_per_block} s)`,
    'Table 2: failure categories',
    ...(Object.keys(r.failure_categories).length ? Object.entries(r.failure_categories).sort((a, b) => b[1] - a[1]).map(([c, n]) => `  ${c.padEnd(20)} ${n}`) : ['  none']),
  ];
  if (r.uniqueness) {
    const u = r.uniqueness;
    lines.push(
      'Table 3: uniqueness of the indexed blocks',
      `  blocks               ${u.blocks}`,
      `  unique, exact        ${u.exact_unique}`,
      `  unique, lexical      ${u.lexical_unique}`,
      `  unique, structural   ${u.structural_unique}`,
    );
  }
  if (html) lines.push(`page: ${path.resolve(html)}`);
  return `${lines.join('\n')}\n`;
}

/** `nn-rag status [PATH...]`: for each pulled file (a .py with a provenance record), whether its upstream changed. */
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
