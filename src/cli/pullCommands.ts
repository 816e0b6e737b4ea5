/** `nn-rag pull` (one block or a batch) and `nn-rag validate`. */
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { performance } from 'perf_hooks';
import { createTwoFilesPatch } from 'diff';
import { bodyHash, readProvenance } from '../core/emit/pulledFile';
import { listBlockTargets } from '../core/store/target';
import { errorMessage, NnragError } from '../core/base/errors';
import { requirementsText } from '../core/pull/pull';
import { companionsOf } from '../core/pull/shared';
import { argumentSetsWords, builtAsWords, reportVerdict, verdictWords } from '../core/pull/pulledState';
import { firstLine } from '../core/base/text';
import type { PullReport } from '../core/pull/types';
import type { JudgeTimings, SideTimings, ValidationReport } from '../core/validate/runner';
import { indexCounts } from '../core/store/stats';
import { describeSandbox } from '../core/validate/bubblewrap';
import { interpreterInfo } from '../core/validate/interpreter';
import { writeText } from '../core/emit/writeSafe';
import { cacheDir, flag, intOpt, opt, pythonOf } from './env';
import { dbPath, EXIT, openDb, parse } from './env';
import type { CliEnv } from './env';
import { Workspace } from '../core/workspace/workspace';
import type { PullRequest } from '../core/workspace/request';
import { nativeDir, originalsDir } from '../core/workspace/request';
import type { IndexDb } from '../core/store/database';
import type { ParsedArgs } from './env';
import type { FileSizes } from '../core/emit/why';
import { summarise } from '../core/pull/batch';
import { observeLine } from './observeLine';
import type { BatchSummary } from '../core/pull/batch';
import { inShard, parseShard, shardReportName } from '../core/pull/shard';
import { DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S } from '../core/validate/limits';

const PULL_OPTIONS = {
  out: { value: true },
  'out-dir': { value: true },
  python: { value: true },
  'no-validate': {},
  timeout: { value: true },
  'memory-mb': { value: true },
  all: {},
  from: { value: true },
  repo: { value: true },
  limit: { value: true },
  'start-from': { value: true },
  jobs: { value: true },
  'no-pool': {},
  requirements: {},
  force: {},
  inline: {},
  'no-inline': {},
  'whole-classes': {},
  'full-docstrings': {},
  full: {},
  pep723: {},
  'build-native': {},
  cache: { value: true },
  'dry-run': {},
  shard: { value: true },
  'shard-count': { value: true },
  'no-observe': {},
};

/** What every pull of one command asks, read from its flags. */
function pullRequestOf(args: ParsedArgs, env: CliEnv, validate: boolean): PullRequest {
  return {
    python: pythonOf(args, env),
    validate,
    timeoutSeconds: intOpt(args, 'timeout', DEFAULT_TIMEOUT_S),
    memoryMb: intOpt(args, 'memory-mb', DEFAULT_MEMORY_MB),
    force: flag(args, 'force'),
    inline: flag(args, 'inline') ? 'all' : flag(args, 'no-inline') ? 'none' : 'auto',
    wholeClasses: flag(args, 'whole-classes'),
    fullDocstrings: flag(args, 'full-docstrings'),
    full: flag(args, 'full'),
    inlineMetadata: flag(args, 'pep723'),
    buildNative: flag(args, 'build-native'),
  };
}

/** The use-case API over `db` for this command (the judge's script, the cache folder of `--cache`). */
function workspaceOf(db: IndexDb, args: ParsedArgs, env: CliEnv): Workspace {
  return Workspace.over(db, env.assets, { runner: env.assets.runner, cacheDir: cacheDir(args, env) });
}

/**
 * Says on stderr, before any block's code runs, what would make validation weaker or stop short: a sandbox weaker
 * than bubblewrap's, or an interpreter without torch (named, with how to choose another).
 */
