/** `nn-rag index` and `nn-rag stats`: what is indexed. */
import { performance } from 'perf_hooks';
import { NnragError } from '../core/base/errors';
import { lazyPool } from '../core/analysis/parsePool';
import { finishRun } from '../core/index/indexer';
import { indexSources } from '../core/index/indexSources';
import type { IndexRunStats } from '../core/index/indexer';
import { PythonParser } from '../core/parse/parser';
import { inShard, parseShard } from '../core/pull/shard';
import { mergeIndexes } from '../core/index/mergeIndex';
import { repositoryNames } from '../core/sources/names';
import { sourceFromArgument } from '../core/sources/open';
import type { SourceConfig } from '../core/sources/types';
import { blockCount, indexStats } from '../core/store/stats';
import { writeSearchSnapshot } from '../core/search/search';
import { coverageWords } from '../core/store/observed';
import { HELP } from './help';
import { cacheDir, dbPath, EXIT, flag, intOpt, openDb, opt, parse, progressLine, shortCommit } from './env';
import type { CliEnv } from './env';

export async function indexCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, {
    name: { value: true },
    ref: { value: true },
    include: { value: true, multiple: true },
    exclude: { value: true, multiple: true },
    symbols: { value: true, multiple: true },
    priority: { value: true },
    inline: {},
    'no-inline': {},
    'python-env': { value: true },
    packages: { value: true },
    cache: { value: true },
    'max-file-kb': { value: true },
    'dup-lexical': { value: true },
    'dup-structural': { value: true },
    shard: { value: true },
    'shard-count': { value: true },
  });
  if (flag(args, 'help')) {
    env.out(HELP);
    return EXIT.ok;
  }
  const extra: Partial<SourceConfig> = {
    include: args.options.get('include'),
    exclude: args.options.get('exclude'),
    symbols: args.options.get('symbols'),
    priority: intOpt(args, 'priority', 0),
    inline: flag(args, 'inline') ? true : flag(args, 'no-inline') ? false : undefined,
  };
  const configs: SourceConfig[] = [];
  for (const p of args.positionals) configs.push(await sourceFromArgument(p, { ...extra, ref: opt(args, 'ref') }));
  if (opt(args, 'name')) {
    if (configs.length !== 1) throw new NnragError('usage', '--name names one source; give exactly one');
    configs[0].name = opt(args, 'name');
  }
  const pyEnv = opt(args, 'python-env');
  const packages = opt(args, 'packages');
  if (pyEnv || packages) {
    if (!pyEnv || !packages) throw new NnragError('usage', '--python-env PY and --packages a,b go together');
    configs.push({ ...extra, kind: 'python-env', location: packages, python: pyEnv });
  }
  if (configs.length === 0) throw new NnragError('usage', 'index needs at least one SOURCE (a folder or an http(s) git URL)');
  // a shard indexes its part of the sources (stable by each source's name or location); `nn-rag merge` joins them
  const shardSpec = opt(args, 'shard');
  const shard = shardSpec ? parseShard(shardSpec, env.env, opt(args, 'shard-count') === undefined ? undefined : intOpt(args, 'shard-count', 1)) : undefined;
  if (shard) configs.splice(0, configs.length, ...configs.filter((c) => inShard(repositoryNames(c)[0] ?? c.location, shard)));

  const parser = await PythonParser.create(env.assets);
  const pool = lazyPool(env.assets.parseWorker, env.assets, parser);
  const db = await openDb(args, env, false, true);
  const draw = progressLine(env);
  const runs: IndexRunStats[] = [];
  const t0 = performance.now();
  try {
    await indexSources(db, configs, {
      open: { cacheDir: cacheDir(args, env), signal: env.signal, onMessage: (m) => draw(`[git] ${m}`) },
      index: () => ({
        parser,
        parse: pool.parse,
        concurrency: pool.inFlight,
        hereMaxBytes: pool.hereMaxBytes,
        signal: env.signal,
        maxFileBytes: intOpt(args, 'max-file-kb', 2048) * 1024,
        onProgress: (p) => draw(`[index] ${p.step}/${p.total} ${p.message}`),
      }),
      onRun: (run) => void runs.push(run),
    });
  } finally {
    await pool.close();
    // whatever finished is kept: every file's facts were written as it completed
    const changed = runs.length === 0 || runs.some((r) => r.changed > 0);
    const threshold = (name: string): number | undefined => {
      const v = opt(args, name);
      if (v === undefined) return undefined;
      const n = Number(v);
      if (!(n > 0 && n <= 1)) throw new NnragError('usage', `--${name} is a Jaccard threshold in (0, 1], not '${v}'`);
      return n;
    };
    const dedup = { lexical: threshold('dup-lexical'), structural: threshold('dup-structural') };
    const regroup = dedup.lexical !== undefined || dedup.structural !== undefined;
    const blocks = changed || regroup ? finishRun(db, dedup).blocks : blockCount(db);
    await db.save();
    // the search as the next process to open the index holds it (a shard's part is merged first)
    if (!shard) await writeSearchSnapshot(db);
    if (env.tty) env.err('\r\x1b[K');
    if (flag(args, 'json')) {
      if (runs.length || shard)
        env.out(
          `${JSON.stringify({ runs, blocks, seconds: (performance.now() - t0) / 1000, db: dbPath(args), ...(shard ? { shard: { index: shard.index + 1, count: shard.count } } : {}) })}\n`,
        );
    } else if (runs.length) {
      for (const r of runs) {
        env.out(
          `[index] ${r.repo}: ${r.files} files, ${r.computed} new or changed, ${r.kept} unchanged, ${r.deleted} removed, ` +
            `${r.skipped} skipped, ${r.seconds.toFixed(2)} s${r.commit ? ` (${shortCommit(r.commit)})` : ''}\n`,
        );
      }
      env.out(`[index] ${blocks} blocks in ${dbPath(args)}\n`);
    } else if (shard) {
      env.out(`[index] shard ${shard.index + 1}/${shard.count} holds none of these sources: an empty index in ${dbPath(args)}\n`);
    }
    db.close();
  }
  return EXIT.ok;
}

