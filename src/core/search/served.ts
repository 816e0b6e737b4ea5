/**
 * A team's index served, not copied: `nn-rag serve` answers searches over HTTP from the indexes it holds (their search in
 * memory, read from the snapshot beside each), and a search here asks the servers the user named (`--server`,
 * `nnrag.search.servers`) beside the local index and merges the answers by score. Each side takes the other for a
 * stranger: the server reads a request's few parameters within limits, answers only searches and its status, and
 * takes a request for a loopback address from a loopback name only (a web page that renames itself to 127.0.0.1 reads
 * nothing); the client reads an answer within a time and a size and keeps only hits whose every field is what it
 * should be.
 */
import * as http from 'http';
import { isIP } from 'net';
import { NnragError } from '../base/errors';
import { answerOf } from '../base/http';
import type { IndexDb } from '../store/database';
import { pageOf, searchBlocks, searchInMemory, searchMany, searchWarming, type BlockKind, type SearchHit, type SearchQuery } from './search';

/** One index a server holds, and the name its hits carry. */
export interface ServedIndex {
  label: string;
  db: IndexDb;
}

/** The path of the search, and of the server's status. */
export const SEARCH_PATH = '/v1/search';
export const STATUS_PATH = '/v1/status';

/** A request's longest address, a query's longest text, the most results a page has and the deepest page. */
const MAX_URL = 4096;
const MAX_TEXT = 500;
const MAX_LIMIT = 100;
const MAX_OFFSET = 10_000;
/** A hit's docstring as served (its first part: what a result shows). */
const DOC_CHARS = 2000;

/** `localhost`, or a literal address of this machine's loopback (127.0.0.0/8, ::1): never a name to look up. */
export function loopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.split('.')[0] === '127';
  return isIP(host) === 6 && host === '::1';
}

/** The query a request asks for, or the reason it is not one. */
export function queryOf(params: URLSearchParams): SearchQuery | string {
  const text = params.get('q') ?? '';
  if (!text.trim()) return 'q, the words to search for, is missing';
  if (text.length > MAX_TEXT) return `q is longer than ${MAX_TEXT} characters`;
  const whole = (name: string, fallback: number, most: number): number | string => {
    const raw = params.get(name);
    if (raw === null || raw === '') return fallback;
    if (!/^\d{1,6}$/.test(raw)) return `${name} is a whole number, not '${raw.slice(0, 20)}'`;
    return Math.min(Number(raw), most);
  };
  const limit = whole('limit', 20, MAX_LIMIT);
  const offset = whole('offset', 0, MAX_OFFSET);
  if (typeof limit === 'string') return limit;
  if (typeof offset === 'string') return offset;
  const kind = params.get('kind') ?? 'block';
  if (!['block', 'abstract', 'class'].includes(kind)) return `kind is block, abstract or class, not '${kind.slice(0, 20)}'`;
  const short = (name: string): string | undefined => {
    const v = params.get(name);
    return v ? v.slice(0, 200) : undefined;
  };
  return {
    text,
    limit: Math.max(1, limit),
    offset,
    kind: kind as BlockKind,
    repo: short('repo'),
    category: short('category'),
    validation: short('validation'),
    group: params.get('group') !== 'false',
  };
}

/** A hit as served: without this index's row number, the docstring's first part only. */
function served({ id: _id, ...h }: SearchHit): Omit<SearchHit, 'id'> {
  return { ...h, doc: h.doc.slice(0, DOC_CHARS) };
}

/** What the server says of the indexes it holds. */
function statusOf(indexes: ServedIndex[]): unknown {
  return {
    indexes: indexes.map(({ label, db }) => ({
      label,
      blocks: Number(db.get('SELECT count(*) AS n FROM classes WHERE is_block = 1')?.n ?? 0),
      search: searchWarming(db) ? 'in memory, warming up' : searchInMemory(db) ? 'in memory' : 'from the database (held in memory once built)',
    })),
  };
}