export async function warnBeforeValidating(env: CliEnv, python: string, memoryMb: number): Promise<void> {
  const sandbox = await describeSandbox(memoryMb);
  if (sandbox.weaker) env.err(`warning: ${sandbox.label}\n`);
  const info = await interpreterInfo(python).catch(() => undefined);
  // (a missing interpreter is reported by the validation itself)
  if (info && !info.hasTorch)
    env.err(`warning: ${python} (Python ${info.version}) has no torch: validation stops at import; choose an interpreter with --python or NNRAG_PYTHON\n`);
}

export async function pullCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, PULL_OPTIONS);
  if (flag(args, 'all') || opt(args, 'from')) return batchPull(args, env);
  if (args.positionals.length > 1 || (args.positionals.length === 1 && opt(args, 'out-dir') !== undefined)) return pullTogetherCommand(args, env);
  if (args.positionals.length !== 1) throw new NnragError('usage', 'pull needs one TARGET (or --all / --from FILE)');
  const out = opt(args, 'out');
  if (!out) throw new NnragError('usage', 'pull needs --out FILE');
  const validate = !flag(args, 'no-validate');
  if (validate && !flag(args, 'dry-run')) await warnBeforeValidating(env, pythonOf(args, env), intOpt(args, 'memory-mb', DEFAULT_MEMORY_MB));
  const db = await openDb(args, env, true, true);
  try {
    const ws = workspaceOf(db, args, env);
    const ref = ws.target(args.positionals[0]);
    const request = pullRequestOf(args, env, validate);
    if (flag(args, 'dry-run')) {
      // what the file would become, as a unified diff against what is there now; nothing is written or run
      const scratch = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-dry-'));
      try {
        const to = path.join(scratch, path.basename(out));
        await ws.pull(ref, { ...request, validate: false }, { out: to, manifest: false, signal: env.signal });
        const before = await fsp.readFile(out, 'utf8').catch(() => undefined);
        const after = await fsp.readFile(to, 'utf8');
        const [was, will] = [before === undefined ? undefined : readProvenance(before), readProvenance(after)];
        if (was && will && was.hash === will.hash && bodyHash(before!) === was.hash && JSON.stringify(was.definitions) === JSON.stringify(will.definitions)) {
          env.out(`${out}: unchanged (the pull would write the same code)\n`);
          return EXIT.ok;
        }
        const patch = createTwoFilesPatch(
          before === undefined ? '/dev/null' : out,
          out,
          before ?? '',
          after,
          before === undefined ? 'new file' : 'now',
          'after pull',
        );
        env.out(patch);
        return EXIT.ok;
      } finally {
        await fsp.rm(scratch, { recursive: true, force: true });
      }
    }
    const report = await ws.pull(ref, request, { out, signal: env.signal, interpreterFailure: 'report' });
    if (flag(args, 'requirements') && report.status !== 'failed') {
      const reqFile = out.replace(/\.py$/, '') + '.requirements.txt';
      await writeText(reqFile, requirementsText(report.requirements, report.imports));
    }
    await db.save();
    if (flag(args, 'json')) {
      env.out(`${JSON.stringify(report, null, 1)}\n`);
    } else {
      env.out(describeReport(report));
    }
    return report.status === 'validated' || (!validate && report.status === 'extracted') ? EXIT.ok : EXIT.failed;
  } finally {
    db.close();
  }
}