export async function statsCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, {});
  const db = await openDb(args, env);
  try {
    const s = indexStats(db);
    if (flag(args, 'json')) {
      env.out(`${JSON.stringify(s, null, 1)}\n`);
      return EXIT.ok;
    }
    for (const r of s.repos) {
      env.out(
        `${r.name} (${r.kind}${r.commit ? ` ${shortCommit(r.commit)}` : ''}${r.license ? `, ${r.license}` : ''}): ${r.parsed} parsed, ${r.skipped} skipped, ${r.blocks} blocks${r.observed ? `; ${coverageWords(r.observed)}` : ''}\n`,
      );
    }
    env.out(`total: ${s.files} files, ${s.modules} modules, ${s.blocks} blocks, database ${(s.db_bytes / 1024).toFixed(0)} KiB\n`);
    for (const f of s.skipped_files) env.out(`  skipped ${f.repo}/${f.path}: ${f.reason} (${f.detail})\n`);
  } finally {
    db.close();
  }
  return EXIT.ok;
}

/** `nn-rag merge SHARD_DBS... --db OUT`: the indexes `index --shard` made, as one. */
export async function mergeCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, {});
  const t0 = performance.now();
  const r = await mergeIndexes(args.positionals, dbPath(args), env.assets.sqlWasm);
  const seconds = (performance.now() - t0) / 1000;
  if (flag(args, 'json')) env.out(`${JSON.stringify({ ...r, seconds, db: dbPath(args) })}\n`);
  else
    env.out(
      `[merge] ${r.shards.length} indexes, ${r.repositories} repositories, ${r.files} files, ${r.blocks} blocks in ${dbPath(args)} (${seconds.toFixed(1)} s)\n`,
    );
  return EXIT.ok;
}
