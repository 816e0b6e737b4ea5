/**
 * The index as a long-lived service, for the language server and tests: it opens the database once, runs index runs
 * one after the other (a full run cancels the one before; live updates queue), watches local folders and re-indexes
 * the files that change, fetches git repositories on a schedule, and keeps one pull session while the index does not
 * change, and a warm validator. It knows nothing of LSP: what it has to say goes through the `ServiceEvents` it is given.
 */
import { repoKind } from '../sources/kinds';
import { watch } from 'fs';
import type { FSWatcher } from 'fs';
import * as path from 'path';
import { lazyPool } from '../analysis/parsePool';
import { warmUpParser } from '../analysis/warmUp';
import { CancelledError, errorMessage } from '../base/errors';
import { dropRepositories, finishRun, removeRepositoriesExcept } from '../index/indexer';
import { importedConfig } from '../store/sourceText';
import { copyRepositories } from '../index/mergeIndex';
import { PARSER_VERSION } from '../parse/facts';
import { indexSources } from '../index/indexSources';
import type { WasmPaths } from '../parse/parser';
import { PythonParser } from '../parse/parser';
import { keepSearchEngine, prepareSnapshot } from '../search/search';
import { openPullSession } from '../pull/session';
import { Workspace } from '../workspace/workspace';
import type { PullSession } from '../pull/session';
import { loadModuleTable } from '../resolve/loadTable';
import { redactUrls } from '../sources/git';
import type { GitAuth } from '../sources/git';
import { repositoryNames } from '../sources/names';
import type { SourceConfig } from '../sources/types';
import { IndexDb } from '../store/database';
import { forgetShared, isUnreachable, layeredOn, layerShared, refreshShared, shadowShared, sharedRepositories } from '../store/sharedIndex';
import type { SharedRefresh } from '../store/sharedIndex';
import { indexCounts } from '../store/stats';
import type { ValidatorPoolLike } from '../validate/runner';
import { ValidatorPool } from '../validate/validatorPool';

/** Changes a watcher reports within this many milliseconds make one live update (a save, a checkout). */
const WATCH_DEBOUNCE_MS = 25;
/** Rediscovery and duplicate groups after live updates, once edits pause this long. */
const FINISH_AFTER_MS = 300;
/** Parsed modules a pull session keeps between pulls (see pullSession). */
const KEEP_PARSED_MODULES = 300;
/** A warm validator is started afresh after this many validations (whatever the judge accumulated goes with it). */
const VALIDATOR_RUNS = 50;
/** A warm validator idle this long is stopped (its torch import holds a few hundred MB). */
const VALIDATOR_IDLE_MS = 10 * 60_000;

/** The warm validator: one judge with torch imported, for one interpreter, memory limit and set of original roots. */
interface WarmValidator {
  pool: ValidatorPool;
  key: string;
  runs: number;
  idle?: NodeJS.Timeout;
}

export type IndexState = 'starting' | 'indexing' | 'ready' | 'error';

export interface IndexStatus {
  state: IndexState;
  message: string;
  files: number;
  blocks: number;
  repos: number;
  /** Set while indexing. */
  progress?: { step: number; total: number; repo: string };
  /** Configured repositories whose last run failed (each with its message in `IndexService.failing`). */
  failing?: number;
  /** The shared index in use (`sharedIndex`): its last refresh, and why it was refused when it was. */
  shared?: SharedStatus;
}

export interface SharedStatus {
  /** Where it comes from (credentials removed). */
  location: string;
  /** `unreachable`: it could not be fetched (or read); `refused`: it was, and is not a usable index. */
  state: 'downloaded' | 'unchanged' | 'refused' | 'unreachable';
  repositories: string[];
  message?: string;
}

/** A configured repository whose last index run failed, and why. */
export interface FailingRepository {
  /** The name it indexes under (what Retry and Remove take). */
  name: string;
  location: string;
  message: string;
}