/**
 * An HTTP server that answers `GET /v1/search?q=...` (and limit, offset, kind, repo, category, validation, group) with
 * `{"hits": [...]}` over `indexes` (several: merged by score, each hit naming its index), and `GET /v1/status`. It is
 * not listening yet: the caller listens where the user said. `loopbackOnly`: it listens on a loopback address, so a
 * request must name one (a Host header of another name is a page in a browser that renamed itself to this machine).
 */
export function createSearchServer(indexes: ServedIndex[], loopbackOnly: boolean): http.Server {
  const answer = (res: http.ServerResponse, status: number, body: unknown): void => {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    });
    res.end(text);
  };
  return http.createServer((req, res) => {
    // (a request's body is never read: only GET is answered)
    if (req.method !== 'GET') return answer(res, 405, { error: 'only GET is answered' });
    const raw = req.url ?? '';
    if (raw.length > MAX_URL) return answer(res, 414, { error: `an address longer than ${MAX_URL} characters` });
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    if (loopbackOnly && !loopback(host)) return answer(res, 403, { error: 'this server answers requests for a loopback address only' });
    let url: URL;
    try {
      url = new URL(raw, 'http://server');
    } catch {
      return answer(res, 400, { error: 'not an address' });
    }
    try {
      if (url.pathname === STATUS_PATH) return answer(res, 200, statusOf(indexes));
      if (url.pathname !== SEARCH_PATH) return answer(res, 404, { error: `nothing at ${url.pathname.slice(0, 100)}: ${SEARCH_PATH}?q=... searches` });
      const q = queryOf(url.searchParams);
      if (typeof q === 'string') return answer(res, 400, { error: q });
      const hits = indexes.length === 1 ? searchBlocks(indexes[0].db, q) : searchMany(indexes, q);
      return answer(res, 200, { hits: hits.map(served) });
    } catch (err) {
      return answer(res, 500, { error: `the search failed: ${err instanceof Error ? err.message : String(err)}`.slice(0, 500) });
    }
  });
}

/** A team's search server, as a search here asks it: its address and the name its hits carry. */
export interface TeamServer {
  url: string;
  label: string;
}

/** The server at `url` (http or https, no credentials in it); a clear error for anything else. */
export function serverAt(url: string): TeamServer {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new NnragError('usage', `a search server is an address such as http://team-host:7723/, not '${url}'`);
  }
  if (!['http:', 'https:'].includes(parsed.protocol)) throw new NnragError('usage', `a search server is an http or https address, not '${url}'`);
  if (parsed.username || parsed.password) throw new NnragError('usage', `a search server's address carries no user or password: '${parsed.host}'`);
  parsed.search = '';
  parsed.hash = '';
  if (!parsed.pathname.endsWith('/')) parsed.pathname += '/';
  return { url: parsed.toString(), label: parsed.host };
}

/** The most a server may answer, and how long it may take. */
const MAX_ANSWER_BYTES = 8 << 20;
const TIMEOUT_MS = 10_000;

const text = (v: unknown, most: number): v is string => typeof v === 'string' && v.length <= most;
const whole = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** A served hit, when every field is what it should be (the server is another program), with `index` its server's. */
function hitFrom(raw: unknown, label: string): SearchHit | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const h = raw as Record<string, unknown>;
  if (!text(h.name, 300) || !text(h.qualname, 2000) || !text(h.target, 2300) || !text(h.repo, 300) || !text(h.module, 2000)) return undefined;
  if (!text(h.path, 2000) || !text(h.category, 100) || !text(h.signature, 5000) || !text(h.doc, DOC_CHARS)) return undefined;
  if (!whole(h.line) || !whole(h.endLine) || typeof h.score !== 'number' || !Number.isFinite(h.score)) return undefined;
  if (typeof h.abstract !== 'boolean' || typeof h.isBlock !== 'boolean') return undefined;
  if (h.license !== null && !text(h.license, 200)) return undefined;
  const v = h.validation as Record<string, unknown> | null;
  if (v !== null && (typeof v !== 'object' || !text(v.status, 50) || (v.tier !== null && !text(v.tier, 50)))) return undefined;
  const c = h.copies as Record<string, unknown> | undefined;
  if (c !== undefined && (typeof c !== 'object' || c === null || !whole(c.count) || !whole(c.repos))) return undefined;
  return {
    // (no class of this index: its hits are found by target)
    id: -1,
    name: h.name,
    qualname: h.qualname,
    target: h.target,
    repo: h.repo,
    module: h.module,
    path: h.path,
    line: h.line,
    endLine: h.endLine,
    category: h.category,
    abstract: h.abstract,
    isBlock: h.isBlock,
    signature: h.signature,
    doc: h.doc,
    validation: v === null ? null : { status: v.status as string, tier: (v.tier as string | null) ?? null },
    license: h.license,
    score: h.score,
    ...(c ? { copies: { count: c.count as number, repos: c.repos as number } } : {}),
    index: label,
  };
}

