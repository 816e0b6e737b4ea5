/**
 * Third-party packages only code inside functions uses (a config entry point, a pretty-printer) are imported where
 * installed, as the original does, and stood in for where not: the pulled block needs only the packages its own
 * construction and forward need, and the code that uses a missing one fails when it runs, with the import's error.
 */
import * as assert from 'assert';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { cli, PYTHON_WITH_TORCH, tmpdir, writeTree } from '../helpers';

// fancyfmt and cfgkit exist nowhere but in this test's own folder of "installed" packages
const HEADS = `import torch
from torch import nn
from fancyfmt import table
import cfgkit.nodes
from basekit import Base


class Head(nn.Module):
    """A head whose config entry point and printer need packages its forward does not."""

    def __init__(self, c: int = 8):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    @classmethod
    def from_config(cls, cfg):
        return cls(cfgkit.nodes.Node(cfg).c)

    def describe(self):
        return table(self.conv.weight.shape)

    def forward(self, x):
        return torch.relu(self.conv(x))


class Based(Base, nn.Module):
    """Needs basekit while the file is imported (its base class)."""

    def forward(self, x):
        return x
`;

describe('packages only code inside functions uses', function () {
  this.timeout(180_000);
  let dir: string;
  let db: string;
  let site: string;
  before(async () => {
    dir = await tmpdir('nnrag-optional-');
    db = path.join(dir, 'index.db');
    site = path.join(dir, 'site');
    await writeTree(path.join(dir, 'src'), { 'heads/__init__.py': '', 'heads/rpn.py': HEADS });
    await writeTree(site, {
      'fancyfmt/__init__.py': 'def table(shape):\n    return "table of " + str(tuple(shape))\n',
      'cfgkit/__init__.py': '',
      'cfgkit/nodes.py': 'class Node:\n    def __init__(self, cfg):\n        self.c = cfg["c"]\n',
      'basekit/__init__.py': 'class Base:\n    pass\n',
    });
    assert.strictEqual((await cli('index', path.join(dir, 'src'), '--db', db)).code, 0);
  });

  it('a block pulls and runs without them; the code that uses one fails when it runs, naming it; installed, they are the real modules', async () => {
    const out = path.join(dir, 'out', 'head.py');
    const r = await cli('pull', 'heads.rpn.Head', '--db', db, '--out', out, '--python', PYTHON_WITH_TORCH, '--json');
    const report = JSON.parse(r.out) as { status: string; tier: string };
    // the original cannot be imported here (its packages are missing): the copy reaches forward all the same
    assert.strictEqual(report.status, 'validated', r.out);
    assert.strictEqual(report.tier, 'forward', r.out);
    const text = fs.readFileSync(out, 'utf8');
    assert.match(text, /^# needed only by code inside functions \(the file loads without them; that code says so if they are missing\): cfgkit, fancyfmt$/m);
    // the stand-in is said in four lines, not a page of the user's file
    assert.match(text, /\nclass _NnragMissing:  # [^\n]+\n( {4}[^\n]+\n){3,}\n/);
    assert.match(text, /try:\n {4}from fancyfmt import table\nexcept ModuleNotFoundError as _nnrag_error:\n {4}table = _NnragMissing\(_nnrag_error\)/);
    const run = (code: string, env: NodeJS.ProcessEnv = {}): string =>
      execFileSync(PYTHON_WITH_TORCH, ['-c', `import sys; sys.path.insert(0, ${JSON.stringify(path.dirname(out))})\nimport head\n${code}`], {
        encoding: 'utf8',
        env: { ...process.env, ...env },
      }).trim();
    // missing: the file imports, the block runs, the config entry point fails with the import's own error
    assert.strictEqual(run('import torch; print(tuple(head.Head()(torch.randn(1, 8, 4, 4)).shape))'), '(1, 8, 4, 4)');
    assert.strictEqual(
      run('try:\n    head.Head.from_config({"c": 4})\nexcept ModuleNotFoundError as e:\n    print(e.name, e)'),
      "cfgkit No module named 'cfgkit'",
    );
    // installed: the real modules, imported when the file is, as the original does
    const withSite = { PYTHONPATH: site };
    assert.strictEqual(
      run('print(head.Head.from_config({"c": 4}).conv.in_channels, head.Head().describe(), head.cfgkit.__name__)', withSite),
      '4 table of (8, 8, 3, 3) cfgkit',
    );
  });

  it('a package a definition needs while the file is imported (a base class) is stood in for where the interpreter lacks it', async () => {
    const out = path.join(dir, 'out', 'based.py');
    assert.strictEqual((await cli('pull', 'heads.rpn.Based', '--db', db, '--out', out, '--no-validate', '--python', PYTHON_WITH_TORCH)).code, 0);
    const text = fs.readFileSync(out, 'utf8');
    assert.match(text, /^try:\n {4}from basekit import Base\nexcept ModuleNotFoundError as _nnrag_error:\n {4}Base = _NnragMissing\(_nnrag_error\)$/m);
    assert.match(text, /^# not installed for this interpreter, stood in for until code uses them: basekit$/m);
  });
});