export interface ServiceOptions extends WasmPaths {
  /** Where the database (index.db) lives. */
  storageDir: string;
  sqlWasm: string;
  /** The parse worker script; without it, parsing stays in this thread. */
  parseWorker?: string;
  /** Where git clones are cached (and the originals' runs, under `originals/`). */
  cacheDir: string;
  /** python-runner/judge.py: the judge the service's pulls and validations run. */
  runner?: string;
  repositories: SourceConfig[];
  maxFileKb: number;
  /** Fetch git repositories for new commits this often (minutes); 0 or absent: only at start and on demand. */
  gitFetchIntervalMinutes?: number;
  /** A team's published index (`nn-rag export` archive: a path or an http(s) URL) to start from. */
  sharedIndex?: string;
  /** The most a shared index may download and unpack to (MB), and whether a redirect to another origin is followed. */
  sharedIndexMaxSizeMB?: number;
  sharedIndexFollowRedirects?: boolean;
}

export interface ServiceEvents {
  log(area: string, message: string): void;
  /** The status changed (progress while indexing, counts when done). */
  status(s: IndexStatus): void;
  /** A repository could not be indexed: a message for the user. */
  failed(message: string): void;
  /** Indexed code changed: what depends on it (pulled files' upstream state) should be asked again. */
  changed(): void;
  /** Credentials for a git server that asks for them. */
  auth?: GitAuth;
  /** The credentials given for a URL were refused. */
  authFailed?: (url: string) => void;
}

export class IndexService {
  private current: IndexStatus = { state: 'starting', message: 'Starting', files: 0, blocks: 0, repos: 0 };
  private opening: Promise<{ db: IndexDb; parser: PythonParser }> | undefined;
  private db: IndexDb | undefined;
  /** Parsing on every core; the first file to parse starts the workers, a warm start starts none. */
  private parsePool: ReturnType<typeof lazyPool> | undefined;
  private parserWarmed = false;
  private pullCache: PullSession | undefined;
  private runsInProgress = 0;
  private indexing: Promise<IndexStatus> | undefined;
  private indexAbort: AbortController | undefined;
  private finishTimer: NodeJS.Timeout | undefined;
  private fetchTimer: NodeJS.Timeout | undefined;
  private readonly watchers = new Map<string, FSWatcher>();
  private readonly pending = new Map<string, { config: SourceConfig; files: Set<string>; all: boolean }>();
  private debounce: NodeJS.Timeout | undefined;
  private warm: WarmValidator | undefined;
  /** Configured repositories whose last run failed, by `labelOf`: shown in the tree, said once per new message. */
  private readonly failures = new Map<string, FailingRepository>();
  private sharedStatus: SharedStatus | undefined;
  private justRefreshed: SharedRefresh | undefined;

  constructor(
    private readonly options: ServiceOptions,
    private readonly events: ServiceEvents,
  ) {
    this.options.repositories = enabledOnly(options.repositories);
  }

  get status(): IndexStatus {
    return this.current;
  }

  private setStatus(s: IndexStatus): void {
    this.current = { ...s, shared: this.options.sharedIndex ? this.sharedStatus : undefined };
    this.events.status(this.current);
  }

  /**
   * The use-case API over the index as it is now (core/workspace): its pulls share this service's module table and
   * pull session while the index does not change (a snapshot taken after each index run), and a single validating
   * pull or validation runs in the warm validator. The originals' runs are kept under the service's cache folder.
   */
  async workspace(): Promise<Workspace> {
    const { db, parser } = await this.ready();
    const runner = this.options.runner;
    return Workspace.over(db, this.options, {
      runner,
      cacheDir: this.options.cacheDir,
      parser,
      session: () => this.pullSession(db),
      warm: runner ? (python, memoryMb, roots) => this.warmValidator(python, runner, memoryMb, roots) : undefined,
    });
  }

