/**
 * A third-party package the interpreter lacks, needed while the file is imported (a configuration library's base
 * class, as detection frameworks subclass it) but never on the path the block takes: stood in for, so that the block
 * builds and runs; code that really uses it raises the import's error, naming the package.
 */
import * as assert from 'assert';
import { execFileSync } from 'child_process';
import { promises as fsp } from 'fs';
import { hasTorch, PYTHON_WITH_TORCH, pullValidated } from '../helpers';

const FILES: Record<string, string> = {
  'det/__init__.py': '',
  'det/config.py': `import functools

from nnrag_absent_cfglib.config import CfgNode as _CfgNode


class CfgNode(_CfgNode):
    def merged(self, other):
        return self.merge_from_other_cfg(other)


def configurable(init, kind: type | _CfgNode = None):
    @functools.wraps(init)
    def wrapped(self, *args, **kwargs):
        if args and isinstance(args[0], _CfgNode):
            return init(self, **type(self).from_config(args[0]))
        return init(self, *args, **kwargs)

    return wrapped
`,
  'det/head.py': `import torch

from .config import CfgNode, configurable


class Head(torch.nn.Module):
    config_class = CfgNode

    @configurable
    def __init__(self, channels=4, classes=3):
        super().__init__()
        self.cls = torch.nn.Linear(channels, classes)

    @classmethod
    def from_config(cls, cfg):
        return {"channels": cfg.MODEL.CHANNELS, "classes": cfg.MODEL.CLASSES}

    def forward(self, x):
        return self.cls(x)
`,
};

describe('pull: a package the interpreter lacks on a path the block does not take', function () {
  this.timeout(300_000);
  before(function () {
    if (!hasTorch()) this.skip();
  });

  it('is stood in for: the block builds, runs, and code that uses the package names it', async () => {
    const report = await pullValidated(FILES, 'det.head.Head', { full: true });
    assert.strictEqual(report.status, 'validated', JSON.stringify(report.validation));
    const code = await fsp.readFile(report.out!, 'utf8');
    assert.match(code, /^# not installed for this interpreter, stood in for until code uses them: nnrag_absent_cfglib$/m);
    const said = execFileSync(
      PYTHON_WITH_TORCH,
      [
        '-I',
        '-c',
        `import runpy\nns = runpy.run_path(${JSON.stringify(report.out!)})\ntry:\n    ns["CfgNode"]()\nexcept ModuleNotFoundError as e:\n    print(e.name)`,
      ],
      { encoding: 'utf8' },
    ).trim();
    assert.strictEqual(said, 'nnrag_absent_cfglib');
  });
});
