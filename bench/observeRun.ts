/** `--observe-only`: what the catalog of observed calls costs. */
import { execFileSync } from 'child_process';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { performance } from 'perf_hooks';

import { PYTHON, ROOT, r2 } from './common';

/**
 * What the catalog of observed calls costs: `nn-rag observe` on a repository (`--observe-repo DIR`, else a generated
 * one of `--observe-blocks N` modules, 24, each with a block and a test that builds and calls it) from an empty catalog
 * (cold) and again with no file changed (warm: every test cached), and the catalog's size in the index.
 */
export async function observeBench(work: string, argv: string[]): Promise<Record<string, number>> {
  const cli = path.join(ROOT, 'dist', 'cli.js');
  const python = argv.includes('--python') ? argv[argv.indexOf('--python') + 1] : PYTHON;
  let repo = argv.includes('--observe-repo') ? path.resolve(argv[argv.indexOf('--observe-repo') + 1]) : undefined;
  if (!repo) {
    repo = path.join(work, 'observed', 'obspkg_repo');
    const n = argv.includes('--observe-blocks') ? Number(argv[argv.indexOf('--observe-blocks') + 1]) : 24;
    await fsp.mkdir(path.join(repo, 'obspkg'), { recursive: true });
    await fsp.mkdir(path.join(repo, 'tests'), { recursive: true });
    await fsp.writeFile(path.join(repo, 'obspkg', '__init__.py'), '');
    for (let i = 0; i < n; i++) {
      await fsp.writeFile(
        path.join(repo, 'obspkg', `layer${i}.py`),
        `import torch\nfrom torch import nn\n\n\nclass Layer${i}(nn.Module):\n    def __init__(self, spec):\n        super().__init__()\n        self.proj = nn.Linear(spec["width"], spec["out"])\n\n    def forward(self, x, index):\n        return self.proj(x)[index]\n`,
      );
      await fsp.writeFile(
        path.join(repo, 'tests', `test_layer${i}.py`),
        `import torch\n\nfrom obspkg.layer${i} import Layer${i}\n\n\ndef test_layer${i}():\n    layer = Layer${i}({"width": ${8 + i}, "out": 4})\n    assert layer(torch.randn(6, ${8 + i}), torch.tensor([0, 5])).shape == (2, 4)\n`,
      );
    }
  }
  const db = path.join(work, 'observed', 'index.db');
  await fsp.mkdir(path.dirname(db), { recursive: true });
  execFileSync(process.execPath, [cli, 'index', repo, '--db', db], { stdio: 'ignore' });
  const run = (): { wall_s: number; summary: { entries: number; ran: number; cached: number; classes: number; fed: number; bytes: number } } => {
    const t0 = performance.now();
    const out = execFileSync(process.execPath, [cli, 'observe', '--db', db, '--python', python, '--json'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return {
      wall_s: (performance.now() - t0) / 1000,
      summary: (JSON.parse(out) as { entries: number; ran: number; cached: number; classes: number; fed: number; bytes: number }[])[0],
    };
  };
  const cold = run();
  const warm = run();
  return {
    observe_tests: cold.summary.entries,
    observe_tests_run: cold.summary.ran,
    observe_classes: cold.summary.classes,
    observe_classes_fed: cold.summary.fed,
    observe_cold_s: r2(cold.wall_s),
    observe_warm_s: r2(warm.wall_s),
    observe_warm_cached: warm.summary.cached,
    observe_catalog_bytes: cold.summary.bytes,
  };
}
