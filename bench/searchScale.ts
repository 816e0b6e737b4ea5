/**
 * Search at a team's size: a synthetic corpus of plain `nn.Module` files (ten classes a file; names of two to four
 * words and docstrings of eight to sixteen, drawn by Zipf's law from a vocabulary of 4,000 words whose most common are
 * the field's), indexed by the bundled `nn-rag index`, then two- and three-word queries of the field's words through
 * `nn-rag mcp` (the index loaded once, as in the editor): index seconds, database bytes, the first answer after the
 * server starts, search p50 / p95. Deterministic: a seeded generator, the same corpus and queries on every machine.
 */
import { spawnSync } from 'child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'fs';
import * as path from 'path';
import { performance } from 'perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { ROOT, percentile, r2 } from './common';

/** The field's words, the most common of the vocabulary (in this order of frequency). */
const FIELD = (
  'attention block layer conv norm residual mlp embedding head encoder decoder transformer patch feed forward gate ' +
  'pool projection dropout activation batch group channel spatial temporal depthwise separable bottleneck stem ' +
  'downsample upsample linear multi scale window shift relative position rotary cross self causal mask token ' +
  'query key value kernel stride dilated squeeze excitation inverted mobile dense sparse expert mixture router ' +
  'graph node edge message aggregation pyramid feature fusion neck anchor box detection segmentation mask pixel ' +
  'shuffle deformable offset modulated lora adapter prefix prompt cache quantized fused efficient light tiny ' +
  'large base vision audio text speech image video point cloud voxel diffusion noise timestep unet latent'
).split(' ');

/** A seeded generator (mulberry32): the same corpus on every machine. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** 4,000 words: the field's first, then made-up ones (pronounceable, distinct). */
function vocabulary(): string[] {
  const words = [...new Set(FIELD)];
  const rand = rng(7);
  const syllables = 'ka ri to ne mo su la vi de po ga ze tu fi no ba ro me xi qu'.split(' ');
  const seen = new Set(words);
  while (words.length < 4000) {
    const n = 2 + Math.floor(rand() * 2);
    let w = '';
    for (let i = 0; i < n; i++) w += syllables[Math.floor(rand() * syllables.length)];
    if (!seen.has(w)) {
      seen.add(w);
      words.push(w);
    }
  }
  return words;
}

