/** `nn-rag spec` and `nn-rag report`: neutral specifications and the batch extraction report. */
import { promises as fsp } from 'fs';
import * as path from 'path';
import { listBlockTargets } from '../core/store/target';
import { joinInside, writeText } from '../core/emit/writeSafe';
import { errorMessage, NnragError } from '../core/base/errors';
import { indexStats } from '../core/store/stats';
import { TIERS } from '../core/validate/runner';
import { flag, intOpt, opt } from './env';
import { EXIT, openDb, parse } from './env';
import type { CliEnv } from './env';
import { Workspace } from '../core/workspace/workspace';
import { mergeBatches, recordVerdicts } from '../core/pull/batch';
import type { BatchReport, BatchSummary, ExtractionReport } from '../core/pull/batch';
import { reportHtml } from './reportHtml';

export async function specCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, { all: {}, repo: { value: true }, 'out-dir': { value: true }, limit: { value: true } });
  const all = flag(args, 'all');
  if (!all && args.positionals.length !== 1) throw new NnragError('usage', 'spec needs one TARGET, or --all --out-dir DIR');
  if (all && !opt(args, 'out-dir')) throw new NnragError('usage', 'spec --all needs --out-dir DIR');
  const db = await openDb(args, env);
  try {
    const ws = Workspace.over(db, env.assets);
    if (!all) {
      const spec = await ws.spec(args.positionals[0]);
      env.out(`${JSON.stringify(spec, null, flag(args, 'json') ? 1 : 2)}\n`);
      return EXIT.ok;
    }
    const outDir = path.resolve(opt(args, 'out-dir')!);
    const targets = listBlockTargets(db, opt(args, 'repo')).slice(0, intOpt(args, 'limit', Number.MAX_SAFE_INTEGER));
    const index: { target: string; file?: string; error?: string }[] = [];
    for (const [i, target] of targets.entries()) {
      if (env.signal?.aborted) break;
      try {
        const ref = ws.target(target);
        const spec = await ws.spec(ref);
        const file = joinInside(outDir, ref.repo, `${ref.module}.${ref.name}.json`);
        await writeText(file, `${JSON.stringify(spec, null, 1)}\n`, outDir);
        index.push({ target, file: path.relative(outDir, file) });
      } catch (err) {
        index.push({ target, error: errorMessage(err) });
      }
      if (env.tty && !flag(args, 'json')) env.err(`\r\x1b[K[spec] ${i + 1}/${targets.length} ${target}`);
    }
    if (env.tty && !flag(args, 'json')) env.err('\r\x1b[K');
    await writeText(path.join(outDir, 'index.json'), `${JSON.stringify({ schema: 'nn-rag/spec-index@1', specs: index }, null, 1)}\n`, outDir);
    const failed = index.filter((x) => x.error).length;
    const line = { written: index.length - failed, failed, index: path.join(outDir, 'index.json') };
    env.out(flag(args, 'json') ? `${JSON.stringify(line)}\n` : `wrote ${line.written} specifications (${failed} failed); index ${line.index}\n`);
    return failed ? EXIT.failed : EXIT.ok;
  } finally {
    db.close();
  }
}

export async function reportCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, { from: { value: true }, html: { value: true }, merge: {}, out: { value: true } });
  if (flag(args, 'merge')) return mergeCommand(args, env);
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
    await writeText(path.resolve(html), reportHtml(report));
  }
  if (flag(args, 'json')) env.out(`${JSON.stringify(report, null, 1)}\n`);
  else env.out(reportText(report, html));
  return EXIT.ok;
}

/**
 * `report --merge REPORTS... --out FILE [--db DB]`: the shards' reports as one (`report.json` as one machine's
 * `pull --all` writes it), and with `--db`, every shard's verdict recorded in the index, so search's
 * `--validation` filters see the merged catalog.
 */
async function mergeCommand(args: ReturnType<typeof parse>, env: CliEnv): Promise<number> {
  const files = args.positionals;
  const out = opt(args, 'out');
  if (!files.length || !out)
    throw new NnragError(
      'usage',
      'report --merge needs the shard reports and --out FILE: nn-rag report --merge OUT/report.shard-*.json --out merged.json [--db F]',
    );
  const reports: BatchReport[] = [];
  for (const f of files) {
    try {
      const r = JSON.parse(await fsp.readFile(f, 'utf8')) as BatchReport;
      if (!r.summary || !Array.isArray(r.items)) throw new Error('no batch summary and items in it');
      reports.push(r);
    } catch (err) {
      throw new NnragError('bad-source', `cannot read the batch report ${f}: ${errorMessage(err)}`);
    }
  }
  const merged = mergeBatches(reports);
  let recorded: ReturnType<typeof recordVerdicts> | undefined;
  if (opt(args, 'db')) {
    const db = await openDb(args, env, true, true);
    try {
      recorded = recordVerdicts(db, merged.items);
      await db.save();
    } finally {
      db.close();
    }
  }
  await writeText(path.resolve(out), JSON.stringify({ summary: merged.summary, shards: merged.shards, items: merged.items }, null, 1));
  const s = merged.summary;
  if (flag(args, 'json'))
    env.out(
      `${JSON.stringify({ ...s, shards: merged.shards, recorded: recorded?.recorded ?? null, not_in_index: recorded?.notInIndex ?? [], report: path.resolve(out) })}\n`,
    );
  else {
    env.out(
      `merged ${files.length} reports: ${s.attempted} blocks, validated ${s.validated} (${s.pass_rate}%), equivalent ${s.equivalent} of ${s.compared} compared; ${s.seconds_per_block} s per block\n`,
    );
    if (merged.shards.missing.length) env.out(`shards missing: ${merged.shards.missing.join(', ')} of ${merged.shards.count}\n`);
    if (recorded)
      env.out(
        `recorded ${recorded.recorded} verdicts in the index${recorded.notInIndex.length ? `; ${recorded.notInIndex.length} targets are not in it` : ''}\n`,
      );
    env.out(`report: ${path.resolve(out)}\n`);
  }
  return merged.shards.missing.length ? EXIT.failed : EXIT.ok;
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
    ...(Object.keys(r.failure_categories).length
      ? Object.entries(r.failure_categories)
          .sort((a, b) => b[1] - a[1])
          .map(([c, n]) => `  ${c.padEnd(20)} ${n}`)
      : ['  none']),
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