function describeReport(r: PullReport): string {
  const lines = [`${r.target}: ${r.status === 'extracted' ? 'written, not validated' : verdictWords(reportVerdict(r))}`];
  if (r.out)
    lines.push(`  wrote ${r.out} (${r.definitions} definition${r.definitions === 1 ? '' : 's'}; imports ${r.imports.join(', ') || 'nothing third-party'})`);
  if (r.manifest) lines.push(`  provenance manifest ${r.manifest}; distributions needed in ${r.requiredRepos}`);
  for (const n of r.natives ?? [])
    lines.push(
      `  compiled operator ${n.module} ${n.cached ? 'taken from the cache' : `built in ${n.seconds.toFixed(1)} s`} from ${n.sources.join(', ')} -> _nnrag_native/${n.file}`,
    );
  if (r.validation?.kwargs || r.validation?.args)
    lines.push(`  ${builtAsWords(r.target.split('.').pop() ?? r.target, r.validation.args, r.validation.kwargs)}`);
  if (r.validation?.input_shapes)
    lines.push(`  forward on inputs ${JSON.stringify(r.validation.input_shapes)} -> ${JSON.stringify(r.validation.output_shapes)}`);
  if (r.sizes) lines.push(`  ${sizesLine(r.sizes)} (why: nn-rag show --deps)`);
  if (r.judged && r.judged.length > 1) lines.push(`  judged ${r.judged.length} times: ${r.judged.map((j) => `${j.stage} (${j.why})`).join('; ')}`);
  // a block that runs but was not compared with its original says why, as `validate` does
  const eq = r.validation?.equivalence;
  if (r.status === 'validated' && r.tier !== 'equivalent' && eq && eq.status !== 'equivalent' && eq.status !== 'differs' && eq.reason)
    lines.push(`  not compared with the original: ${firstLine(eq.reason)}`);
  lines.push(...timeLines(r));
  if (r.category) lines.push(`  why (${r.category}): ${r.message}`);
  else if (r.message) lines.push(`  note: ${r.message}`);
  return `${lines.join('\n')}\n`;
}

/** Where a pull's seconds went: resolving, emitting and judging, and for each run of the judge its sides' steps. */
function timeLines(r: PullReport): string[] {
  const t = r.timings;
  const sec = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
  const out = [`  time: resolve ${sec(t.resolve_ms)}, emit ${sec(t.emit_ms)}, judge ${sec(t.validate_ms)}`];
  for (const j of r.judged ?? []) {
    if (j.seconds === undefined && !j.builders?.length) continue;
    const parts: string[] = [];
    for (const b of j.builders ?? []) parts.push(`${b.name}() ${b.seconds.toFixed(1)} s (${b.ended})`);
    if (j.untried?.length) parts.push(`untried for time: ${j.untried.map((u) => `${u}()`).join(', ')}`);
    if (j.timings) parts.push(judgeTimingsText(j.timings));
    out.push(`    ${j.stage} ${j.seconds !== undefined ? `${j.seconds.toFixed(1)} s` : ''}${parts.length ? `: ${parts.join('; ')}` : ''}`);
  }
  return out;
}

/** A judge's timings in words: each side's steps, the comparison. */
function judgeTimingsText(t: JudgeTimings): string {
  const side = (name: string, s: SideTimings | undefined): string | undefined => {
    if (!s) return undefined;
    if (s.cached) return `${name} cached`;
    const steps = Object.entries(s.steps ?? {})
      .filter(([k]) => k !== 'search' || !('build' in (s.steps ?? {})))
      .map(([k, v]) => `${k} ${(v ?? 0).toFixed(1)}`)
      .join(', ');
    return `${name} ${(s.seconds ?? 0).toFixed(1)} s${steps ? ` (${steps})` : ''}`;
  };
  if (t.reused) return "nothing run: an identical earlier run's failure";
  return [
    t.starting !== undefined ? `starting ${t.starting.toFixed(1)} s` : undefined,
    t.static !== undefined ? `static ${t.static.toFixed(1)} s` : undefined,
    side('original', t.original),
    side('copy', t.copy),
    t.steadiness !== undefined ? `original again to check its gradients ${t.steadiness.toFixed(1)} s` : undefined,
    t.comparing !== undefined ? `comparing ${t.comparing.toFixed(1)} s` : undefined,
  ]
    .filter((x) => x !== undefined)
    .join(', ');
}

function sizesLine(s: FileSizes): string {
  return `${s.total} lines: the block ${s.block}, pulled in with it ${s.pulled}`;
}

