/**
 * Python's evaluation order where a class body evaluates names when it runs: a method's annotation, default or
 * decorator that names something the class binds only afterwards means the module's binding (as Python resolves
 * it then), so the pulled file keeps that import.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import { hasTorch, pullValidated } from '../helpers';

describe('scope rules of a class body', function () {
  this.timeout(120_000);
  before(function () {
    if (!hasTorch()) this.skip();
  });

  it("an annotation naming a method defined by that very def (`def device(self) -> device`) is the module's name", async () => {
    const report = await pullValidated(
      {
        'scopepkg/__init__.py': '',
        'scopepkg/layers.py': `import torch
from torch import device, nn


class OnDevice(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    @property
    def device(self) -> device:
        return self.lin.weight.device

    def forward(self, x):
        return self.lin(x.to(self.device))
`,
      },
      'scopepkg.layers.OnDevice',
    );
    assert.strictEqual(report.tier, 'equivalent', JSON.stringify(report.validation));
    assert.match(fs.readFileSync(report.out!, 'utf8'), /^from torch import (?:device, nn|nn, device)$|^from torch import device$/m);
  });

  it("a default that names a class attribute bound earlier in the body is the class's, not the module's", async () => {
    const report = await pullValidated(
      {
        'scopepkg/__init__.py': '',
        'scopepkg/scaled.py': `from torch import nn

scale = 100.0


class Scaled(nn.Module):
    scale = 2.0

    def __init__(self, dim=8, factor=scale):
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.factor = factor

    def forward(self, x):
        return self.lin(x) * self.factor
`,
      },
      'scopepkg.scaled.Scaled',
    );
    assert.strictEqual(report.tier, 'equivalent', JSON.stringify(report.validation));
    assert.doesNotMatch(fs.readFileSync(report.out!, 'utf8'), /^scale = 100\.0$/m, "the module's scale is not needed");
  });
});