  /** The database and parser, opened once: callers that arrive while they open wait for the same promise. */
  ready(): Promise<{ db: IndexDb; parser: PythonParser }> {
    this.opening ??= (async () => {
      const { options } = this;
      const parser = await PythonParser.create(options);
      this.parsePool = lazyPool(options.parseWorker, options, parser);
      const file = path.join(options.storageDir, 'index.db');
      if (options.sharedIndex) await this.startFromShared(options.sharedIndex, file);
      // the search's snapshot read and checked while the index opens (both are read whole)
      const snapshot = prepareSnapshot(file);
      const opened = await IndexDb.open(file, { sqlWasm: options.sqlWasm, write: 'or-read' });
      // another window's server writes this index: this one reads it and keeps its changes in memory only
      if (opened.readOnlyBecause) this.events.log('index', `${opened.readOnlyBecause}: this window reads the index and saves nothing`);
      this.db = opened.db;
      await keepSearchEngine(opened.db, snapshot);
      if (opened.recovered) this.events.log('index', `the index was unreadable (${opened.recovered.reason}); moved to ${opened.recovered.movedTo} and rebuilt`);
      return { db: opened.db, parser };
    })();
    this.opening.catch(() => (this.opening = undefined));
    return this.opening;
  }

  /**
   * Brings the shared index's copy up to date (downloaded only when it changed) and, when it changed, makes the
   * window's index start from it; the user's repositories are indexed on top by the next run. A shared index that
   * cannot be fetched or is refused is said once; the copy fetched before stays in use. Before the index opens.
   */
  private async startFromShared(location: string, file: string): Promise<void> {
    // (just fetched by useShared: not asked for again)
    const refreshed = this.justRefreshed ?? (await this.fetchShared(location));
    this.justRefreshed = undefined;
    if (refreshed && (await layerShared(this.sharedCopy(), file, refreshed, this.options.sqlWasm, carryOwnRepositories))) {
      this.events.log('index', 'the index starts from the shared index; your repositories are indexed on top');
    }
  }

  private sharedCopy(): string {
    return path.join(this.options.storageDir, 'shared', 'index.db');
  }

  private async fetchShared(location: string): Promise<SharedRefresh | undefined> {
    try {
      const mb = this.options.sharedIndexMaxSizeMB;
      const limits = { ...(mb && mb > 0 ? { maxBytes: Math.round(mb * 1024 ** 2) } : {}), allowRedirects: this.options.sharedIndexFollowRedirects === true };
      const r = await refreshShared(location, this.sharedCopy(), { sqlWasm: this.options.sqlWasm, limits });
      this.events.log('index', `shared index ${redactUrls(location)}: ${r.state} (${r.repositories.join(', ')})`);
      this.sharedStatus = { location: redactUrls(location), state: r.state, repositories: r.repositories };
      return r;
    } catch (err) {
      const message = errorMessage(err);
      this.events.log('index', `shared index: ${message}`);
      this.events.failed(`NN-RAG: ${message}`);
      this.sharedStatus = {
        location: redactUrls(location),
        state: isUnreachable(err) ? 'unreachable' : 'refused',
        repositories: this.sharedStatus?.repositories ?? [],
        message,
      };
      return undefined;
    }
  }

  /**
   * Uses the shared index at `location` (none: stops using one): fetched again when it changed (ETag), and when the
   * archive in use changed, the index is made again from it with the user's repositories indexed on top.
   */
  async useShared(location: string | undefined): Promise<IndexStatus> {
    const before = this.options.sharedIndex;
    this.options.sharedIndex = location || undefined;
    // no shared index any more: the next run drops its repositories
    if (!this.options.sharedIndex) return before ? this.reindex() : this.current;
    const refreshed = await this.fetchShared(this.options.sharedIndex);
    const { db } = await this.ready();
    if (!refreshed || layeredOn(db) === refreshed.sha256) {
      if (before !== this.options.sharedIndex) return this.reindex();
      this.setStatus(this.current);
      return this.current;
    }
    // the index is made again from the new archive: no run in progress, the old database saved and closed
    this.indexAbort?.abort();
    await this.indexing?.catch(() => undefined);
    await db.save().catch((err: unknown) => this.events.log('index', `save failed: ${errorMessage(err)}`));
    db.close();
    this.db = undefined;
    this.opening = undefined;
    this.pullCache = undefined;
    this.justRefreshed = refreshed;
    return this.reindex();
  }

