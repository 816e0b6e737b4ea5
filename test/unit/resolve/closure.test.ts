/**
 * The dependency closure called directly (core/resolve/closure.ts) on small repositories: what a block needs and what
 * stays an import, the methods of a helper class nothing reaches (method deferral), a registration nothing builds
 * from, a class only tested against (a type-only stand-in, also when a function imports it), and a compiled module with and without a build.
 */
import * as assert from 'assert';
import { computeClosure } from '../../../src/core/resolve/closure';
import type { ClosureContext, ClosureResult } from '../../../src/core/resolve/closure';
import { closureContextOf } from '../helpers';

const FILES: Record<string, string> = {
  'lab/__init__.py': '',
  'lab/registry.py': `class Registry:
    def __init__(self, name):
        self.name = name
        self.table = {}

    def register_module(self):
        def wrap(cls):
            self.table[cls.__name__] = cls
            return cls
        return wrap


MODELS = Registry("models")
`,
  'lab/helpers.py': `import math

from torch import nn


def scale(x, k=2):
    return x * k


class Gate(nn.Module):
    def forward(self, x):
        return self.squash(x)

    def squash(self, x):
        return x.sigmoid()

    def unused_helper(self, x):
        return math.sqrt(x)


class Marker:
    pass
`,
  'lab/heavy.py': `from torch import nn

from . import _C

OPS = _C.load("ops")


class Heavy(nn.Module):
    def forward(self, x):
        return OPS.run(x)
`,
  'lab/blocks.py': `from torch import nn

from .helpers import Gate, Marker, scale
from .registry import MODELS
from . import _C


@MODELS.register_module()
class Block(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.gate = Gate()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        if isinstance(x, Marker):
            return x
        return scale(self.gate(self.lin(x)))


class Fused(nn.Module):
    def forward(self, x):
        return _C.fused(x)


def is_heavy(m):
    from .heavy import Heavy
    return isinstance(m, Heavy)


class Chain(nn.Sequential):
    def forward(self, x):
        for m in self:
            x = x if is_heavy(m) else m(x)
        return x


class Wrapped(nn.Module):
    def __init__(self, inner):
        super().__init__()
        assert isinstance(inner, Gate)
        self.inner = inner

    def forward(self, x):
        return self.inner(x)
`,
};

describe('the dependency closure, called directly', function () {
  this.timeout(60_000);
  let ctx: ClosureContext;

  before(async () => {
    ({ ctx } = await closureContextOf(FILES, 'nnrag-closure-'));
  });

  const close = async (module: string, name: string, extra: Partial<ClosureContext> = {}): Promise<ClosureResult> => {
    const rec = ctx.table.lookup(module)!;
    const fact = rec.facts.classes.find((c) => c.name === name)!;
    return computeClosure({ ...ctx, ...extra }, rec, fact.unit);
  };
  const unitNames = (r: ClosureResult): string[] => [...r.units.values()].map((n) => `${n.rec.module}.${n.rec.facts.units[n.unit].name ?? '?'}`).sort();

  it('takes in the definitions the block reaches, and keeps third-party names as imports', async () => {
    const r = await close('lab.blocks', 'Block');
    const names = unitNames(r);
    for (const want of ['lab.blocks.Block', 'lab.helpers.Gate', 'lab.helpers.scale']) assert.ok(names.includes(want), `${want} in ${names.join(', ')}`);
    assert.ok(
      [...r.externals.values()].some((e) => e.module === 'torch' && e.name === 'nn'),
      'torch.nn stays an import',
    );
    assert.deepStrictEqual(r.problems, []);
  });

  it('leaves out the methods of a helper class that nothing reaches, and keeps those reached through self', async () => {
    const r = await close('lab.blocks', 'Block');
    const gate = [...r.units.values()].find((n) => n.rec.facts.units[n.unit].name === 'Gate')!;
    assert.deepStrictEqual(
      (gate.dropped ?? []).map((m) => m.name),
      ['unused_helper'],
    );
    // what only the dropped method used is not taken in
    assert.ok(![...r.externals.values()].some((e) => e.module === 'math'), 'math went with unused_helper');
  });

  it('leaves a registration out when nothing in the file builds from the registry', async () => {
    const r = await close('lab.blocks', 'Block');
    const block = r.root;
    assert.ok(
      block.edits.some((e) => e.text?.includes('registration left out by NN-RAG')),
      'the decorator becomes a comment',
    );
    assert.ok(!unitNames(r).includes('lab.registry.MODELS'), 'the registry is not taken in');
  });

  it('writes an empty stand-in for a class the file only tests objects against', async () => {
    const r = await close('lab.blocks', 'Block');
    const marker = [...r.units.values()].find((n) => n.rec.facts.units[n.unit].name === 'Marker')!;
    assert.match(marker.replacement?.source ?? '', /^class Marker:\n {4}"""A stand-in written by NN-RAG/);
  });

  it('writes a stand-in for a class a function imports only to test against, and leaves its module behind', async () => {
    const r = await close('lab.blocks', 'Chain');
    const heavy = [...r.units.values()].find((n) => n.rec.facts.units[n.unit].name === 'Heavy')!;
    assert.match(heavy.replacement?.source ?? '', /^class Heavy:\n {4}"""A stand-in written by NN-RAG/);
    assert.ok(!unitNames(r).includes('lab.heavy.OPS'), 'the compiled operator the module loads is not taken in');
    assert.deepStrictEqual(r.problems, []);
  });

  it('keeps the class the constructor of a block tests its arguments against: users build it with real objects', async () => {
    const r = await close('lab.blocks', 'Wrapped');
    const gate = [...r.units.values()].find((n) => n.rec.facts.units[n.unit].name === 'Gate')!;
    assert.strictEqual(gate.replacement, undefined, 'Gate is written whole, not as a stand-in');
    assert.ok(unitNames(r).includes('lab.helpers.Gate'));
  });

  it('names a compiled module without source as a problem, and imports it from its build when there is one', async () => {
    const plain = await close('lab.blocks', 'Fused');
    assert.deepStrictEqual(
      plain.problems.map((p) => [p.kind, p.name]),
      [['native-extension', 'lab._C']],
    );
    const built = await close('lab.blocks', 'Fused', { natives: new Map([['lab._C', { file: 'lab_C-1.so', name: 'lab_C' }]]) });
    assert.deepStrictEqual(built.problems, []);
    const native = [...built.externals.values()].find((e) => e.native);
    assert.deepStrictEqual(native && { module: native.module, bound: native.bound, native: native.native }, {
      module: 'lab._C',
      bound: '_C',
      native: { file: 'lab_C-1.so', name: 'lab_C' },
    });
  });
});