/** `show --deps TARGET`: the file a pull would write, in memory: its lines, and why each large definition is in it. */
export async function showDepsCommand(args: ParsedArgs, env: CliEnv): Promise<number> {
  const db = await openDb(args, env);
  try {
    const report = await workspaceOf(db, args, env).explain(args.positionals[0], pullRequestOf(args, env, false), intOpt(args, 'limit', 10));
    const sizes = report.sizes!;
    if (flag(args, 'json')) {
      env.out(
        `${JSON.stringify({ target: report.target, ...sizes, inlinedRepos: report.inlinedRepos ?? [], imports: report.imports, problems: report.problems }, null, 1)}\n`,
      );
      return EXIT.ok;
    }
    const out = [
      `${report.target}`,
      `  ${sizesLine(sizes)}; ${report.definitions - 1} definitions pulled in; imports ${report.imports.join(', ') || 'nothing third-party'}`,
    ];
    if (report.inlinedRepos?.length) out.push(`  inlined from ${report.inlinedRepos.join(', ')}`);
    if (sizes.largest.length) out.push('  largest pulled in (lines, and the references that need it):');
    for (const d of sizes.largest)
      out.push(`    ${String(d.lines).padStart(6)}  ${d.names.join(', ') || '(statement)'}  (${d.module})\n            ${d.chain.join(' -> ')}`);
    for (const p of report.problems) out.push(`  ${p.kind}: ${p.detail}`);
    env.out(`${out.join('\n')}\n`);
    return EXIT.ok;
  } finally {
    db.close();
  }
}

async function batchTargets(args: ReturnType<typeof parse>, db: Awaited<ReturnType<typeof openDb>>): Promise<string[]> {
  const from = opt(args, 'from');
  if (from) {
    let list: unknown;
    try {
      list = JSON.parse(await fsp.readFile(from, 'utf8'));
    } catch (err) {
      throw new NnragError('bad-source', `cannot read the target list ${from}: ${errorMessage(err)}`);
    }
    if (!Array.isArray(list) || !list.every((x) => typeof x === 'string')) {
      throw new NnragError('bad-source', `${from} must hold a JSON array of targets ("module.Class" or "repo:module.Class")`);
    }
    return list as string[];
  }
  return listBlockTargets(db, opt(args, 'repo'));
}

/**
 * `pull A B C --out-dir D`: each block into its own file in D (`residual_block.py`), the definitions several of them
 * need written once into `_nnrag_common.py` beside them and imported by each; then each is validated.
 */
async function pullTogetherCommand(args: ReturnType<typeof parse>, env: CliEnv): Promise<number> {
  const outDir = path.resolve(opt(args, 'out-dir') ?? '.');
  const validate = !flag(args, 'no-validate');
  if (flag(args, 'dry-run')) throw new NnragError('usage', '--dry-run takes one TARGET and --out FILE');
  if (validate) await warnBeforeValidating(env, pythonOf(args, env), intOpt(args, 'memory-mb', DEFAULT_MEMORY_MB));
  const db = await openDb(args, env, true, true);
  try {
    const { reports, shared: sharedLine } = await workspaceOf(db, args, env).pullTogether(args.positionals, outDir, pullRequestOf(args, env, validate), {
      signal: env.signal,
      interpreterFailure: 'report',
    });
    await db.save();
    if (flag(args, 'json')) env.out(`${JSON.stringify({ shared: sharedLine ?? null, reports }, null, 1)}\n`);
    else {
      for (const r of reports) env.out(describeReport(r));
      if (sharedLine) {
        const n = sharedLine.definitions;
        env.out(
          `shared: ${sharedLine.file} holds ${n} definition${n === 1 ? '' : 's'} the files above would each have copied (${sharedLine.names.join(', ') || 'statements'})\n`,
        );
      }
    }
    const ok = (r: PullReport): boolean => r.status === 'validated' || (!validate && r.status === 'extracted');
    return reports.every(ok) ? EXIT.ok : EXIT.failed;
  } finally {
    db.close();
  }
}

