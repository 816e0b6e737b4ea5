/**
 * Names a framework reaches dynamically, closed over statically: a module imported inside a function and enumerated
 * (`vars(pkg)`: a namespace resolver finds a class by a string), and a function re-exported through star imports
 * where a later star-imported module imports it back from the half-initialized package.
 */
import * as assert from 'assert';
import { computeClosure } from '../../../src/core/resolve/closure';
import type { ClosureContext, ClosureResult } from '../../../src/core/resolve/closure';
import { closureContextOf } from '../helpers';

const FILES: Record<string, string> = {
  'kit/__init__.py': '',
  'kit/norms/__init__.py': 'from .base import Norm\nfrom .kinds import RmsNorm, UnitNorm\n\n__all__ = ["Norm", "RmsNorm", "UnitNorm"]\n',
  'kit/norms/base.py': 'import torch\n\n\nclass Norm(torch.nn.Module):\n    def forward(self, x):\n        return x / self.scale(x)\n',
  'kit/norms/kinds.py': `from .base import Norm


class RmsNorm(Norm):
    def scale(self, x):
        return x.pow(2).mean(-1, keepdim=True).sqrt()


class UnitNorm(Norm):
    def scale(self, x):
        return x.norm(dim=-1, keepdim=True)
`,
  'kit/pick.py': `def norm_by_name(name):
    import kit.norms as norms

    for cls in vars(norms).values():
        if isinstance(cls, type) and issubclass(cls, norms.Norm) and cls.__name__.lower() == name + "norm":
            return cls()
    raise ValueError(name)
`,
  'kit/layer.py': `import torch

from .pick import norm_by_name


class Layer(torch.nn.Module):
    def __init__(self, norm="rms"):
        super().__init__()
        self.norm = norm_by_name(norm)

    def forward(self, x):
        return self.norm(x)
`,
  'kit/ops/__init__.py': 'from .reduce import *  # noqa\nfrom .old import *  # noqa\n',
  'kit/ops/reduce/__init__.py': 'from .sums import total\n\n__all__ = ["total"]\n',
  'kit/ops/reduce/sums.py': 'def total(x):\n    return x.sum(0)\n',
  'kit/ops/old.py': 'from kit.ops import total\n\n\nclass OldReadout:\n    pool = staticmethod(total)\n',
  'kit/readout.py': `import torch

from kit.ops import total


class Readout(torch.nn.Module):
    def forward(self, x):
        return total(x)
`,
};

describe('names reached dynamically, closed over statically', function () {
  this.timeout(60_000);
  let ctx: ClosureContext;

  before(async () => {
    ({ ctx } = await closureContextOf(FILES, 'nnrag-dynamic-'));
  });

  const close = async (module: string, name: string): Promise<ClosureResult> => {
    const rec = ctx.table.lookup(module)!;
    return computeClosure(ctx, rec, rec.facts.classes.find((c) => c.name === name)!.unit);
  };
  const unitNames = (r: ClosureResult): string[] => [...r.units.values()].map((n) => `${n.rec.module}.${n.rec.facts.units[n.unit].name ?? '?'}`).sort();

  it('brings every class of a package a function imports and enumerates, not only the attributes it names', async () => {
    const r = await close('kit.layer', 'Layer');
    const names = unitNames(r);
    for (const want of ['kit.norms.kinds.RmsNorm', 'kit.norms.kinds.UnitNorm', 'kit.norms.base.Norm'])
      assert.ok(names.includes(want), `${want} in ${names.join(', ')}`);
    const onObject = r.modulesAsObjects.get('kit.norms')?.map((s) => s.name) ?? [];
    for (const want of ['Norm', 'RmsNorm', 'UnitNorm']) assert.ok(onObject.includes(want), `${want} on the module object: ${onObject.join(', ')}`);
    assert.deepStrictEqual(r.problems, []);
  });

  it('finds a function bound by an earlier star import when a later one imports it back from the package', async () => {
    const r = await close('kit.readout', 'Readout');
    assert.deepStrictEqual(r.problems, []);
    const names = unitNames(r);
    assert.ok(names.includes('kit.ops.reduce.sums.total'), names.join(', '));
    assert.ok(!names.some((n) => n.endsWith('OldReadout')), names.join(', '));
  });
});
