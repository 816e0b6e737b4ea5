/** The index's requests: its status, re-indexing, search, statistics and the tree of blocks. */
import type { Connection } from 'vscode-languageserver';
import type { IndexService } from '../core/service/indexService';
import { shadowedRepositories, sharedRepositories } from '../core/store/sharedIndex';
import { searchBlocks, searchSuggestion, type SearchHit } from '../core/search/search';
import { embeddingsAt, searchSemantic } from '../core/search/semantic';
import { searchWithServers, serverAt } from '../core/search/served';
import { blocksPerRepo, indexStats } from '../core/store/stats';
import { observedCoverage } from '../core/store/observed';
import { GetIndexStatus, GetStats, ListTree, ReindexRepositories, SearchBlocks, SuggestSearch, UseSharedIndex } from '../shared/protocol';
import type { TreeNode } from '../shared/protocol';
import { onRequest, signalOf } from './rpc';

/** How long a search in the editor waits for a team's search server. */
const EDITOR_SERVER_MS = 3000;

export function registerIndexHandlers(connection: Connection, service: () => IndexService): void {
  onRequest(connection, GetIndexStatus, () => service().status);
  onRequest(connection, ReindexRepositories, async (params, token) => {
    const s = service();
    if (params) s.configure(params);
    // one repository: a run over it alone, which leaves the others as they are
    const one = params?.only === undefined ? undefined : s.configured(params.only);
    if (params?.only !== undefined && !one) throw new Error(`${params.only} is not in nnrag.repositories`);
    const run = one ? s.reindex([one], { live: true }) : s.reindex();
    // cancelling the request stops this run (what was indexed so far stays)
    const sub = token.onCancellationRequested(() => s.cancel());
    try {
      return await run;
    } finally {
      sub.dispose();
    }
  });
  onRequest(connection, UseSharedIndex, ({ location }) => service().useShared(location));
  onRequest(connection, SearchBlocks, async ({ embeddings, servers, ...q }, token) => {
    const { db } = await service().ready();
    if (servers?.length && !embeddings?.url) {
      // the team's search servers (nnrag.search.servers) beside this index: one that fails leaves the others, said in
      // the log; an address that is not one is said there too
      const known = servers.flatMap((s) => {
        try {
          return [serverAt(s)];
        } catch (err) {
          connection.console.warn(`nnrag.search.servers: ${err instanceof Error ? err.message : String(err)}`);
          return [];
        }
      });
      // (a search box waits for no server longer than it takes to type a word; one typed over is cancelled)
      const merged = await searchWithServers((x) => searchBlocks(db, x), q, known, { timeoutMs: EDITOR_SERVER_MS, signal: signalOf(token) });
      // (a search typed over says nothing: it was not wanted any more)
      if (!token.isCancellationRequested) for (const w of merged.warnings) connection.console.warn(`nnrag.search.servers: ${w}`);
      return merged.hits;
    }
    if (!embeddings?.url) return searchBlocks(db, q);
    // the user's own embedding model (nnrag.search.embeddings): a wrong address or a failing service leaves the text
    // ranking, said in the log
    let ranked: { hits: SearchHit[]; warning?: string };
    try {
      ranked = await searchSemantic(db, q, embeddingsAt(embeddings.url, embeddings.model || undefined));
    } catch (err) {
      ranked = { hits: searchBlocks(db, q), warning: err instanceof Error ? err.message : String(err) };
    }
    if (ranked.warning) connection.console.warn(`nnrag.search.embeddings: ${ranked.warning}`);
    return ranked.hits;
  });
  onRequest(connection, SuggestSearch, async ({ text }) => ({ meant: searchSuggestion((await service().ready()).db, text) }));
  onRequest(connection, GetStats, async () => indexStats((await service().ready()).db));
  onRequest(connection, ListTree, async ({ parent, query }) => {
    const { db } = await service().ready();
    if (!parent) {
      // every configured repository has a node: one whose last run failed says why (with what it indexed before, if any)
      const failing = new Map(
        service()
          .failing()
          .map((f) => [f.name, f]),
      );
      const shared = sharedRepositories(db);
      const shadowed = shadowedRepositories(db);
      const configured = (name: string): boolean => service().configured(name) !== undefined;
      // installed packages say which version, from which interpreter
      const installed = new Map(
        db.all("SELECT name, location, commit_id FROM repos WHERE kind = 'python-env'").map((r) => [
          String(r.name),
          {
            folder: String(r.location),
            ...(r.commit_id ? { version: String(r.commit_id) } : {}),
            ...(service().configured(String(r.name))?.python ? { python: service().configured(String(r.name))!.python } : {}),
          },
        ]),
      );
      // how much of each repository its tests and builders cover, once observed
      const observed = new Map(db.all('SELECT id, name FROM repos').map((r) => [String(r.name), observedCoverage(db, Number(r.id))] as const));
      const nodes = blocksPerRepo(db).map((r): TreeNode => ({
        kind: 'repo',
        label: r.repo,
        repo: r.repo,
        count: r.blocks,
        error: failing.get(r.repo)?.message,
        ...(shared.has(r.repo) && !configured(r.repo) ? { shared: true } : {}),
        ...(shadowed.has(r.repo) && !shared.has(r.repo) ? { shadowsShared: true } : {}),
        ...(installed.has(r.repo) ? { installed: installed.get(r.repo) } : {}),
        ...(observed.get(r.repo) ? { observed: observed.get(r.repo) } : {}),
      }));
      for (const f of failing.values()) if (!nodes.some((n) => n.repo === f.name)) nodes.push({ kind: 'repo', label: f.name, repo: f.name, error: f.message });
      return nodes;
    }
    if (parent.kind === 'repo') {
      const hits = searchBlocks(db, { text: query ?? '', repo: parent.repo, limit: 1000, group: false });
      const byCat = new Map<string, number>();
      for (const h of hits) byCat.set(h.category, (byCat.get(h.category) ?? 0) + 1);
      return [...byCat.entries()]
        .sort((a, b) => a[0].localeCompare(b[0]))
        .map(([category, n]): TreeNode => ({ kind: 'category', label: category, repo: parent.repo, category, count: n }));
    }
    if (parent.kind === 'category') {
      return searchBlocks(db, { text: query ?? '', repo: parent.repo, category: parent.category, limit: 1000, group: false }).map((hit): TreeNode => ({
        kind: 'block',
        label: hit.name,
        repo: hit.repo,
        category: hit.category,
        hit,
      }));
    }
    return [];
  });
}
