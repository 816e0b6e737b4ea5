/**
 * A team's index at a size no editor should hold, served: `groups` synthetic corpora of `perGroup` blocks each
 * (searchScale.ts's, each seeded and named apart), each its own index (sql.js holds every database of a process in
 * one WebAssembly memory of at most 2 GB) served by its own `nn-rag serve`, and one client that asks every server at
 * once and merges their answers by score, as the editor does with `nnrag.search.servers` (search/served.ts): index
 * seconds and disk, the servers' peak memory, the first answer after they start, search p50 / p95 over the same
 * two- and three-word field queries as searchScale.ts. An index already built under `work` is used again.
 */
import { spawn, spawnSync, type ChildProcess } from 'child_process';
import { existsSync, readFileSync, statSync } from 'fs';
import * as path from 'path';
import { performance } from 'perf_hooks';
import { askServer, mergeAnswers, serverAt, type TeamServer } from '../src/core/search/served';
import { ROOT, percentile, r2 } from './common';
import { fieldQueries, timed, writeCorpus } from './searchScale';

const cliJs = (): string => path.join(ROOT, 'dist', 'cli.js');

/** Builds group g's corpus and index under `work` unless there; its database file and the seconds indexing took. */
function groupIndex(work: string, g: number, perGroup: number): { db: string; seconds: number; dir: string } {
  const dir = path.join(work, `served-${perGroup}-${g}`);
  const db = path.join(dir, 'index.db');
  if (existsSync(db) && existsSync(`${db}.search`)) return { db, seconds: 0, dir };
  writeCorpus(dir, perGroup, { seed: 1000 + g, name: `team${g}` });
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [cliJs(), 'index', path.join(dir, `team${g}`), '--db', db], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`indexing group ${g} failed: ${r.stderr.slice(-2000)}`);
  return { db, seconds: (performance.now() - t0) / 1000, dir };
}

/** A started `nn-rag serve` over `db`, once it says where it listens. */
function startServer(db: string): Promise<{ child: ChildProcess; server: TeamServer }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliJs(), 'serve', '--db', db, '--port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let said = '';
    child.stderr!.on('data', (c: Buffer) => {
      said += c.toString();
      const url = /at (http:\/\/[^/\s]+)\//.exec(said)?.[1];
      if (url) resolve({ child, server: serverAt(url) });
    });
    child.on('exit', (code) => reject(new Error(`nn-rag serve over ${db} ended (${code}): ${said.slice(-1000)}`)));
  });
}

const peakMb = (pid: number | undefined): number => (pid ? Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024 : 0);

export async function searchServedAtScale(work: string, groups: number, perGroup: number, queries = 200): Promise<Record<string, number>> {
  const built = Array.from({ length: groups }, (_, g) => groupIndex(work, g, perGroup));
  const started = performance.now();
  const running = await Promise.all(built.map((b) => startServer(b.db)));
  try {
    const servers = running.map((r) => r.server);
    const ask = async (text: string): Promise<number> => {
      const answers = (await Promise.all(servers.map((s) => askServer(s, { text, limit: 10 })))).map((a) => a.hits);
      return mergeAnswers(answers, { text, limit: 10 }).length;
    };
    const qs = fieldQueries(queries);
    await ask(qs[0]);
    const firstS = (performance.now() - started) / 1000;
    // every server's search in memory and warm, as an editor finds a server that has been up a while
    const warm = async (s: TeamServer): Promise<boolean> => {
      try {
        const res = await fetch(new URL('v1/status', s.url));
        return ((await res.json()) as { indexes: { search: string }[] }).indexes.every((x) => x.search === 'in memory');
      } catch {
        // (a server busy building its search may drop an idle connection: asked again)
        return false;
      }
    };
    const allWarm = async (): Promise<boolean> => (await Promise.all(servers.map(warm))).every(Boolean);
    while (!(await allWarm()) && performance.now() - started < 900_000) await new Promise((resolve) => setTimeout(resolve, 200));
    const { ms, answered } = await timed(qs, ask);
    const total = groups * perGroup;
    const key = `search_served_${total}`;
    const rss = running.map((r) => peakMb(r.child.pid));
    return {
      [`${key}_groups`]: groups,
      [`${key}_index_s`]: r2(built.reduce((a, b) => a + b.seconds, 0)),
      [`${key}_db_mb`]: r2(built.reduce((a, b) => a + statSync(b.db).size, 0) / 1024 ** 2),
      [`${key}_snapshot_mb`]: r2(built.reduce((a, b) => a + statSync(`${b.db}.search`).size, 0) / 1024 ** 2),
      [`${key}_first_answer_s`]: r2(firstS),
      [`${key}_servers_rss_mb`]: r2(rss.reduce((a, b) => a + b, 0)),
      [`${key}_largest_server_rss_mb`]: r2(Math.max(...rss)),
      [`${key}_p50_ms`]: r2(percentile(ms, 50)),
      [`${key}_p95_ms`]: r2(percentile(ms, 95)),
      [`${key}_answered`]: answered,
      [`${key}_queries`]: qs.length,
    };
  } finally {
    for (const r of running) r.child.kill('SIGTERM');
  }
}

// `npx tsx bench/searchServed.ts WORK GROUPS PER_GROUP`: one measurement, as JSON
if (require.main === module) {
  const [work, groups, perGroup] = process.argv.slice(2);
  searchServedAtScale(path.resolve(work), Number(groups), Number(perGroup)).then(
    (r) => console.log(JSON.stringify(r)),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
