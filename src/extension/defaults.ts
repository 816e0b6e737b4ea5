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
  'pull.fullDocstrings': false,
  'pull.inlineMetadata': false,
  'hover.enabled': true,
  'codeLens.enabled': true,
};
