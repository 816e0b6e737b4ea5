/**
 * The mutation bench's generator and its equivalent-mutant classifier: one mutant per kind where the file has a place,
 * and a default that no call can use (never read, or passed by every call of its helper) told apart from one the
 * block's own signature or an unknown caller may use.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { mutants, unreadDefault } from '../../../bench/mutants';
import { tmpdir } from '../helpers';

const PYTHON = process.env.NNRAG_TEST_PYTHON ?? 'python3';

const FILE = `import torch
from torch import nn


def drop_path(x, drop_prob: float = 0.0, training: bool = False):
    if drop_prob == 0.0 or not training:
        return x
    return x * 0.5


class Mlp(nn.Module):
    def __init__(self, dim, act_layer=nn.GELU, drop: float = 0.0, unused: float = 0.25):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.act = act_layer()
        self.drop = nn.Dropout(drop)


class Scale(nn.Module):
    def __init__(self, dim, init_values: float = 1e-5):
        super().__init__()
        self.gamma = nn.Parameter(torch.full((dim,), init_values))


class Block(nn.Module):
    def __init__(self, dim=8, drop_path: float = 0.0, ffn_layer=Mlp, eps: float = 1e-6):
        super().__init__()
        self.mlp = ffn_layer(dim, act_layer=nn.ReLU, drop=drop_path)
        self.scale = Scale(dim)
        self.eps = eps
        self.p = drop_path

    def forward(self, x):
        if isinstance(self.scale, Scale):
            x = x + 1
        return drop_path(self.mlp.fc(x), self.p, self.training)
`;

/** Line (1-based) and column (0-based) where `needle` starts in `text`. */
function at(needle: string, text = FILE): [number, number] {
  const lines = text.split('\n');
  const i = lines.findIndex((l) => l.includes(needle));
  assert.ok(i >= 0, needle);
  return [i + 1, lines[i].indexOf(needle)];
}

describe('the mutation bench', function () {
  this.timeout(60_000);
  let file: string;

  before(async () => {
    file = path.join(await tmpdir('nnrag-mutants-'), 'block.py');
    await fs.promises.writeFile(file, FILE, 'utf8');
  });

  it('makes one mutant of each kind that has a place in the file, each one line changed', () => {
    const made = mutants(FILE);
    const kinds = made.map((m) => m.kind);
    assert.deepStrictEqual([...new Set(kinds)], kinds, 'one per kind');
    for (const kind of ['activation', 'default', 'helper', 'residual']) assert.ok(kinds.includes(kind as never), `${kind} in ${kinds.join(',')}`);
    for (const m of made) {
      const before = FILE.split('\n');
      const after = m.text.split('\n');
      assert.strictEqual(after.length, before.length);
      assert.deepStrictEqual(
        after.map((l, i) => (l === before[i] ? 0 : 1)).reduce((a: number, b) => a + b, 0),
        1,
        m.kind,
      );
    }
  });

  it('calls a default equivalent when every call of its helper passes it, through a parameter defaulting to the class too', async () => {
    assert.match(await unreadDefault(PYTHON, file, ...at('0.0, training'), 'Block'), /every call of drop_path .* passes `drop_prob`/);
    assert.match(await unreadDefault(PYTHON, file, ...at('nn.GELU'), 'Block'), /every call of Mlp .* passes `act_layer`/);
    assert.match(await unreadDefault(PYTHON, file, ...at('0.0, unused'), 'Block'), /every call of Mlp .* passes `drop`/);
  });

  it('calls a default equivalent when its parameter is never read', async () => {
    assert.strictEqual(await unreadDefault(PYTHON, file, ...at('0.25'), 'Mlp'), '`unused` is never read in __init__');
    // the block's own parameter, read: its default is the judge's to use
    assert.strictEqual(await unreadDefault(PYTHON, file, ...at('nn.GELU'), 'Mlp'), '');
  });

  it("counts a default a call may use: the block's own, or a helper called without it", async () => {
    assert.strictEqual(await unreadDefault(PYTHON, file, ...at('1e-6'), 'Block'), '', "the block's own defaults are the judge's to use");
    assert.strictEqual(await unreadDefault(PYTHON, file, ...at('1e-5'), 'Block'), '', 'Scale(dim) uses init_values');
    assert.strictEqual(await unreadDefault(PYTHON, file, ...at('x + 1'), 'Block'), '', 'not a default at all');
  });
});
