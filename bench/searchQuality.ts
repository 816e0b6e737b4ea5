/**
 * The labeled queries scored in one process (the index opened once): the same figures as
 * ../shared/search-bench/searchbench.py, which starts `nn-rag search` once a query. For tuning rounds.
 * usage: npx tsx bench/searchQuality.ts QUERIES.json INDEX.db [--show-misses]
 */
import { readFileSync } from 'fs';
import { IndexDb } from '../src/core/store/database';
import { searchBlocks } from '../src/core/search/search';

async function main(): Promise<void> {
  const [queriesFile, dbFile] = process.argv.slice(2);
  const queries = JSON.parse(readFileSync(queriesFile, 'utf8')) as { q: string; any: string[] }[];
  const { db } = await IndexDb.open(dbFile, { readOnly: true });
  let s1 = 0;
  let r5 = 0;
  let mrr = 0;
  for (const item of queries) {
    const hits = searchBlocks(db, { text: item.q, limit: 10 });
    const wanted = new Set(item.any);
    const i = hits.findIndex((h) => wanted.has(h.name) || wanted.has(h.qualname));
    const rank = i < 0 ? undefined : i + 1;
    if (rank === 1) s1++;
    if (rank !== undefined && rank <= 5) r5++;
    mrr += rank ? 1 / rank : 0;
    if (rank !== 1 && process.argv.includes('--show-misses'))
      console.error(JSON.stringify({ q: item.q, rank: rank ?? null, top3: hits.slice(0, 3).map((h) => h.name) }));
  }
  const n = Math.max(queries.length, 1);
  const r = (x: number): number => Math.round((x / n) * 1000) / 1000;
  console.log(JSON.stringify({ queries: queries.length, success_at_1: r(s1), recall_at_5: r(r5), mrr_at_10: r(mrr) }));
}

void main();