/** Observes the local repositories the targets come from (observe.ts), saying so on stderr. */
async function observeFirst(
  ws: Workspace,
  db: Awaited<ReturnType<typeof openDb>>,
  targets: string[],
  args: ReturnType<typeof parse>,
  env: CliEnv,
): Promise<void> {
  const repos = new Set<string>();
  const focus = new Set<string>();
  for (const t of targets) {
    try {
      const ref = ws.target(t);
      repos.add(ref.repo);
      focus.add(ref.name);
    } catch {
      // a target not in the index is reported by its pull
    }
  }
  if (!repos.size) return;
  const summaries = await ws.observe(
    // (the tests of the blocks about to be pulled first: a cap spent on other tests would leave them unobserved)
    {
      python: pythonOf(args, env),
      memoryMb: intOpt(args, 'memory-mb', DEFAULT_MEMORY_MB),
      signal: env.signal,
      focus,
      // (with --build-native, the repository's compiled operators its tests need too)
      buildNative: flag(args, 'build-native') ? { cacheDir: nativeDir({ cacheDir: cacheDir(args, env) })! } : undefined,
      onProgress: (m) => env.err(`[observe] ${m}\n`),
    },
    [...repos],
  );
  for (const s of summaries) {
    if (!s.skipped) env.err(`[observe] ${observeLine(s)}\n`);
  }
  await db.save();
}

async function batchPull(args: ReturnType<typeof parse>, env: CliEnv): Promise<number> {
  const outDir = path.resolve(opt(args, 'out-dir') ?? 'nnrag-pulled');
  const validate = !flag(args, 'no-validate');
  // a shard (`--shard K/N`, `--shard auto` on a cluster) reads the index and saves nothing to it: shards run at
  // once on many machines; `nn-rag report --merge` records every shard's verdicts in the index afterwards
  const shardSpec = opt(args, 'shard');
  const shard = shardSpec ? parseShard(shardSpec, env.env, opt(args, 'shard-count') === undefined ? undefined : intOpt(args, 'shard-count', 1)) : undefined;
  const db = await openDb(args, env, true, !shard);
  const started = performance.now();
  try {
    const all = (await batchTargets(args, db)).filter((t) => !shard || inShard(t, shard));
    const startFrom = intOpt(args, 'start-from', 0);
    const limit = intOpt(args, 'limit', all.length);
    const targets = all.slice(startFrom, startFrom + limit);
    const ws = workspaceOf(db, args, env);
    // validation runs in a pool of warm interpreters (one per core unless --jobs says otherwise), the pulls that
    // feed it run that many at a time; --no-pool starts a fresh interpreter for every block
    const jobs = Math.max(1, intOpt(args, 'jobs', validate ? os.cpus().length : 1));
    if (validate) await warnBeforeValidating(env, pythonOf(args, env), intOpt(args, 'memory-mb', DEFAULT_MEMORY_MB));
    // the judge builds and feeds blocks as their repositories do: the repositories' entry points are observed first
    // (what is unchanged since the last observation is kept); a shard only reads the index
    if (validate && !shard && !flag(args, 'no-observe')) await observeFirst(ws, db, targets, args, env);
    const pooled = validate && !flag(args, 'no-pool');
    const finished = await ws.batch(targets, pullRequestOf(args, env, validate), {
      outDir,
      jobs,
      pooled,
      records: !!shard,
      signal: env.signal,
      onItem: (last, done) => {
        if (!flag(args, 'json'))
          env.err(
            `[pull] ${done}/${targets.length} ${last.status}${last.tier ? ` (${last.tier})` : ''} ${last.target}${last.category ? ` - ${last.category}: ${String(last.message).slice(0, 160)}` : ''}\n`,
          );
      },
    });
    if (!shard) await db.save();
    const summary = summarise(finished, targets.length, (performance.now() - started) / 1000, validate, pooled ? jobs : 1);
    const reportFile = path.join(outDir, shardReportName(shard));
    await writeText(
      reportFile,
      JSON.stringify({ summary, ...(shard ? { shard: { index: shard.index + 1, count: shard.count } } : {}), items: finished }, null, 1),
      outDir,
    );
    if (flag(args, 'json')) {
      env.out(`${JSON.stringify({ ...summary, report: reportFile })}\n`);
    } else {
      env.out(describeSummary(summary, reportFile));
    }
    return summary.failed === 0 ? EXIT.ok : EXIT.failed;
  } finally {
    db.close();
  }
}

