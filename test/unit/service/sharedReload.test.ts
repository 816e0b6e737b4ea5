/**
 * A window that reopens with an unchanged shared index does no work again: the user's repositories indexed on top of
 * it are not parsed again (nothing changed), the shared layer is not made again.
 */
import * as assert from 'assert';
import { promises as fsp } from 'fs';
import * as http from 'http';
import type { AddressInfo } from 'net';
import * as path from 'path';
import { IndexService } from '../../../src/core/service/indexService';
import { ASSETS, cli, PYTHON_WITH_TORCH, ROOT, tmpdir } from '../helpers';

describe('a reload with a shared index set', function () {
  this.timeout(300_000);

  it("reports 0 files changed in the user's own repository when nothing changed", async () => {
    const team = path.join(await tmpdir('nnrag-reload-team-'), 'teamlib');
    await fsp.mkdir(team, { recursive: true });
    await fsp.writeFile(path.join(team, '__init__.py'), '');
    await fsp.writeFile(path.join(team, 'layers.py'), 'from torch import nn\n\n\nclass TeamMixer(nn.Module):\n    def forward(self, x):\n        return x\n');
    const teamDb = path.join(path.dirname(team), 'team.db');
    const archive = path.join(path.dirname(team), 'team.nnrag.tgz');
    assert.strictEqual((await cli('index', team, '--db', teamDb)).code, 0);
    assert.strictEqual((await cli('export', '--db', teamDb, '--to', archive)).code, 0);
    const folder = path.join(await tmpdir('nnrag-reload-mine-'), 'tinyblocks');
    await fsp.cp(path.join(ROOT, 'examples', 'tinyblocks'), folder, { recursive: true });
    const storage = await tmpdir('nnrag-reload-');
    // published over HTTP with an ETag, as a team serves it
    const served = await fsp.readFile(archive);
    const server = http.createServer((req, res) => {
      if (req.headers['if-none-match'] === '"v1"') res.writeHead(304, { ETag: '"v1"' }).end();
      else res.writeHead(200, { ETag: '"v1"' }).end(served);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/team.nnrag.tgz`;
    const open = async (): Promise<string[]> => {
      const logs: string[] = [];
      const svc = new IndexService(
        {
          ...ASSETS,
          storageDir: storage,
          cacheDir: path.join(storage, 'cache'),
          maxFileKb: 2048,
          repositories: [{ location: folder }, { location: 'torchvision', kind: 'python-env', python: PYTHON_WITH_TORCH }],
          sharedIndex: url,
        },
        { log: (_a, m) => logs.push(m), status: () => undefined, failed: () => undefined, changed: () => undefined },
      );
      try {
        await svc.reindex();
      } finally {
        await svc.dispose();
      }
      return logs;
    };
    try {
      const first = await open();
      assert.ok(
        first.some((l) => /^tinyblocks: \d+ files, [1-9]\d* changed/.test(l)),
        first.join('\n'),
      );
      const again = await open();
      for (const repo of ['tinyblocks', 'torchvision']) {
        const line = again.find((l) => l.startsWith(`${repo}:`));
        assert.match(line ?? again.join('\n'), new RegExp(`^${repo}: \\d+ files, 0 changed`));
      }
      assert.ok(!again.some((l) => /starts from the shared index/.test(l)), 'the layer is not made again');
    } finally {
      server.close();
    }
  });
});
