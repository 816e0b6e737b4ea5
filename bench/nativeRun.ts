/** `--native`: pull --build-native, the build and the cached second pull. */
import { execFileSync, spawnSync } from 'child_process';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { performance } from 'perf_hooks';
import { NATIVE_REPO } from '../test/unit/nativeFixture';

import { PYTHON, ROOT, r2 } from './common';

/**
 * --native: `pull --build-native` on the test's repository with its own C++ operator: the pull that builds it (an
 * empty cache), and the same pull again (the cached build), each with validation; `--python P` builds with P's torch.
 */
export async function nativeBench(argv: string[]): Promise<void> {
  const python = argv.includes('--python') ? argv[argv.indexOf('--python') + 1] : PYTHON;
  const work = await fsp.mkdtemp(path.join(os.tmpdir(), 'nnrag-native-'));
  const cli = path.join(ROOT, 'dist', 'cli.js');
  try {
    for (const [rel, text] of Object.entries(NATIVE_REPO)) {
      await fsp.mkdir(path.dirname(path.join(work, 'repo', rel)), { recursive: true });
      await fsp.writeFile(path.join(work, 'repo', rel), text);
    }
    const db = path.join(work, 'index.db');
    execFileSync(process.execPath, [cli, 'index', path.join(work, 'repo'), '--db', db], { stdio: 'ignore' });
    const pull = (name: string): { seconds: number; report: { tier: string | null; natives?: { seconds: number; cached: boolean }[] } } => {
      const t0 = performance.now();
      const r = spawnSync(
        process.execPath,
        [
          cli,
          'pull',
          'opspkg.layers.ScaledResidual',
          '--db',
          db,
          '--out',
          path.join(work, 'out', `${name}.py`),
          '--python',
          python,
          '--build-native',
          '--cache',
          path.join(work, 'cache'),
          '--json',
        ],
        { encoding: 'utf8' },
      );
      return { seconds: (performance.now() - t0) / 1000, report: JSON.parse(r.stdout) };
    };
    const cold = pull('cold');
    const warm = pull('cached');
    console.log(
      JSON.stringify({
        native: {
          python,
          cold_pull_s: r2(cold.seconds),
          build_s: r2(cold.report.natives?.[0]?.seconds ?? NaN),
          cold_tier: cold.report.tier,
          cached_pull_s: r2(warm.seconds),
          cached: warm.report.natives?.[0]?.cached ?? false,
          cached_tier: warm.report.tier,
        },
      }),
    );
  } finally {
    await fsp.rm(work, { recursive: true, force: true });
  }
}