/** A Zipf sampler over `n` ranks (s = 1): rank i is drawn with weight 1 / (i + 1). */
function zipf(n: number, rand: () => number): () => number {
  const cumulative = new Float64Array(n);
  let total = 0;
  for (let i = 0; i < n; i++) cumulative[i] = total += 1 / (i + 1);
  return () => {
    const x = rand() * total;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

const capital = (w: string): string => w[0].toUpperCase() + w.slice(1);

/** Writes `blocks` classes (ten a file, a hundred files a folder) under `dir`, in a package `name` (`synth`), drawn by
 * a generator seeded with `seed` (the count); returns the files written. */
export function writeCorpus(dir: string, blocks: number, { seed = blocks, name = 'synth' }: { seed?: number; name?: string } = {}): number {
  const words = vocabulary();
  const rand = rng(seed);
  const draw = zipf(words.length, rand);
  const pick = (lo: number, hi: number): string[] => Array.from({ length: lo + Math.floor(rand() * (hi - lo + 1)) }, () => words[draw()]);
  const files = Math.ceil(blocks / 10);
  const names = new Set<string>();
  for (let f = 0; f < files; f++) {
    const folder = path.join(dir, name, `part${Math.floor(f / 100)}`);
    if (f % 100 === 0) {
      mkdirSync(folder, { recursive: true });
      writeFileSync(path.join(folder, '__init__.py'), '');
    }
    let text = 'import torch\nfrom torch import nn\n';
    for (let c = 0; c < 10 && f * 10 + c < blocks; c++) {
      let name = pick(2, 4).map(capital).join('');
      // names are unique within the corpus, as classes of one module must be
      for (let k = 2; names.has(name); k++) name = `${pick(2, 4).map(capital).join('')}${k}`;
      names.add(name);
      const doc = pick(8, 16).join(' ');
      text +=
        `\n\nclass ${name}(nn.Module):\n    """${capital(doc)}."""\n\n    def __init__(self, dim=8):\n        super().__init__()\n` +
        `        self.proj = nn.Linear(dim, dim)\n\n    def forward(self, x):\n        return self.proj(x)\n`;
    }
    writeFileSync(path.join(folder, `m${f}.py`), text);
  }
  writeFileSync(path.join(dir, name, '__init__.py'), '');
  return files;
}

/** Two- and three-word queries of the field's words (seeded). */
export function fieldQueries(count: number): string[] {
  const rand = rng(11);
  const draw = zipf(FIELD.length, rand);
  return Array.from({ length: count }, () => Array.from({ length: 2 + Math.floor(rand() * 2) }, () => FIELD[draw()]).join(' '));
}

/** Each query asked in turn: its milliseconds, and how many found something (`ask`: how many hits). */
export async function timed(qs: string[], ask: (q: string) => Promise<number>): Promise<{ ms: number[]; answered: number }> {
  const ms: number[] = [];
  let answered = 0;
  for (const q of qs) {
    const q0 = performance.now();
    if ((await ask(q)) > 0) answered++;
    ms.push(performance.now() - q0);
  }
  return { ms, answered };
}

/**
 * Builds a corpus of `blocks` blocks under `work`, indexes it with the bundled CLI and searches it through `nn-rag mcp`:
 * the figures of one size, keyed `search_<blocks>_*`.
 */
export async function searchAtScale(work: string, blocks: number, queries = 200): Promise<Record<string, number>> {
  const dir = path.join(work, `search-${blocks}`);
  const files = writeCorpus(dir, blocks);
  const cliJs = path.join(ROOT, 'dist', 'cli.js');
  const db = path.join(dir, 'index.db');
  const t0 = performance.now();
  const indexed = spawnSync('/usr/bin/time', ['-f', '%M', process.execPath, cliJs, 'index', path.join(dir, 'synth'), '--db', db], { encoding: 'utf8' });
  const indexS = (performance.now() - t0) / 1000;
  if (indexed.status !== 0) throw new Error(`indexing ${blocks} synthetic blocks failed: ${indexed.stderr.slice(-2000)}`);
  const indexPeakMb = Number(indexed.stderr.trim().split('\n').pop()) / 1024;
  const client = new Client({ name: 'nnrag-bench', version: '1' });
  const started = performance.now();
  const transport = new StdioClientTransport({ command: process.execPath, args: [cliJs, 'mcp', '--db', db], stderr: 'ignore' });
  await client.connect(transport);
  try {
    const ask = async (q: string): Promise<number> => {
      const r = (await client.callTool({ name: 'search_blocks', arguments: { query: q, limit: 10 } })) as { content: { text: string }[] };
      return (JSON.parse(r.content[0].text) as unknown[]).length;
    };
    const qs = fieldQueries(queries);
    await ask(qs[0]);
    const firstS = (performance.now() - started) / 1000;
    // the server holds the index's search in memory once it has read it (answering from the database meanwhile):
    // the searches are timed from then, as an editor that has had the index open a moment answers
    const inMemory = async (): Promise<boolean> => {
      const r = (await client.callTool({ name: 'index_status', arguments: {} })) as { content: { text: string }[] };
      return (JSON.parse(r.content[0].text) as { search?: string }).search === 'in memory';
    };
    while (!(await inMemory()) && performance.now() - started < 600_000) await new Promise((resolve) => setTimeout(resolve, 100));
    const memoryS = (performance.now() - started) / 1000;
    const { ms, answered } = await timed(qs, ask);
    const key = `search_${blocks}`;
    // the server's peak resident memory (the editor's language server holds the same)
    const status = transport.pid ? readFileSync(`/proc/${transport.pid}/status`, 'utf8') : '';
    const serverMb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
    return {
      [`${key}_files`]: files,
      [`${key}_index_s`]: r2(indexS),
      [`${key}_index_peak_rss_mb`]: r2(indexPeakMb),
      [`${key}_db_mb`]: r2(statSync(db).size / 1024 ** 2),
      [`${key}_first_answer_s`]: r2(firstS),
      [`${key}_in_memory_after_s`]: r2(memoryS),
      [`${key}_server_rss_mb`]: r2(serverMb),
      [`${key}_p50_ms`]: r2(percentile(ms, 50)),
      [`${key}_p95_ms`]: r2(percentile(ms, 95)),
      [`${key}_answered`]: answered,
      [`${key}_queries`]: qs.length,
    };
  } finally {
    await client.close();
  }
}
