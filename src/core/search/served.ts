/**
 * A team's index served, not copied: `nn-rag serve` answers searches over HTTP from the indexes it holds (their search in
 * memory, read from the snapshot beside each), and a search here asks the servers the user named (`--server`,
 * `nnrag.search.servers`) beside the local index and merges the answers by score. Each side takes the other for a
 * stranger: the server reads a request's few parameters within limits, answers only searches and its status, and
 * only requests for a name it goes by (a web page that had its own name point at the server reads nothing); the client
 * reads an answer within a time, a size and a depth and keeps only hits whose every field is what it should be.
 */
import * as http from 'http';
import { isIP } from 'net';
import { NnragError } from '../base/errors';
import { answerOf, listensOnLoopback, loopback } from '../base/http';
import type { IndexDb } from '../store/database';
import { indexCounts } from '../store/stats';
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
      blocks: indexCounts(db).blocks,
      search: searchWarming(db) ? 'in memory, warming up' : searchInMemory(db) ? 'in memory' : 'from the database (held in memory once built)',
    })),
  };
}

/**
 * An HTTP server that answers `GET /v1/search?q=...` (and limit, offset, kind, repo, category, validation, group) with
 * `{"hits": [...]}` over `indexes` (several: merged by score, each hit naming its index), and `GET /v1/status`. It is
 * not listening yet: the caller listens where the user said, then says which Host names a request may carry
 * (`allowHost`; none until then): a name the server does not go by is a web page that had its own name point at this
 * machine (DNS rebinding), and must read nothing.
 */