  /** New settings for the next full run. */
  configure(change: { repositories?: SourceConfig[]; gitFetchIntervalMinutes?: number }): void {
    if (change.repositories) this.options.repositories = enabledOnly(change.repositories);
    if (change.gitFetchIntervalMinutes !== undefined) this.options.gitFetchIntervalMinutes = change.gitFetchIntervalMinutes;
  }

  /** The configured repository that indexes under `name`. */
  configured(name: string): SourceConfig | undefined {
    return this.options.repositories.find((r) => repositoryNames(r).includes(name));
  }

  /** The configured repositories whose last run failed, in the settings' order. */
  failing(): FailingRepository[] {
    return this.options.repositories.flatMap((r) => this.failures.get(labelOf(r)) ?? []);
  }

  /** Stops the index run in progress (what was indexed so far stays). */
  cancel(): void {
    this.indexAbort?.abort();
  }

  /**
   * Indexes `repositories` (default: the configured ones). A full run drops repositories that left them and watches
   * local folders; a live run (`live`: files changed under a watched folder) touches only those repositories, lightly.
   */
  reindex(
    repositories: SourceConfig[] = this.options.repositories,
    { live = false, only }: { live?: boolean; only?: Map<string, string[] | undefined> } = {},
  ): Promise<IndexStatus> {
    // runs never overlap: each waits for the one before; a full run cancels it first, a live update does not
    if (!live) this.indexAbort?.abort();
    const previous = this.indexing;
    const controller = new AbortController();
    const run = (async (): Promise<IndexStatus> => {
      await previous?.catch(() => undefined);
      this.indexAbort = controller;
      return this.runIndex(repositories, controller.signal, live, only);
    })();
    this.indexing = run;
    return run;
  }

