/**
 * The indexing loop, one for every front (the command line, the editor's index service, the bench): open each
 * configured source, index each repository it yields into the database, one rediscovery schedule for the whole run.
 * What happens around it (progress, a source that cannot be opened, what to finish afterwards) is the caller's.
 */
import { CancelledError } from '../base/errors';
import type { IndexDb } from '../store/database';
import { openSource } from '../sources/open';
import type { OpenOptions } from '../sources/open';
import type { OpenedSource, SourceConfig } from '../sources/types';
import { indexSource, Rediscovery } from './indexer';
import type { IndexOptions, IndexRunStats } from './indexer';

export interface IndexLoopOptions {
  /** How sources are opened (the git cache, messages, credentials). */
  open: OpenOptions;
  /** The options of each repository's run (parser, workers, limits), given the opened source. */
  index: (source: OpenedSource) => Omit<IndexOptions, 'rediscover'>;
  /** Rediscover blocks while files land, so search answers during the run (the editor's full runs); default no. */
  rediscover?: boolean;
  /** Told before each source is opened. */
  onConfig?: (config: SourceConfig) => void;
  /** Told of each repository's run as it ends. */
  onRun?: (run: IndexRunStats, source: OpenedSource, config: SourceConfig) => void | Promise<void>;
  /** Told when every repository of a configuration is indexed. */
  onConfigDone?: (config: SourceConfig) => void;
  /** A source that could not be opened or indexed: return to go on with the next (default: the error is thrown). */
  onFailure?: (config: SourceConfig, err: unknown) => void;
}

export interface IndexLoopResult {
  runs: IndexRunStats[];
  /** Names of the repositories opened. */
  seen: Set<string>;
  /** The sources opened, by the configuration that named them. */
  opened: { config: SourceConfig; source: OpenedSource }[];
  /** Whether every configuration could be opened and indexed. */
  allOpened: boolean;
}

/** Indexes `configs` into `db` in order; a cancel stops it (what finished is kept: each file is written as it ends). */
export async function indexSources(db: IndexDb, configs: SourceConfig[], options: IndexLoopOptions): Promise<IndexLoopResult> {
  const rediscover = options.rediscover ? new Rediscovery() : undefined;
  const result: IndexLoopResult = { runs: [], seen: new Set(), opened: [], allOpened: true };
  for (const config of configs) {
    options.onConfig?.(config);
    try {
      for (const source of await openSource(config, options.open)) {
        result.seen.add(source.info.name);
        result.opened.push({ config, source });
        const run = await indexSource(db, source, { ...options.index(source), rediscover });
        result.runs.push(run);
        await options.onRun?.(run, source, config);
      }
      options.onConfigDone?.(config);
    } catch (err) {
      if (err instanceof CancelledError || !options.onFailure) throw err;
      result.allOpened = false;
      options.onFailure(config, err);
    }
  }
  return result;
}