function describeSummary(s: BatchSummary, reportFile: string): string {
  const lines = [
    `of all ${s.raw.blocks} blocks: ${s.raw.forward} reach forward (${s.raw.forward_share}%), ${s.raw.equivalent} proven equivalent to their original (${s.raw.equivalent_share}%)`,
    ...(s.abstract.blocks
      ? [
          `${s.abstract.blocks} of them abstract base classes (not runnable alone); of the other ${s.abstract.runnable}: ${s.abstract.forward_share}% reach forward, ${s.abstract.equivalent_share}% proven equivalent`,
        ]
      : []),
    `pulled ${s.attempted} of ${s.targeted} blocks in ${s.seconds} s (${s.seconds_per_block} s per block)`,
    `validated ${s.validated} (${s.pass_rate}%), failed ${s.failed}`,
    `tiers reached: ${Object.entries(s.tiers)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
    `compared with the original: ${s.compared} (equivalent ${s.equivalent}, differs ${s.differs}${s.fidelity === null ? '' : `; fidelity ${s.fidelity}%`}); tool faults ${s.tool_faults}`,
    ...(s.originals.run
      ? [
          `originals: ${s.originals.imported} of ${s.originals.run} import (${s.originals.compared_share ?? '-'}% of those compared), ${s.originals.forward} reach forward (the copy too: ${s.originals.forward_share ?? '-'}%)`,
        ]
      : []),
    `failures: ${
      Object.entries(s.categories)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || 'none'
    }`,
    ...(s.lines ? [`lines of the pulled files: median ${s.lines.median}, p90 ${s.lines.p90}, largest ${s.lines.max}`] : []),
    `report: ${reportFile}`,
  ];
  return `${lines.join('\n')}\n`;
}

export async function validateCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, {
    python: { value: true },
    class: { value: true },
    timeout: { value: true },
    'memory-mb': { value: true },
    db: { value: true },
    cache: { value: true },
  });
  if (args.positionals.length !== 1) throw new NnragError('usage', 'validate needs one FILE');
  const file = args.positionals[0];
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch {
    throw new NnragError('not-found', `no such file: ${file}`);
  }
  await warnBeforeValidating(env, pythonOf(args, env), intOpt(args, 'memory-mb', DEFAULT_MEMORY_MB));
  // a pulled file is judged against the index that holds its original (the header alone without one)
  const db = readProvenance(text) ? await openDb(args, env, false, false).catch(() => undefined) : undefined;
  try {
    const options = {
      python: pythonOf(args, env),
      runner: env.assets.runner,
      className: opt(args, 'class'),
      timeoutMs: intOpt(args, 'timeout', DEFAULT_TIMEOUT_S) * 1000,
      memoryMb: intOpt(args, 'memory-mb', DEFAULT_MEMORY_MB),
      signal: env.signal,
      companions: companionsOf(file, text),
      originalCacheDir: originalsDir({ cacheDir: cacheDir(args, env) }),
    };
    const { report, edited } =
      db && indexCounts(db).repos > 0
        ? await workspaceOf(db, args, env).validatePulled(file, text, options)
        : await Workspace.validateUnindexed(`no index at ${dbPath(args)} names its original (--db)`, file, text, options);
    if (flag(args, 'json')) env.out(`${JSON.stringify({ ...report, ...(edited !== undefined ? { edited } : {}) }, null, 1)}\n`);
    else env.out(`${describeValidation(report)}\n`);
    return report.ok ? EXIT.ok : EXIT.failed;
  } finally {
    db?.close();
  }
}

/** One line for a validation: the tier, and what the comparison with the original found or why it was not made. */
function describeValidation(report: ValidationReport): string {
  const head = `${verdictWords(reportVerdict(report))}${report.category ? `; why (${report.category}): ${report.message}` : ''}`;
  const e = report.equivalence;
  if (!e || e.status === 'differs') return head;
  if (e.status === 'equivalent')
    return `${head} (${e.compared_values ?? '?'} values compared with the original, ${e.tolerance ?? 'equal'}, under ${argumentSetsWords(e.variants?.length ?? 0)}: it behaves like the original on the inputs tried, which says nothing of whether the code is safe to run)`;
  return `${head} (not compared with the original: ${e.reason ?? 'no reason given'})`;
}