export function createSearchServer(indexes: ServedIndex[]): { server: http.Server; allowHost: (allowed: (host: string) => boolean) => void } {
  let allowed: (host: string) => boolean = () => false;
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
  const server = http.createServer((req, res) => {
    // (a request's body is never read: only GET and HEAD are answered)
    if (req.method !== 'GET' && req.method !== 'HEAD') return answer(res, 405, { error: 'only GET is answered' });
    const raw = req.url ?? '';
    if (raw.length > MAX_URL) return answer(res, 414, { error: `an address longer than ${MAX_URL} characters` });
    const host = (req.headers.host ?? '').replace(/:\d+$/, '').toLowerCase();
    if (!allowed(host)) return answer(res, 403, { error: 'this server does not go by that name (the Host asked for)' });
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
  // a client that sends its request slowly, or holds connections, is given up on (a server on the network); not so
  // soon that a request waiting for a search being built is (the searches run one after another)
  server.headersTimeout = 30_000;
  server.requestTimeout = 60_000;
  server.maxConnections = 512;
  return { server, allowHost: (f) => (allowed = f) };
}

/** The Host names a server listening on `address` answers: a loopback address, loopback names only; another, an
 * address written as such (no name to point elsewhere) and the names the user gives (`names`, lower case). */
export function hostsFor(address: string, names: string[]): (host: string) => boolean {
  const onLoopback = listensOnLoopback(address);
  return (host) => {
    if (loopback(host)) return true;
    if (onLoopback) return false;
    return isIP(host.replace(/^\[|\]$/g, '')) !== 0 || names.includes(host);
  };
}

/** A team's search server, as a search here asks it: its address and the name its hits carry. */
export interface TeamServer {
  url: string;
  label: string;
}

/** The server at `url` (http or https, no credentials in it; its search's own address is taken as the server's);
 * a clear error for anything else. */
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
  parsed.pathname = parsed.pathname.replace(/\/v1\/(search|status)\/?$/, '/');
  if (!parsed.pathname.endsWith('/')) parsed.pathname += '/';
  return { url: parsed.toString(), label: `${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname.slice(0, -1)}` };
}

/** The most a server may answer (100 hits at their fields' limits are about 1.7 MB), and how long it may take. */
const MAX_ANSWER_BYTES = 2 << 20;
const TIMEOUT_MS = 10_000;
/** How deep an answer's lists and objects may nest (a hit is three deep in the answer). */
const MAX_DEPTH = 8;

/** A string within `most` characters, with no control character, line break or direction override (what a list of
 * results shows on one line); `lines`: line breaks and tabs allowed (a docstring). */
// eslint-disable-next-line no-control-regex
const UNSHOWN = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
// eslint-disable-next-line no-control-regex
const UNSHOWN_IN_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const text = (v: unknown, most: number, lines = false): v is string =>
  typeof v === 'string' && v.length <= most && !(lines ? UNSHOWN_IN_LINES : UNSHOWN).test(v);
const whole = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
/** A class's name, a dotted module of such parts (a file's name may hold a dash), a repository's name. */
const IDENTIFIER = /^[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]*$/u;
const MODULE = /^[\p{L}\p{N}_-]+(?:\.[\p{L}\p{N}_-]+)*$/u;
const REPO = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/** Whether an answer's text nests lists and objects deeper than `most` (read before it is parsed: a deep one costs
 * the parser far more than its size). */
function nestsDeeper(answer: string, most: number): boolean {
  let depth = 0;
  let quoted = false;
  for (let k = 0; k < answer.length; k++) {
    const c = answer.charCodeAt(k);
    if (quoted) {
      if (c === 0x5c) k++;
      else if (c === 0x22) quoted = false;
    } else if (c === 0x22) quoted = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > most) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * A served hit, when every field is what it should be (the server is another program: its text is shown in lists,
 * and a target is what a pull would be asked for), with `index` its server's.
 */
function hitFrom(raw: unknown, label: string): SearchHit | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const h = raw as Record<string, unknown>;
  if (!text(h.name, 300) || !IDENTIFIER.test(h.name) || !text(h.repo, 200) || !REPO.test(h.repo) || !text(h.module, 2000) || !MODULE.test(h.module))
    return undefined;
  if (h.qualname !== `${h.module}.${h.name}` || h.target !== `${h.repo}:${h.module}.${h.name}`) return undefined;
  if (!text(h.path, 2000) || !text(h.category, 100) || !text(h.signature, 5000) || !text(h.doc, DOC_CHARS, true)) return undefined;
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

/** How a search asks a server: within `timeoutMs` (10 s unless told), cancelled by `signal`. */
export interface Asking {
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** What `server` finds for `q`: its hits, each checked, and how many were left out for not being what a hit is. */
export async function askServer(server: TeamServer, q: SearchQuery, how: Asking = {}): Promise<{ hits: SearchHit[]; leftOut: number }> {
  const { limit, offset } = pageOf(q);
  const params = new URLSearchParams({ q: q.text, limit: String(Math.min(limit + offset, MAX_LIMIT)), kind: q.kind ?? 'block' });
  if (q.repo) params.set('repo', q.repo);
  if (q.category) params.set('category', q.category);
  if (q.validation) params.set('validation', q.validation);
  if (q.group === false) params.set('group', 'false');
  let body: unknown;
  try {
    const answer = await answerOf(
      new URL(`v1/search?${params}`, server.url).toString(),
      { method: 'GET' },
      { maxBytes: MAX_ANSWER_BYTES, timeoutMs: how.timeoutMs ?? TIMEOUT_MS, signal: how.signal },
    );
    if (nestsDeeper(answer, MAX_DEPTH)) throw new Error(`it answered lists or objects nested deeper than ${MAX_DEPTH}`);
    body = JSON.parse(answer);
  } catch (err) {
    throw new Error(`the search server ${server.label}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const hits = (body as { hits?: unknown } | null)?.hits;
  if (!Array.isArray(hits)) throw new Error(`the search server ${server.label} answered something that is not a list of hits`);
  const kept = hits.slice(0, MAX_LIMIT).flatMap((h) => hitFrom(h, server.label) ?? []);
  return { hits: kept, leftOut: Math.min(hits.length, MAX_LIMIT) - kept.length };
}

/**
 * One page of hits from several answers to one query (the local index's first), merged by score: scores are BM25
 * within each index, so a block ranks as it would in its own; a target two answers have is listed once, as the first
 * of them has it (a server's hit never stands for a block of this index).
 */
export function mergeAnswers(answers: SearchHit[][], q: SearchQuery): SearchHit[] {
  const { limit, offset } = pageOf(q);
  const owner = new Map<string, number>();
  answers.forEach((hits, order) => hits.forEach((h) => owner.has(h.target) || owner.set(h.target, order)));
  const all = answers.flatMap((hits, order) => hits.flatMap((h, rank) => (owner.get(h.target) === order ? [{ h, order, rank }] : [])));
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
 * `q` over the local index (`here`) and the team's servers, asked at once: their answers merged (`mergeAnswers`); a
 * server that fails or answers wrong leaves the others' hits, with a warning that says why.
 */
export async function searchWithServers(
  here: (q: SearchQuery) => SearchHit[],
  q: SearchQuery,
  servers: TeamServer[],
  how: Asking = {},
): Promise<{ hits: SearchHit[]; warnings: string[] }> {
  const { limit, offset } = pageOf(q);
  // every answer's first page up to the end of the one asked (a page of the merge may take from any of them)
  const first: SearchQuery = { ...q, limit: limit + offset, offset: 0 };
  const asked = servers.map((s) => askServer(s, first, how));
  const local = here(first);
  const warnings: string[] = [];
  const remote = await Promise.all(
    asked.map((a, k) =>
      a.then(
        ({ hits, leftOut }) => {
          if (leftOut) warnings.push(`the search server ${servers[k].label}: ${leftOut} of its hits left out (not what a hit is)`);
          return hits;
        },
        (err: unknown) => {
          warnings.push(err instanceof Error ? err.message : String(err));
          return [] as SearchHit[];
        },
      ),
    ),
  );
  return { hits: mergeAnswers([local, ...remote], q), warnings };
}
