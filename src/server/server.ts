/**
 * The language server: holds the index and the core, answers the custom requests of src/shared/protocol.ts,
 * and gives provenance hovers on pulled files. Never writes to stdout (the LSP pipe); logs go to the client.
 */
import { watch } from 'fs';
import type { FSWatcher } from 'fs';
import * as path from 'path';
import type { CancellationToken, CodeLens, Connection, Hover, InitializeResult } from 'vscode-languageserver';
import { CodeLensRefreshRequest, MessageType, ShowMessageNotification, TextDocuments, TextDocumentSyncKind } from 'vscode-languageserver';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { findTarget } from '../core/store/target';
import { readProvenance } from '../core/emit/emit';
import { upstreamStatus } from '../core/emit/upstream';
import { CancelledError, errorMessage, NnragError } from '../core/base/errors';
import { IndexDb } from '../core/store/database';
import { finishRun, indexSource, Rediscovery, removeRepositoriesExcept } from '../core/index/indexer';
import { indexStats } from '../core/store/stats';
import { PythonParser } from '../core/parse/parser';
import { lazyPool } from '../core/analysis/parsePool';
import { warmUpParser } from '../core/analysis/warmUp';
import { openPullSession, pullBlock } from '../core/pull/pull';
import type { PullSession } from '../core/pull/pull';
import { describeClass } from '../core/resolve/describe';
import { loadModuleTable } from '../core/resolve/loadTable';
import { searchBlocks, searchSuggestion } from '../core/search/search';
import { describeSandbox } from '../core/validate/sandbox';
import { openSource } from '../core/sources/open';
import { readClassFile } from '../core/store/sourceText';
import type { SourceConfig } from '../core/sources/types';
import {
  ExplainDependencies,
  GetBlockDetails,
  GetIndexStatus,
  GetProvenance,
  GetSandbox,
  GetGitCredentials,
  GetStats,
  GitCredentialsRejected,
  IndexStatusChanged,
  ListTree,
  PullBlock,
  ReadSource,
  ReindexRepositories,
  SearchBlocks,
  SuggestSearch,
} from '../shared/protocol';
import type { IndexStatus, InitOptions, Method, TreeNode } from '../shared/protocol';
import { provenanceHover, upstreamLens } from './provenance';

/** Changes a watcher reports within this many milliseconds make one live update (a save, a checkout). */
const WATCH_DEBOUNCE_MS = 25;
/** Rediscovery and duplicate groups after live updates, once edits pause this long. */
const FINISH_AFTER_MS = 300;
/** Parsed modules a server's pull session keeps between pulls (see pullSession). */
const KEEP_PARSED_MODULES = 300;

function onRequest<P, R>(connection: Connection, m: Method<P, R>, handler: (params: P, token: CancellationToken) => Promise<R> | R): void {
  connection.onRequest(m.method, (params: P, token: CancellationToken): Promise<unknown> => Promise.resolve(handler(params, token)));
}

/** An AbortSignal that follows an LSP cancellation token (the core only knows AbortSignal). */
function signalOf(token: CancellationToken): AbortSignal {
  const controller = new AbortController();
  if (token.isCancellationRequested) controller.abort();
  token.onCancellationRequested(() => controller.abort());
  return controller.signal;
}

