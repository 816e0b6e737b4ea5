/** The settings' defaults, as package.json's `contributes.configuration` declares them (a test keeps them equal). */
import type { SourceConfig } from '../core/sources/types';
import { DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S } from '../core/validate/limits';

export const DEFAULTS = {
  repositories: [] as SourceConfig[],
  pythonPath: '',
  pullFolder: 'blocks',
  'validation.timeoutSeconds': DEFAULT_TIMEOUT_S,
  'validation.memoryMb': DEFAULT_MEMORY_MB,
  maxFileKb: 2048,
  sharedIndex: '',
  sharedIndexMaxSizeMB: 2048,
  sharedIndexFollowRedirects: false,
  'git.fetchIntervalMinutes': 60,
  'pull.preview': true,
  'pull.wholeClasses': false,
  'pull.full': false,
  'pull.fullDocstrings': false,
  'pull.inlineMetadata': false,
  'hover.enabled': true,
  'codeLens.enabled': true,
  'search.embeddings': '',
  'search.embeddingModel': 'nomic-embed-text',
  'search.servers': [] as string[],
};

/** The settings whose scope (package.json) is `machine` or `machine-overridable`: paths and limits of the machine the
 * extension runs on (a test keeps this equal to package.json). */
export const MACHINE_SETTINGS: ReadonlySet<keyof typeof DEFAULTS> = new Set<keyof typeof DEFAULTS>([
  'repositories',
  'pythonPath',
  'validation.timeoutSeconds',
  'validation.memoryMb',
  'maxFileKb',
  'sharedIndex',
  'sharedIndexMaxSizeMB',
  'sharedIndexFollowRedirects',
  'git.fetchIntervalMinutes',
  'search.embeddings',
  'search.embeddingModel',
  'search.servers',
]);
