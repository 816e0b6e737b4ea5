// Bundles the extension, the language server and the command line; copies the wasm files they load.
import * as esbuild from 'esbuild';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');
const outdir = join(root, 'dist');

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: !production,
  minify: production,
  logLevel: 'warning',
  plugins: [
    {
      // the ESM build of web-tree-sitter dies in Parser.init inside a CJS bundle: use its .cjs build
      name: 'web-tree-sitter-cjs',
      setup(build) {
        const cjs = join(dirname(require.resolve('web-tree-sitter/web-tree-sitter.wasm')), 'web-tree-sitter.cjs');
        build.onResolve({ filter: /^web-tree-sitter$/ }, () => ({ path: cjs }));
      },
    },
    {
      // the SPDX license texts: only those license.ts recognises (src/core/sources/licenseSet.json), not all 700
      name: 'spdx-known-licenses',
      setup(build) {
        build.onResolve({ filter: /^spdx-license-list\/full$/ }, () => ({ path: 'spdx-known', namespace: 'spdx-known' }));
        build.onLoad({ filter: /.*/, namespace: 'spdx-known' }, () => {
          const { families } = JSON.parse(readFileSync(join(root, 'src', 'core', 'sources', 'licenseSet.json'), 'utf8'));
          const all = require('spdx-license-list/full');
          const kept = Object.fromEntries(
            Object.entries(all)
              .filter(([id, e]) => e.osiApproved || families.some((f) => id === f || id.startsWith(f)))
              .map(([id, e]) => [id, { osiApproved: e.osiApproved, licenseText: e.licenseText }]),
          );
          return { contents: JSON.stringify(kept), loader: 'json' };
        });
      },
    },
  ],
  // sql.js probes for these in browsers only
  external: ['vscode', 'fs/promises'],
};

const tests = process.argv.includes('--tests');
const entries = [
  { in: 'src/extension/extension.ts', out: 'extension' },
  { in: 'src/server/main.ts', out: 'server' },
  { in: 'src/cli/main.ts', out: 'cli' },
  { in: 'src/core/analysis/worker.ts', out: 'parseWorker' },
  // `--bench`: the bench's parse worker, with its floors (not part of the extension)
  ...(process.argv.includes('--bench') ? [{ in: 'bench/floorWorker.ts', out: 'benchFloorWorker' }] : []),
].filter((e) => existsSync(join(root, e.in)));

// `--tests`: the integration suite, bundled for the extension host (mocha and vscode come from outside)
const suiteDir = join(root, 'test', 'integration', 'suite');
const testEntries = tests
  ? readdirSync(suiteDir)
      .filter((n) => n.endsWith('.ts'))
      .map((n) => ({ in: join('test', 'integration', 'suite', n), out: n.replace(/\.ts$/, '') }))
  : [];

const assets = [
  require.resolve('web-tree-sitter/web-tree-sitter.wasm'),
  require.resolve('tree-sitter-python/tree-sitter-python.wasm'),
  require.resolve('sql.js/dist/sql-wasm.wasm'),
];

function copyAssets() {
  mkdirSync(outdir, { recursive: true });
  for (const file of assets) {
    const target = join(outdir, file.split(/[\\/]/).pop());
    copyFileSync(file, target);
    if (!existsSync(target) || statSync(target).size === 0) {
      throw new Error(`wasm asset missing after copy: ${target}`);
    }
  }
}

const contexts = await Promise.all([
  ...entries.map((e) =>
    esbuild.context({
      ...common,
      entryPoints: { [e.out]: join(root, e.in) },
      outdir,
      banner: e.banner ? { js: e.banner } : undefined,
    }),
  ),
  ...testEntries.map((e) =>
    esbuild.context({
      ...common,
      sourcemap: true,
      external: [...common.external, 'mocha'],
      entryPoints: { [e.out]: join(root, e.in) },
      outdir: join(root, 'out', 'integration', 'suite'),
    }),
  ),
]);
copyAssets();
if (watch) {
  await Promise.all(contexts.map((c) => c.watch()));
  console.log('[build] watching');
} else {
  await Promise.all(contexts.map((c) => c.rebuild()));
  await Promise.all(contexts.map((c) => c.dispose()));
  console.log(`[build] ${entries.map((e) => `dist/${e.out}.js`).join(', ')} and ${assets.length} wasm files${testEntries.length ? `; ${testEntries.length} integration test bundles in out/integration/suite` : ''}`);
}