export function startServer(connection: Connection): void {
  const documents = new TextDocuments(TextDocument);
  let options: InitOptions;
  let db: IndexDb | undefined;
  let parser: PythonParser | undefined;
  // parsing on every core; the first file to parse starts the workers, a warm start starts none
  let parsePool: ReturnType<typeof lazyPool> | undefined;
  let parserWarmed = false;
  // see pullSession
  let pullCache: PullSession | undefined;
  let runsInProgress = 0;
  let status: IndexStatus = { state: 'starting', message: 'Starting', files: 0, blocks: 0, repos: 0 };
  let indexing: Promise<IndexStatus> | undefined;
  let indexAbort: AbortController | undefined;
  let canRefreshLenses = false;

  const log = (area: string, message: string): void => connection.console.log(`[${area}] ${message}`);
  const setStatus = (s: IndexStatus): void => {
    status = s;
    connection.sendNotification(IndexStatusChanged.method, s);
  };
  const counts = (): Pick<IndexStatus, 'files' | 'blocks' | 'repos'> => ({
    files: Number(db!.get('SELECT count(*) AS n FROM files')?.n ?? 0),
    blocks: Number(db!.get('SELECT count(*) AS n FROM classes WHERE is_block = 1')?.n ?? 0),
    repos: Number(db!.get('SELECT count(*) AS n FROM repos')?.n ?? 0),
  });

  // one opening shared by every caller: requests that arrive while the index opens wait for the same promise
  let opening: Promise<{ db: IndexDb; parser: PythonParser }> | undefined;
  function ready(): Promise<{ db: IndexDb; parser: PythonParser }> {
    opening ??= (async () => {
      parser = await PythonParser.create(options);
      parsePool = lazyPool(options.parseWorker, options, parser);
      const file = path.join(options.storageDir, 'index.db');
      let opened: Awaited<ReturnType<typeof IndexDb.open>>;
      try {
        opened = await IndexDb.open(file, { sqlWasm: options.sqlWasm, write: 'try' });
      } catch (err) {
        if (!(err instanceof NnragError) || !/being written by/.test(err.message)) throw err;
        // another window's server writes this index: read it, keep this window's changes in memory only
        log('index', `${errorMessage(err)}: this window reads the index and saves nothing`);
        opened = await IndexDb.open(file, { sqlWasm: options.sqlWasm, readOnly: true });
      }
      db = opened.db;
      if (opened.recovered) log('index', `the index was unreadable (${opened.recovered.reason}); moved to ${opened.recovered.movedTo} and rebuilt`);
      return { db, parser };
    })();
    opening.catch(() => (opening = undefined));
    return opening;
  }

  /**
   * Indexes `repositories`. A full run (the settings) drops repositories that left them and watches local folders;
   * a live run (`live`: files changed under a watched folder) touches only those repositories, lightly.
   */
  async function reindex(
    repositories: SourceConfig[],
    { live = false, only }: { live?: boolean; only?: Map<string, string[] | undefined> } = {},
  ): Promise<IndexStatus> {
    // runs never overlap: each waits for the one before; a full run cancels it first, a live update does not
    if (!live) indexAbort?.abort();
    const previous = indexing;
    const controller = new AbortController();
    const run = (async (): Promise<IndexStatus> => {
      await previous?.catch(() => undefined);
      indexAbort = controller;
      const t0 = Date.now();
      log('index', `indexing ${repositories.length} repositories`);
      const { db: d, parser: p } = await ready();
      let changed = 0;
      // repositories that left the settings are dropped, unless a configured one could not be opened this time
      const seen = new Set<string>();
      const folders = new Map<string, SourceConfig>();
      const gits: SourceConfig[] = [];
      let allOpened = true;
      // a live update has no rediscovery of its own: its blocks are found when edits pause (scheduleFinish)
      const rediscover = live ? undefined : new Rediscovery();
      runsInProgress++;
      pullCache = undefined;
      try {
        for (const config of repositories) {
          setStatus({ ...status, state: 'indexing', message: `Indexing ${config.name ?? config.location}` });
          try {
            const sources = await openSource(config, {
              cacheDir: options.cacheDir,
              signal: controller.signal,
              onMessage: (m) => log('git', m),
              // credentials come from the client's secret storage, asked for only when a server wants them
              onAuth: async (url) => (await connection.sendRequest<{ username?: string; password?: string } | null>(GetGitCredentials.method, { url })) ?? undefined,
              onAuthFailure: (url) => void connection.sendNotification(GitCredentialsRejected.method, { url }),
            });
            for (const source of sources) {
              seen.add(source.info.name);
              if (source.info.kind === 'folder') folders.set(source.info.root, config);
              if (source.info.kind === 'git') gits.push(config);
              const r = await indexSource(d, source, {
                parser: p,
                // a live update parses its few files here; a full run starts workers
                parse: live ? undefined : parsePool?.parse,
                concurrency: live ? 1 : (parsePool?.inFlight ?? 1),
                hereMaxBytes: parsePool?.hereMaxBytes,
                signal: controller.signal,
                // a live update of a folder looks at the files the watcher saw change, not the whole folder
                only: only?.get(source.info.root),
                maxFileBytes: options.maxFileKb * 1024,
                rediscover,
                onProgress: (pr) => {
                  if (pr.step % 25 === 0 || pr.step === pr.total) {
                    setStatus({ ...status, state: 'indexing', message: `Indexing ${source.info.name}`, progress: { step: pr.step, total: pr.total, repo: source.info.name } });
                  }
                },
              });
              changed += r.changed;
              log('index', `${r.repo}: ${r.files} files, ${r.computed} changed, ${r.deleted} removed, ${r.seconds.toFixed(2)} s`);
              if (r.failed.count) log('index', `${r.repo}: ${r.failed.count} files could not be read or parsed, e.g. ${r.failed.first.map((f) => `${f.path}: ${f.detail}`).join('; ')}`);
              // let search answer between repositories
              await new Promise((resolve) => setImmediate(resolve));
            }
          } catch (err) {
            if (err instanceof CancelledError) throw err;
            allOpened = false;
            log('index', `${config.name ?? config.location}: ${errorMessage(err)}`);
            // a notification, not a request: a client that does not answer message requests cannot crash us
            connection.sendNotification(ShowMessageNotification.type, { type: MessageType.Error, message: `NN-RAG: cannot index ${config.name ?? config.location}: ${errorMessage(err)}` });
          }
        }
        // the workers' memory goes back before the finish (discovery and duplicate groups over the whole index)
        if (!live) await parsePool?.close();
        if (allOpened && !live) {
          const removed = removeRepositoriesExcept(d, seen);
          if (removed.length) log('index', `removed ${removed.join(', ')} (no longer in nnrag.repositories)`);
          changed += removed.length;
        }
        if (!live) {
          watchFolders(folders);
          scheduleFetches(gits);
          // live updates parse in this thread, whose parser the full run left cold (it parsed in workers)
          if (folders.size && !parserWarmed) {
            parserWarmed = true;
            setImmediate(() => void warmUpParser(p).catch((err: unknown) => log('index', `parser warm-up failed: ${errorMessage(err)}`)));
          }
        }
        // a live update is searchable as soon as its files are in (classes plainly subclassing torch's modules are
        // blocks at once); rediscovery and duplicate groups follow when the edits pause
        if (changed && live) scheduleFinish(d);
        else if (changed) finishRun(d);
        d.scheduleSave(500, (err) => log('index', `save failed: ${errorMessage(err)}`));
        const s: IndexStatus = { state: 'ready', message: `${live ? 'Updated' : 'Indexed'} in ${((Date.now() - t0) / 1000).toFixed(live ? 3 : 1)} s`, ...counts() };
        if (live) log('index', `live update: ${changed} files changed, searchable after ${Date.now() - t0} ms`);
        setStatus(s);
        // upstream code may have changed under pulled files
        if (changed && canRefreshLenses) connection.sendRequest(CodeLensRefreshRequest.type).catch(() => undefined);
        return s;
      } catch (err) {
        if (err instanceof CancelledError) {
          if (changed) finishRun(d);
          const s: IndexStatus = { state: 'ready', message: 'Indexing cancelled', ...counts() };
          setStatus(s);
          return s;
        }
        const s: IndexStatus = { ...status, state: 'error', message: errorMessage(err) };
        setStatus(s);
        throw err;
      } finally {
        runsInProgress--;
        pullCache = undefined;
      }
    })();
    indexing = run;
    return run;
  }

  /**
   * Pulls (and dependency views) share one module table and pull session while the index does not change: loading the
   * table takes 110-230 ms over the Debian corpus, more than a pull itself. Every index run drops it, and while one
   * runs (files land between requests) each request reads the index afresh. The modules a session keeps parsed are let
   * go past a few hundred.
   */
  function pullSession(d: IndexDb): PullSession {
    if (runsInProgress > 0) return openPullSession(d, loadModuleTable(d));
    if (pullCache?.db !== d) pullCache = openPullSession(d, loadModuleTable(d));
    else if (pullCache.parsed.size > KEEP_PARSED_MODULES) pullCache.parsed.clear();
    return pullCache;
  }

  let finishTimer: NodeJS.Timeout | undefined;
  function scheduleFinish(d: IndexDb): void {
    if (finishTimer) clearTimeout(finishTimer);
    finishTimer = setTimeout(() => {
      finishTimer = undefined;
      const previous = indexing;
      indexing = (async (): Promise<IndexStatus> => {
        await previous?.catch(() => undefined);
        const t0 = Date.now();
        finishRun(d, {}, { light: true });
        pullCache = undefined;
        log('index', `live update: blocks rediscovered in ${Date.now() - t0} ms`);
        d.scheduleSave(500, (err) => log('index', `save failed: ${errorMessage(err)}`));
        setStatus({ ...status, ...counts() });
        if (canRefreshLenses) connection.sendRequest(CodeLensRefreshRequest.type).catch(() => undefined);
        return status;
      })();
    }, FINISH_AFTER_MS);
    finishTimer.unref();
  }

  // live updates: local folders are watched; a change re-indexes the files it names (a folder or a licence: the folder)
  const watchers = new Map<string, FSWatcher>();
  const pending = new Map<string, { config: SourceConfig; files: Set<string>; all: boolean }>();
  let debounce: NodeJS.Timeout | undefined;
  function watchFolders(folders: Map<string, SourceConfig>): void {
    for (const [root, w] of watchers) {
      if (!folders.has(root)) {
        w.close();
        watchers.delete(root);
      }
    }
    for (const [root, config] of folders) {
      if (watchers.has(root)) continue;
      try {
        const w = watch(root, { recursive: true, persistent: false }, (_event, name) => {
          const file = String(name ?? '').split(path.sep).join('/');
          const entry = pending.get(root) ?? { config, files: new Set<string>(), all: false };
          if (file.endsWith('.py')) entry.files.add(file);
          // a licence, or a name without an extension (a folder created, renamed or removed): the whole folder
          else if (!file || /(^|\/)(LICEN[CS]E[^/]*|COPYING)$/.test(file) || !/\.[^/]*$/.test(file)) entry.all = true;
          else return;
          pending.set(root, entry);
          if (debounce) clearTimeout(debounce);
          debounce = setTimeout(() => {
            const entries = [...pending.entries()];
            pending.clear();
            const only = new Map(entries.map(([r, e]) => [r, e.all ? undefined : [...e.files]]));
            reindex(
              entries.map(([, e]) => e.config),
              { live: true, only },
            ).catch((err) => log('index', `live update: ${errorMessage(err)}`));
          }, WATCH_DEBOUNCE_MS);
        });
        w.on('error', (err) => {
          log('index', `stopped watching ${root}: ${errorMessage(err)}`);
          w.close();
          watchers.delete(root);
        });
        watchers.set(root, w);
      } catch (err) {
        // inotify limits, a folder that vanished: indexing on demand still works
        log('index', `cannot watch ${root}: ${errorMessage(err)}`);
      }
    }
  }

  // git repositories are fetched on a schedule; only changed blobs are parsed again
  let fetchTimer: NodeJS.Timeout | undefined;
  function scheduleFetches(gits: SourceConfig[]): void {
    if (fetchTimer) clearInterval(fetchTimer);
    fetchTimer = undefined;
    const minutes = options.gitFetchIntervalMinutes ?? 0;
    if (!gits.length || !(minutes > 0)) return;
    fetchTimer = setInterval(() => {
      reindex(gits, { live: true }).catch((err) => log('git', `scheduled fetch: ${errorMessage(err)}`));
    }, minutes * 60_000);
    fetchTimer.unref();
  }

  connection.onInitialize((params): InitializeResult => {
    options = params.initializationOptions as InitOptions;
    canRefreshLenses = params.capabilities.workspace?.codeLens?.refreshSupport === true;
    return {
      capabilities: {
        textDocumentSync: TextDocumentSyncKind.Incremental,
        hoverProvider: true,
        codeLensProvider: { resolveProvider: false },
      },
      serverInfo: { name: 'nn-rag', version: '0.1.0' },
    };
  });

  connection.onInitialized(() => {
    reindex(options.repositories).catch((err) => log('index', errorMessage(err)));
  });

  onRequest(connection, GetIndexStatus, () => status);
  onRequest(connection, ReindexRepositories, async (params, token) => {
    if (params?.repositories) options.repositories = params.repositories;
    if (params?.gitFetchIntervalMinutes !== undefined) options.gitFetchIntervalMinutes = params.gitFetchIntervalMinutes;
    const run = reindex(options.repositories);
    // cancelling the request stops this run (what was indexed so far stays)
    const sub = token.onCancellationRequested(() => indexAbort?.abort());
    try {
      return await run;
    } finally {
      sub.dispose();
    }
  });
  onRequest(connection, SearchBlocks, async (q) => searchBlocks((await ready()).db, q));
  onRequest(connection, SuggestSearch, async ({ text }) => ({ meant: searchSuggestion((await ready()).db, text) }));
  onRequest(connection, GetStats, async () => indexStats((await ready()).db));
  onRequest(connection, ListTree, async ({ parent, query }) => {
    const { db: d } = await ready();
    if (!parent) {
      return d.all('SELECT r.name, count(c.id) AS n FROM repos r LEFT JOIN classes c ON c.repo_id = r.id AND c.is_block = 1 GROUP BY r.id ORDER BY r.name').map(
        (r): TreeNode => ({ kind: 'repo', label: String(r.name), repo: String(r.name), count: Number(r.n) }),
      );
    }
    if (parent.kind === 'repo') {
      const hits = searchBlocks(d, { text: query ?? '', repo: parent.repo, limit: 1000, group: false });
      const byCat = new Map<string, number>();
      for (const h of hits) byCat.set(h.category, (byCat.get(h.category) ?? 0) + 1);
      return [...byCat.entries()]
        .sort((a, b) => a[0].localeCompare(b[0]))
        .map(([category, n]): TreeNode => ({ kind: 'category', label: category, repo: parent.repo, category, count: n }));
    }
    if (parent.kind === 'category') {
      return searchBlocks(d, { text: query ?? '', repo: parent.repo, category: parent.category, limit: 1000, group: false }).map(
        (hit): TreeNode => ({ kind: 'block', label: hit.name, repo: hit.repo, category: hit.category, hit }),
      );
    }
    return [];
  });
  onRequest(connection, GetBlockDetails, async ({ target }) => {
    const { db: d } = await ready();
    return describeClass(d, findTarget(d, target), pullSession(d).table);
  });
  onRequest(connection, ExplainDependencies, async ({ target, python }) => {
    const { db: d, parser: p } = await ready();
    const report = await pullBlock(pullSession(d), findTarget(d, target), { parser: p, python, validate: false, manifest: false });
    return { target: report.target, sizes: report.sizes!, graph: report.graph! };
  });
  onRequest(connection, PullBlock, async (params, token) => {
    const { db: d, parser: p } = await ready();
    const ref = findTarget(d, params.target);
    const report = await pullBlock(pullSession(d), ref, {
      parser: p,
      out: params.out,
      python: params.python,
      runner: options.runner,
      validate: params.validate,
      timeoutMs: params.timeoutSeconds * 1000,
      memoryMb: params.memoryMb,
      signal: signalOf(token),
      allowWeakSandbox: params.allowWeakSandbox === true,
      wholeClasses: params.wholeClasses === true,
    });
    d.scheduleSave(500);
    log('pull', `${report.target}: ${report.status}${report.tier ? ` (${report.tier})` : ''}${report.category ? ` ${report.category}: ${report.message}` : ''}`);
    return report;
  });
  onRequest(connection, GetSandbox, ({ memoryMb }) => describeSandbox(memoryMb));
  onRequest(connection, GetProvenance, ({ text }) => readProvenance(text) ?? null);
  onRequest(connection, ReadSource, async ({ target }) => {
    const { db: d } = await ready();
    const ref = findTarget(d, target);
    const { text } = await readClassFile(d, ref);
    return { text, path: ref.path, line: ref.line, repo: ref.repo };
  });

  connection.onHover((params): Hover | null => {
    const doc = documents.get(params.textDocument.uri);
    if (!doc) return null;
    return provenanceHover(doc.getText(), doc.offsetAt(params.position), status);
  });

  connection.onCodeLens(async (params): Promise<CodeLens[]> => {
    const doc = documents.get(params.textDocument.uri);
    const prov = doc && readProvenance(doc.getText());
    if (!doc || !prov || status.state === 'starting') return [];
    return upstreamLens(doc.getText(), prov, upstreamStatus((await ready()).db, prov));
  });

  connection.onShutdown(async () => {
    for (const w of watchers.values()) w.close();
    watchers.clear();
    if (fetchTimer) clearInterval(fetchTimer);
    if (finishTimer) clearTimeout(finishTimer);
    indexAbort?.abort();
    await indexing?.catch(() => undefined);
    await parsePool?.close().catch(() => undefined);
    await db?.save().catch(() => undefined);
  });

  documents.listen(connection);
  connection.listen();
}