  private async runIndex(repositories: SourceConfig[], signal: AbortSignal, live: boolean, only?: Map<string, string[] | undefined>): Promise<IndexStatus> {
    const { events, options } = this;
    const t0 = Date.now();
    events.log('index', `indexing ${repositories.length} repositories`);
    const { db, parser } = await this.ready();
    let changed = 0;
    // a live update has no rediscovery of its own: its blocks are found when edits pause (scheduleFinish)
    this.runsInProgress++;
    this.pullCache = undefined;
    try {
      const loop = await indexSources(db, repositories, {
        open: { cacheDir: options.cacheDir, signal, onMessage: (m) => events.log('git', m), onAuth: events.auth, onAuthFailure: events.authFailed },
        rediscover: !live,
        onConfig: (config) => this.setStatus({ ...this.current, state: 'indexing', message: `Indexing ${labelOf(config)}` }),
        index: (source) => ({
          parser,
          // a live update parses its few files here; a full run starts workers
          parse: live ? undefined : this.parsePool?.parse,
          concurrency: live ? 1 : (this.parsePool?.inFlight ?? 1),
          hereMaxBytes: this.parsePool?.hereMaxBytes,
          signal,
          // a live update of a folder looks at the files the watcher saw change, not the whole folder
          only: only?.get(source.info.root),
          maxFileBytes: options.maxFileKb * 1024,
          // the settings name each repository: installed packages that now follow another interpreter replace the old
          replaceInstalled: true,
          // a repository the shared index holds too: the user's own copy wins (the shared rows are shadowed)
          replaceImported: true,
          renameAdvice: 'give this one another "name" in the nnrag.repositories setting (NN-RAG: Open Repository Settings)',
          onProgress: (pr) => {
            if (pr.step % 25 === 0 || pr.step === pr.total) {
              this.setStatus({
                ...this.current,
                state: 'indexing',
                message: `Indexing ${source.info.name}`,
                progress: { step: pr.step, total: pr.total, repo: source.info.name },
              });
            }
          },
        }),
        onRun: async (r) => {
          changed += r.changed;
          events.log('index', `${r.repo}: ${r.files} files, ${r.computed} changed, ${r.deleted} removed, ${r.seconds.toFixed(2)} s`);
          if (r.failed.count)
            events.log(
              'index',
              `${r.repo}: ${r.failed.count} files could not be read or parsed, e.g. ${r.failed.first.map((f) => `${f.path}: ${f.detail}`).join('; ')}`,
            );
          // let requests be answered between repositories
          await new Promise((resolve) => setImmediate(resolve));
        },
        onConfigDone: (config) => this.failures.delete(labelOf(config)),
        onFailure: (config, err) => {
          const message = errorMessage(err);
          events.log('index', `${labelOf(config)}: ${message}`);
          // said once: the tree keeps showing it (with Retry, Remove, Open Settings) until a run succeeds
          if (this.failures.get(labelOf(config))?.message !== message) events.failed(`NN-RAG: cannot index ${labelOf(config)}: ${message}`);
          this.failures.set(labelOf(config), { name: repositoryNames(config)[0] ?? labelOf(config), location: config.location, message });
        },
      });
      // repositories that left the settings are dropped, unless a configured one could not be opened this time
      const { seen, allOpened } = loop;
      const folders = new Map<string, SourceConfig>(
        loop.opened.filter((o) => repoKind(o.source.info.kind).workingTree).map((o) => [o.source.info.root, o.config]),
      );
      const gits = loop.opened.filter((o) => repoKind(o.source.info.kind).files === 'git-objects').map((o) => o.config);
      if (!live) for (const key of [...this.failures.keys()]) if (!this.options.repositories.some((r) => labelOf(r) === key)) this.failures.delete(key);
      // the workers' memory goes back before the finish (discovery and duplicate groups over the whole index)
      if (!live) await this.parsePool?.close();
      if (!live && !options.sharedIndex) {
        // no shared index any more: its repositories go, whichever of the user's own could be opened this time
        const shared = [...sharedRepositories(db)].filter((name) => !seen.has(name));
        const gone = db.all('SELECT id, name, config FROM repos').filter((r) => shared.includes(String(r.name)) && importedConfig(r.config));
        if (gone.length) {
          dropRepositories(
            db,
            gone.map((r) => Number(r.id)),
          );
          events.log('index', `removed ${gone.map((r) => String(r.name)).join(', ')} (the shared index is no longer set)`);
          changed += gone.length;
        }
        forgetShared(db);
      }
      if (allOpened && !live) {
        // the shared index's repositories are not the settings' to drop (while one is used)
        const removed = removeRepositoriesExcept(db, new Set([...seen, ...(options.sharedIndex ? sharedRepositories(db) : [])]));
        if (removed.length) events.log('index', `removed ${removed.join(', ')} (no longer in nnrag.repositories)`);
        changed += removed.length;
      }
      if (!live) {
        this.watchFolders(folders);
        this.scheduleFetches(gits);
        // live updates parse in this thread, whose parser the full run left cold (it parsed in workers)
        if (folders.size && !this.parserWarmed) {
          this.parserWarmed = true;
          setImmediate(() => void warmUpParser(parser).catch((err: unknown) => events.log('index', `parser warm-up failed: ${errorMessage(err)}`)));
        }
      }
      // a live update is searchable as soon as its files are in (classes plainly subclassing torch's modules are
      // blocks at once); rediscovery and duplicate groups follow when the edits pause
      if (changed && live) this.scheduleFinish(db);
      else if (changed) finishRun(db);
      db.scheduleSave(500, (err) => events.log('index', `save failed: ${errorMessage(err)}`));
      const s: IndexStatus = {
        state: 'ready',
        message: `${live ? 'Updated' : 'Indexed'} in ${((Date.now() - t0) / 1000).toFixed(live ? 3 : 1)} s`,
        ...indexCounts(db),
        failing: this.failing().length,
      };
      if (live) events.log('index', `live update: ${changed} files changed, searchable after ${Date.now() - t0} ms`);
      this.setStatus(s);
      // upstream code may have changed under pulled files
      if (changed) events.changed();
      // (with the shared index's state: what Refresh Shared Index reports)
      return this.current;
    } catch (err) {
      if (err instanceof CancelledError) {
        if (changed) finishRun(db);
        const s: IndexStatus = { state: 'ready', message: 'Indexing cancelled', ...indexCounts(db), failing: this.failing().length };
        this.setStatus(s);
        return s;
      }
      this.setStatus({ ...this.current, state: 'error', message: errorMessage(err) });
      throw err;
    } finally {
      this.runsInProgress--;
      this.pullCache = undefined;
    }
  }

