// The layer rules (docs/architecture.md, "Layers"), checked by `npm run build` and `npm test`.
// TypeScript is parsed by Babel's parser: the project's compiler (TypeScript 7, native) has no JavaScript API for
// typescript-eslint to use, and these rules need the syntax only.
import babelParser from '@babel/eslint-parser';
import importPlugin from 'eslint-plugin-import';

/** Core's folders from the bottom up: a folder may import its own files and the folders before it, never after. */
export const CORE_LAYERS = [
  'base', // errors and cancellation
  'parse', // Python source -> syntax tree -> facts (pure)
  'validate', // interpreters, the sandbox, the runner protocol
  'sources', // git, folders and installed packages as files
  'store', // the database, its migrations and codecs, the units cache, typed queries
  'analysis', // parsing files in workers with the units cache
  'search', // words, query understanding, ranking
  'resolve', // module tables, the dependency closure
  'blocks', // which classes are blocks, their categories
  'dedup', // duplicate groups
  'index', // the indexer: plan, analyse, write, rediscover
  'emit', // one file from a closure, manifests, merges
  'pull', // a pull: closure, emission, validation
  'specification', // neutral specifications of blocks
  'workspace', // the use-case API over an open index that the fronts call
  'service', // the index as a long-lived service (the language server's)
];

const FRONTS = ['extension', 'server', 'cli'];
/**
 * A front (and the bench and scripts) pulls, validates and indexes through the core API (core/workspace, the one
 * indexing loop), never the pieces below: `core` is the path to src/core from the file.
 */
function coreApi(core) {
  const ws = 'one use case per method of core/workspace (Workspace)';
  return [
    { group: [`${core}/pull/pull`], importNames: ['pullBlock', 'originalOf', 'judgingPulled'], message: ws },
    { group: [`${core}/pull/session`], importNames: ['openPullSession'], message: ws },
    { group: [`${core}/pull/shared`], importNames: ['pullTogether'], message: ws },
    { group: [`${core}/pull/validatePulled`], importNames: ['validatePulled'], message: ws },
    { group: [`${core}/validate/validatorPool`], importNames: ['ValidatorPool'], message: `validators: ${ws}` },
    { group: [`${core}/resolve/loadTable`], message: `the module table: ${ws}` },
    { group: [`${core}/index/indexer`], importNames: ['indexSource'], message: 'one indexing loop: core/index/indexSources' },
    { group: [`${core}/store/target`], importNames: ['findTarget'], message: `a target is found by Workspace.target: ${ws}` },
    { group: [`${core}/resolve/describe`], importNames: ['describeClass'], message: `a block is described by Workspace.describe: ${ws}` },
  ];
}
const CORE_API = coreApi('../core');
const EDITOR = ['vscode', 'vscode-languageclient', 'vscode-languageclient/*', 'vscode-languageserver', 'vscode-languageserver/*'];

/** `no-restricted-imports` options for a file of core folder `layer`. */
function coreRule(layer) {
  const above = CORE_LAYERS.slice(CORE_LAYERS.indexOf(layer) + 1);
  return {
    patterns: [
      ...(above.length
        ? [{ group: above.flatMap((f) => [`../${f}`, `../${f}/*`]), message: `core/${layer} is below these folders (see CORE_LAYERS in eslint.config.mjs)` }]
        : []),
      { group: ['../../*'], message: 'core imports nothing outside core' },
      { group: EDITOR, message: 'core runs without an editor' },
    ],
  };
}

export default [
  { ignores: ['dist/**', 'node_modules/**', '.vscode-test/**', 'out/**'] },
  {
    files: ['src/**/*.ts', 'scripts/**/*.ts', 'bench/**/*.ts'],
    languageOptions: {
      parser: babelParser,
      parserOptions: { requireConfigFile: false, babelOptions: { babelrc: false, configFile: false, presets: ['@babel/preset-typescript'] } },
    },
    plugins: { import: importPlugin },
    settings: { 'import/extensions': ['.ts'], 'import/resolver': { node: { extensions: ['.ts', '.js'] } } },
    // disableScc: the rule's component table is read from files on disk, which the tests' probe texts are not.
    rules: {
      'import/no-cycle': ['error', { ignoreExternal: true, disableScc: true }],
      'no-control-regex': 'error',
      // a function you can read in one sitting (split one that grows: a class, or functions over a context)
      'max-lines-per-function': ['error', { max: 120, skipBlankLines: true, skipComments: true }],
      // the formatter's width (.prettierrc); only a string or a pattern may run past it (they cannot be broken)
      'max-len': ['error', { code: 160, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true }],
    },
  },
  ...CORE_LAYERS.map((layer) => ({
    files: [`src/core/${layer}/**/*.ts`],
    rules: { 'no-restricted-imports': ['error', coreRule(layer)] },
  })),
  {
    files: ['src/core/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['*'], message: 'core files live in a layer folder (CORE_LAYERS)' }] }] },
  },
  {
    files: ['src/shared/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: EDITOR, message: 'shared code runs without an editor' }, { group: FRONTS.map((f) => `../${f}/*`) }] },
      ],
    },
  },
  {
    files: ['src/server/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['vscode', 'vscode-languageclient', 'vscode-languageclient/*'], message: 'the server runs outside the editor' },
            { group: ['../extension/*', '../cli/*'] },
            ...CORE_API,
          ],
        },
      ],
    },
  },
  {
    files: ['src/cli/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: EDITOR, message: 'the command line runs without an editor' }, { group: ['../extension/*', '../server/*'] }, ...CORE_API] },
      ],
    },
  },
  {
    files: ['src/extension/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['vscode-languageserver', 'vscode-languageserver/*'], message: 'the extension talks to the server over the protocol' },
            { group: ['../server/*', '../cli/*'] },
            ...CORE_API,
          ],
        },
      ],
    },
  },
  {
    files: ['scripts/**/*.ts', 'bench/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: coreApi('../src/core') }], 'max-lines-per-function': 'off' },
  },
];
