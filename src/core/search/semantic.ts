/**
 * An optional semantic ranker, only where the user serves an embedding model on their own machine (Ollama, llama.cpp's
 * server, text-embeddings-inference, LM Studio: the OpenAI-compatible `POST /v1/embeddings`). Search's first results
 * are ranked again by the reciprocal-rank fusion of their text rank and their rank by the cosine of their embedding to
 * the query's (Cormack, Clarke and Büttcher 2009); a block whose name is the query stays first. Nothing is ever
 * downloaded, nothing runs without the address the user gave, and only a loopback address is accepted: the blocks'
 * text stays on the machine. The service's answer is data from another program: read within a size, checked number
 * by number; a service that fails or answers wrong leaves the text ranking as it was, with a warning that says why.
 */
import { NnragError } from '../base/errors';
import { answerOf, loopback } from '../base/http';
import type { IndexDb } from '../store/database';
import { pageOf, searchBlocks, type SearchHit, type SearchQuery } from './search';
import { splitIdentifier } from './words';

/** Where the embedding model is served, and the model's name as the service knows it. */
export interface Embeddings {
  url: string;
  model: string;
}

/** The text results ranked again (the first of them, at least the page). */
const RERANKED = 50;
/** Reciprocal-rank fusion's constant (the paper's). */
const K = 60;
/** The most a service may answer, and the widest vector it may give. */
const MAX_ANSWER_BYTES = 64 << 20;
const MAX_DIMENSIONS = 8192;
const TIMEOUT_MS = 30_000;

/** The service at `url` (an http address on this machine), for `model`; a clear error for any other address. */
export function embeddingsAt(url: string, model = 'nomic-embed-text'): Embeddings {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new NnragError('usage', `--embeddings takes the address of an embedding service (http://127.0.0.1:11434/v1/embeddings), not '${url}'`);
  }
  if (!['http:', 'https:'].includes(parsed.protocol) || !loopback(parsed.hostname)) {
    throw new NnragError(
      'usage',
      `the embedding service must run on this machine (a loopback address): the blocks' text is sent to it, and '${url}' is elsewhere`,
    );
  }
  if (!model.trim()) throw new NnragError('usage', 'the embedding model needs a name');
  return { url: parsed.toString(), model };
}

/** The text a block is embedded by: its name in words, its signature, its docstring's first sentence. */
function textOf(h: SearchHit): string {
  const doc = h.doc.split(/(?<=[.!?])\s|\n\s*\n/)[0] ?? '';
  return `${splitIdentifier(h.name).join(' ')}. ${h.name}${h.signature}. ${doc}`.slice(0, 2000);
}

/** Vectors already asked, by service, model and text (the same blocks come back query after query). */
const known = new Map<string, Float32Array>();

/** The service's answer to `body`, as text (within the time and size above). */
async function ask(url: string, body: string): Promise<string> {
  try {
    return await answerOf(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json' }, body },
      { maxBytes: MAX_ANSWER_BYTES, timeoutMs: TIMEOUT_MS },
    );
  } catch (err) {
    throw new Error(`the embedding service: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** The vectors of `texts`, in their order, asked of the service in one request (those not known yet). */
async function vectorsOf(e: Embeddings, texts: string[]): Promise<Float32Array[]> {
  const key = (t: string): string => `${e.url}\0${e.model}\0${t}`;
  const missing = [...new Set(texts.filter((t) => !known.has(key(t))))];
  if (missing.length) {
    const answer = JSON.parse(await ask(e.url, JSON.stringify({ model: e.model, input: missing }))) as { data?: { embedding?: unknown; index?: unknown }[] };
    const data = Array.isArray(answer?.data) ? answer.data : undefined;
    if (!data || data.length !== missing.length) throw new Error(`the service gave ${data?.length ?? 'no'} vectors for ${missing.length} texts`);
    let width: number | undefined;
    data.forEach((d, k) => {
      const v = d?.embedding;
      const at = typeof d?.index === 'number' ? d.index : k;
      if (!Array.isArray(v) || !v.length || v.length > MAX_DIMENSIONS || !v.every((x) => typeof x === 'number' && Number.isFinite(x))) {
        throw new Error('the service gave a vector that is not a list of numbers');
      }
      if (width !== undefined && v.length !== width) throw new Error('the service gave vectors of different widths');
      if (!Number.isInteger(at) || at < 0 || at >= missing.length) throw new Error('the service numbered its vectors wrong');
      width = v.length;
      if (known.size >= 50_000) known.clear();
      const vector = Float32Array.from(v as number[]);
      // (a number past float32's range would be infinite there)
      if (!vector.every(Number.isFinite)) throw new Error('the service gave a vector that is not a list of numbers');
      known.set(key(missing[at]), vector);
    });
  }
  return texts.map((t) => {
    const v = known.get(key(t));
    if (!v) throw new Error('the service left a text without its vector');
    return v;
  });
}

function cosine(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new Error("the service's vectors for the query and the blocks differ in width");
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}

/** `hits` (in their text order) ranked again with the service's vectors; each hit's `semantic` is its cosine. */
export async function rerank(hits: SearchHit[], query: string, e: Embeddings): Promise<SearchHit[]> {
  if (hits.length < 2) return hits;
  const [q, ...vs] = await vectorsOf(e, [query, ...hits.map(textOf)]);
  const sims = vs.map((v) => cosine(q, v));
  const bySimilarity = sims.map((_, k) => k).sort((a, b) => sims[b] - sims[a] || a - b);
  const semanticRank = new Array<number>(hits.length);
  bySimilarity.forEach((k, r) => (semanticRank[k] = r + 1));
  const asked = query
    .trim()
    .toLowerCase()
    .replace(/[\s\-_]+/g, '');
  const named = (h: SearchHit): boolean => h.name.toLowerCase() === asked;
  const fused = hits.map((h, k) => ({ h: { ...h, semantic: Math.round(sims[k] * 1000) / 1000 }, k, f: 1 / (K + k + 1) + 1 / (K + semanticRank[k]) }));
  fused.sort((a, b) => Number(named(b.h)) - Number(named(a.h)) || b.f - a.f || sims[b.k] - sims[a.k] || a.k - b.k);
  return fused.map((x) => x.h);
}

/**
 * `searchBlocks`, its first results ranked again by the service at `e`; where the service fails, the text ranking
 * and a warning that says why.
 */
export async function searchSemantic(db: IndexDb, q: SearchQuery, e: Embeddings): Promise<{ hits: SearchHit[]; warning?: string }> {
  const { limit, offset } = pageOf(q);
  const first = searchBlocks(db, { ...q, offset: 0, limit: Math.max(RERANKED, offset + limit) });
  try {
    return { hits: (await rerank(first, q.text, e)).slice(offset, offset + limit) };
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return { hits: first.slice(offset, offset + limit), warning: `semantic ranking left out (${e.url}: ${why}); the text ranking is shown` };
  }
}