  /**
   * Pulls (and dependency views) share one module table and pull session while the index does not change: loading the
   * table takes longer than a pull itself. Every index run drops it, and while one runs (files land between requests)
   * each request reads the index afresh. The modules a session keeps parsed are let go past a few hundred.
   */
  private pullSession(db: IndexDb): PullSession {
    if (this.runsInProgress > 0) return openPullSession(db, loadModuleTable(db));
    if (this.pullCache?.db !== db) this.pullCache = openPullSession(db, loadModuleTable(db));
    else if (this.pullCache.parsed.size > KEEP_PARSED_MODULES) this.pullCache.parsed.clear();
    return this.pullCache;
  }

  /**
   * The warm validator for `python` (started on first use, with torch imported once): a pull validates in it in well
   * under a second instead of paying a fresh interpreter's torch import. It is started again after VALIDATOR_RUNS
   * validations, or for another interpreter, memory limit or set of repository folders, and stopped when idle. Its
   * judge runs in the same sandbox as every other validation.
   */
  warmValidator(python: string, runner: string, memoryMb: number, roots: string[]): ValidatorPoolLike {
    // (`roots`: the folders originals are imported from, for the equivalence check, shown to the sandbox)
    const key = JSON.stringify([python, runner, memoryMb, roots]);
    if (this.warm && (this.warm.key !== key || this.warm.runs >= VALIDATOR_RUNS)) this.stopValidator();
    this.warm ??= { pool: new ValidatorPool(python, runner, 1, memoryMb, roots), key, runs: 0 };
    const warm = this.warm;
    return {
      validate: async (file, options) => {
        warm.runs++;
        if (warm.idle) clearTimeout(warm.idle);
        try {
          return await warm.pool.validate(file, options);
        } finally {
          warm.idle = setTimeout(() => this.warm === warm && this.stopValidator(), VALIDATOR_IDLE_MS);
          warm.idle.unref();
        }
      },
    };
  }

  private stopValidator(): void {
    const warm = this.warm;
    this.warm = undefined;
    if (!warm) return;
    if (warm.idle) clearTimeout(warm.idle);
    void warm.pool.close().catch(() => undefined);
  }

  private scheduleFinish(db: IndexDb): void {
    if (this.finishTimer) clearTimeout(this.finishTimer);
    this.finishTimer = setTimeout(() => {
      this.finishTimer = undefined;
      const previous = this.indexing;
      this.indexing = (async (): Promise<IndexStatus> => {
        await previous?.catch(() => undefined);
        const t0 = Date.now();
        finishRun(db, {}, { light: true });
        this.pullCache = undefined;
        this.events.log('index', `live update: blocks rediscovered in ${Date.now() - t0} ms`);
        db.scheduleSave(500, (err) => this.events.log('index', `save failed: ${errorMessage(err)}`));
        this.setStatus({ ...this.current, ...indexCounts(db) });
        this.events.changed();
        return this.current;
      })();
    }, FINISH_AFTER_MS);
    this.finishTimer.unref();
  }

  /** Live updates: local folders are watched; a change re-indexes the files it names (a folder or a licence: the folder). */
  private watchFolders(folders: Map<string, SourceConfig>): void {
    for (const [root, w] of this.watchers) {
      if (!folders.has(root)) {
        w.close();
        this.watchers.delete(root);
      }
    }
    for (const [root, config] of folders) {
      if (this.watchers.has(root)) continue;
      try {
        const w = watch(root, { recursive: true, persistent: false }, (_event, name) => this.noticed(root, config, String(name ?? '')));
        w.on('error', (err) => {
          this.events.log('index', `stopped watching ${root}: ${errorMessage(err)}`);
          w.close();
          this.watchers.delete(root);
        });
        this.watchers.set(root, w);
      } catch (err) {
        // inotify limits, a folder that vanished: indexing on demand still works
        this.events.log('index', `cannot watch ${root}: ${errorMessage(err)}`);
      }
    }
  }

