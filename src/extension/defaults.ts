/** The settings' defaults, as package.json's `contributes.configuration` declares them (a test keeps them equal). */
import type { SourceConfig } from '../core/sources/types';

export const DEFAULTS = {
  repositories: [] as SourceConfig[],
  pythonPath: '',
  pullFolder: 'blocks',
  'validation.timeoutSeconds': 120,
  'validation.memoryMb': 4096,
  maxFileKb: 2048,
  sharedIndex: '',
  'git.fetchIntervalMinutes': 60,
  'pull.preview': true,
  'pull.wholeClasses': false,
  'pull.fullDocstrings': false,
  'pull.inlineMetadata': false,
  'hover.enabled': true,
  'codeLens.enabled': true,
};