/** What `server` finds for `q`: its hits, each checked (one that is not what a hit is, left out). */
export async function askServer(server: TeamServer, q: SearchQuery, timeoutMs = TIMEOUT_MS): Promise<SearchHit[]> {
  const { limit, offset } = pageOf(q);
  const params = new URLSearchParams({ q: q.text, limit: String(Math.min(limit + offset, MAX_LIMIT)), kind: q.kind ?? 'block' });
  if (q.repo) params.set('repo', q.repo);
  if (q.category) params.set('category', q.category);
  if (q.validation) params.set('validation', q.validation);
  if (q.group === false) params.set('group', 'false');
  let body: unknown;
  try {
    body = JSON.parse(await answerOf(new URL(`v1/search?${params}`, server.url).toString(), { method: 'GET' }, { maxBytes: MAX_ANSWER_BYTES, timeoutMs }));
  } catch (err) {
    throw new Error(`the search server ${server.label}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const hits = (body as { hits?: unknown } | null)?.hits;
  if (!Array.isArray(hits)) throw new Error(`the search server ${server.label} answered something that is not a list of hits`);
  return hits.slice(0, MAX_LIMIT).flatMap((h) => hitFrom(h, server.label) ?? []);
}

/**
 * One page of hits from several answers to one query (the local index's first), merged by score: scores are BM25
 * within each index, so a block ranks as it would in its own; the same target twice is listed once, from the first
 * answer that has it.
 */
export function mergeAnswers(answers: SearchHit[][], q: SearchQuery): SearchHit[] {
  const { limit, offset } = pageOf(q);
  const all = answers.flatMap((hits, order) => hits.map((h, rank) => ({ h, order, rank })));
  all.sort((a, b) => b.h.score - a.h.score || a.order - b.order || a.rank - b.rank);
  const seen = new Set<string>();
  const out: SearchHit[] = [];
  for (const { h } of all) {
    if (seen.has(h.target)) continue;
    seen.add(h.target);
    out.push(h);
  }
  return out.slice(offset, offset + limit);
}

/**
 * `q` over the local index (`here`) and the team's servers: their answers merged (`mergeAnswers`); a server that fails or
 * answers wrong leaves the others' hits, with a warning that says why.
 */
export async function searchWithServers(
  here: (q: SearchQuery) => SearchHit[],
  q: SearchQuery,
  servers: TeamServer[],
  timeoutMs = TIMEOUT_MS,
): Promise<{ hits: SearchHit[]; warnings: string[] }> {
  const { limit, offset } = pageOf(q);
  // every answer's first page up to the end of the one asked (a page of the merge may take from any of them)
  const first: SearchQuery = { ...q, limit: limit + offset, offset: 0 };
  const local = here(first);
  const warnings: string[] = [];
  const remote = await Promise.all(
    servers.map((s) =>
      askServer(s, first, timeoutMs).catch((err: unknown) => {
        warnings.push(err instanceof Error ? err.message : String(err));
        return [] as SearchHit[];
      }),
    ),
  );
  return { hits: mergeAnswers([local, ...remote], q), warnings };
}