  private noticed(root: string, config: SourceConfig, name: string): void {
    const file = name.split(path.sep).join('/');
    const entry = this.pending.get(root) ?? { config, files: new Set<string>(), all: false };
    if (file.endsWith('.py')) entry.files.add(file);
    // a licence, or a name without an extension (a folder created, renamed or removed): the whole folder
    else if (!file || /(^|\/)(LICEN[CS]E[^/]*|COPYING)$/.test(file) || !/\.[^/]*$/.test(file)) entry.all = true;
    else return;
    this.pending.set(root, entry);
    if (this.debounce) clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      const entries = [...this.pending.entries()];
      this.pending.clear();
      const only = new Map(entries.map(([r, e]) => [r, e.all ? undefined : [...e.files]]));
      this.reindex(
        entries.map(([, e]) => e.config),
        { live: true, only },
      ).catch((err) => this.events.log('index', `live update: ${errorMessage(err)}`));
    }, WATCH_DEBOUNCE_MS);
  }

  /** Git repositories are fetched on a schedule; only changed blobs are parsed again. */
  private scheduleFetches(gits: SourceConfig[]): void {
    if (this.fetchTimer) clearInterval(this.fetchTimer);
    this.fetchTimer = undefined;
    const minutes = this.options.gitFetchIntervalMinutes ?? 0;
    if (!gits.length || !(minutes > 0)) return;
    this.fetchTimer = setInterval(() => {
      this.reindex(gits, { live: true }).catch((err) => this.events.log('git', `scheduled fetch: ${errorMessage(err)}`));
    }, minutes * 60_000);
    this.fetchTimer.unref();
  }

  /** Stops watching and fetching, ends the run in progress and the workers, and saves the index. */
  async dispose(): Promise<void> {
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    if (this.fetchTimer) clearInterval(this.fetchTimer);
    if (this.finishTimer) clearTimeout(this.finishTimer);
    if (this.debounce) clearTimeout(this.debounce);
    this.indexAbort?.abort();
    this.stopValidator();
    await this.indexing?.catch(() => undefined);
    await this.parsePool?.close().catch(() => undefined);
    await this.db?.save().catch(() => undefined);
    // the lock goes with it: the next window (or service) on this storage writes the index
    this.db?.close();
    this.db = undefined;
    this.opening = undefined;
  }
}

/**
 * The user's own repositories of the index before a new shared archive, copied into the index made from it: an
 * unchanged file is then not parsed again (those of the archive before, and any the archive now holds, are not taken).
 */
function carryOwnRepositories(layered: IndexDb, before: IndexDb): void {
  if (before.getMeta('parser_version') !== PARSER_VERSION) return;
  // the user's own: the rows of the index before that no archive brought
  const own = new Set(
    before
      .all('SELECT name, config FROM repos')
      .filter((r) => !importedConfig(r.config))
      .map((r) => String(r.name)),
  );
  // a repository the new archive holds too stays the user's: the archive's rows of that name are shadowed
  const both = layered.all('SELECT id, name FROM repos').filter((r) => own.has(String(r.name)));
  if (both.length) {
    dropRepositories(
      layered,
      both.map((r) => Number(r.id)),
    );
    for (const r of both) shadowShared(layered, String(r.name));
  }
  if (copyRepositories(layered, before, 'the index before', (name) => own.has(name)).length || both.length) finishRun(layered);
}

/** How a configured repository is named to the user: its `name`, else its location. */
export function labelOf(config: SourceConfig): string {
  return config.name ?? config.location;
}

/** The repositories to index: a disabled one (`enabled: false`) stays in the settings only. */
function enabledOnly(repositories: SourceConfig[]): SourceConfig[] {
  return repositories.filter((r) => r.enabled !== false);
}
