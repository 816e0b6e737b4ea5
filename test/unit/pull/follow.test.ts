/**
 * The follow stage (pull/stageFollow.ts): validated with a real Python and torch, a copy that fails where its original
 * runs takes in the definitions the original ran once imported that the closure missed (a registry filled by a module
 * only the package's `__init__` imports), is judged again and kept where it gets further; a trace naming a definition
 * of no indexed module, or of a repository the file does not inline, adds nothing.
 */
import * as assert from 'assert';
import { promises as fsp } from 'fs';
import * as path from 'path';
import type { PullReport } from '../../../src/core/pull/types';
import { missedDefinitions } from '../../../src/core/pull/stageFollow';
import { emitResolution } from '../../../src/core/pull/stageEmit';
import { resolveBlock } from '../../../src/core/pull/stageResolve';
import { openPullSession } from '../../../src/core/pull/session';
import { findTarget } from '../../../src/core/store/target';
import { loadModuleTable } from '../../../src/core/resolve/loadTable';
import { hasTorch, indexFolder, memoryDb, parser, pullValidated, tmpdir, writeTree } from '../helpers';

const FILES: Record<string, string> = {
  'flib/__init__.py': 'from . import acts\nfrom .block import Block\n',
  'flib/registry.py': `LAYERS = {}


def register(cls):
    LAYERS[cls.__name__.lower()] = cls
    return cls


def build(kind, prefix):
    return LAYERS[prefix + kind]()
`,
  'flib/acts.py': `import torch
from torch import nn
from .registry import register


@register
class ActSwish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


@register
class ActRelu6(nn.Module):
    def forward(self, x):
        return x.clamp(0, 6)
`,
  'flib/block.py': `from torch import nn
from .registry import build


class Block(nn.Module):
    def __init__(self, c=8, kind="swish"):
        super().__init__()
        self.lin = nn.Linear(c, c)
        self.act = build(kind, "act")

    def forward(self, x):
        return self.act(self.lin(x))
`,
};

describe('pull: the follow stage, judged with a real Python', function () {
  this.timeout(300_000);

  it('takes in what the original ran by name that the closure missed, and only that', async function () {
    if (!hasTorch()) this.skip();
    const report: PullReport = await pullValidated(FILES, 'flib.block.Block');
    assert.strictEqual(report.validation?.equivalence?.status, 'equivalent', JSON.stringify(report.validation));
    assert.ok(
      report.judged?.some((j) => j.stage === 'follow' && /1 definition the original ran that the file lacked \(flib\.acts\.ActSwish\) taken in/.test(j.why)),
      JSON.stringify(report.judged),
    );
    const code = await fsp.readFile(report.out!, 'utf8');
    assert.match(code, /^class ActSwish\(nn\.Module\):$/m);
    assert.doesNotMatch(code, /ActRelu6/, 'what the original never ran stays out');
  });

  it('reads the trace against the index: other files, lines of no definition and what the closure holds add nothing', async () => {
    const dir = await tmpdir();
    await writeTree(dir, FILES);
    const db = await memoryDb();
    await indexFolder(db, dir);
    const session = openPullSession(db, loadModuleTable(db));
    const options = { parser: await parser(), validate: false };
    const emission = await emitResolution(session, await resolveBlock(session, findTarget(db, 'flib.block.Block'), options), options);
    const root = await fsp.realpath(dir);
    const ran = {
      [path.join(root, 'flib/acts.py')]: [7, 8, 13, 1, 999],
      // build (line 9) is in the closure already; register (line 4) is not
      [path.join(root, 'flib/registry.py')]: [9, 4],
      [path.join(root, 'flib/nowhere.py')]: [1],
      '/etc/passwd': [1],
    };
    const missed = missedDefinitions(session, emission, ran).map((e) => `${e.rec.module}.${e.rec.facts.units[e.unit].name}`);
    assert.deepStrictEqual(missed, ['flib.acts.ActSwish', 'flib.acts.ActRelu6', 'flib.registry.register']);
  });
});
