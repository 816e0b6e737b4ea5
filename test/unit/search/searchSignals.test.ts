/**
 * What search reads besides a block's name: words for what its code does, its abbreviations' meanings in its own
 * docstring, and the index graph's prior (subclassed, exported by its package, a variant of another block). Each
 * through a real index of a small repository and the real search.
 */
import * as assert from 'assert';
import { codeWordsOf } from '../../../src/core/parse/codeWords';
import { searchBlocks } from '../../../src/core/search/search';
import { acronymMeanings } from '../../../src/core/search/words';
import { indexFolder, memoryDb, tmpdir, writeTree } from '../helpers';
import type { IndexDb } from '../../../src/core/store/database';

describe('search: words from what the code does', () => {
  it('says a gated SiLU product, a causal mask, a depthwise convolution and an RMS norm from the code', () => {
    assert.ok(codeWordsOf('def forward(self, x):\n    return self.w3(F.silu(self.w1(x)) * self.w2(x))').includes('swiglu'));
    assert.ok(codeWordsOf('self.register_buffer("bias", torch.tril(torch.ones(n, n)))').includes('causal'));
    assert.ok(codeWordsOf('self.conv = nn.Conv2d(dim, dim, 3, padding=1, groups=dim)').includes('depthwise'));
    assert.ok(!codeWordsOf('self.conv = nn.Conv2d(dim, dim, 3, padding=1, groups=1)').includes('depthwise'));
    assert.ok(codeWordsOf('x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + eps)').includes('rms'));
    // a layer norm's variance is a mean of squares too
    assert.ok(!codeWordsOf('u = x.mean(1, keepdim=True)\ns = (x - u).pow(2).mean(1, keepdim=True)\nx = (x - u) * torch.rsqrt(s)').includes('rms'));
    assert.ok(
      !codeWordsOf('var = torch.var(x, dim=1, keepdim=True)\nmean = torch.mean(x, dim=1, keepdim=True)\nreturn (x - mean) * var.rsqrt()').includes('rms'),
    );
    assert.deepStrictEqual(codeWordsOf('def forward(self, x):\n    return x + 1'), []);
  });

  it("learns what a name's capitals stand for from the class's own docstring", () => {
    assert.deepStrictEqual(acronymMeanings('RMSNorm', 'Root Mean Square Layer Normalization.'), ['root', 'mean', 'square']);
    assert.deepStrictEqual(acronymMeanings('GATConv', 'The graph attentional operator from the paper'), ['graph', 'attentional']);
    assert.deepStrictEqual(acronymMeanings('Attention', 'Root Mean Square'), []);
    assert.deepStrictEqual(acronymMeanings('MLPBlock', 'A block.'), []);
  });
});

describe('search: the canonical block first', () => {
  let db: IndexDb;
  before(async () => {
    const dir = await tmpdir();
    await writeTree(dir, {
      'gnn/__init__.py': 'from .conv import GATConv\n\n__all__ = ["GATConv"]\n',
      'gnn/conv.py': [
        'from torch import nn',
        'import torch.nn.functional as F',
        '',
        'class GATConv(nn.Module):',
        '    """The graph attentional operator."""',
        '    def __init__(self, dim, heads=1):',
        '        super().__init__()',
        '        self.lin = nn.Linear(dim, dim * heads)',
        '    def forward(self, x, edge_index):',
        '        return F.softmax(self.lin(x), dim=-1)',
        '',
        'class CuGraphGATConv(GATConv):',
        '    """The graph attentional operator, with cugraph-ops kernels."""',
        '',
        'class DenseGATConv(nn.Module):',
        '    """The graph attentional operator over dense adjacency."""',
        '    def __init__(self, dim, heads=1):',
        '        super().__init__()',
        '        self.lin = nn.Linear(dim, dim * heads)',
        '',
        'class GatedMLP(nn.Module):',
        '    def __init__(self, dim):',
        '        super().__init__()',
        '        self.gate_proj = nn.Linear(dim, 4 * dim)',
        '        self.up_proj = nn.Linear(dim, 4 * dim)',
        '    def forward(self, x):',
        '        return F.silu(self.gate_proj(x)) * self.up_proj(x)',
        '',
        'class PlainMLP(nn.Module):',
        '    """A two-layer perceptron."""',
        '    def __init__(self, dim):',
        '        super().__init__()',
        '        self.fc = nn.Linear(dim, 4 * dim)',
        '',
      ].join('\n'),
      'det/ops.py': [
        'from torch import nn',
        '',
        'class MSDeformAttn(nn.Module):',
        '    def __init__(self, d_model=256, n_levels=4):',
        '        super().__init__()',
        '',
        'class MultiScaleRoIAlign(nn.Module):',
        '    """Multi-scale RoIAlign pooling."""',
        '',
        'class DeformConv2d(nn.Module):',
        '    """Deformable convolution."""',
        '',
      ].join('\n'),
      'gnn/models.py': 'from .conv import GATConv\n\nclass GAT(GATConv):\n    """A model of graph attention layers."""\n',
    });
    db = await memoryDb();
    await indexFolder(db, dir);
  });

  it('stores the prior: the exported and subclassed block above its vendor and dense variants', () => {
    const prior = (name: string): number => Number(db.get('SELECT prior FROM classes WHERE name = ?', [name])?.prior);
    assert.ok(prior('GATConv') > 0, `GATConv ${prior('GATConv')}`);
    assert.ok(prior('CuGraphGATConv') < 0 && prior('DenseGATConv') < 0, `${prior('CuGraphGATConv')} ${prior('DenseGATConv')}`);
    assert.strictEqual(prior('PlainMLP'), 0);
    assert.ok(db.appliedMigrations().includes('0007-search-prior'));
  });

  it('ranks the canonical class first for its description, its variants after it', () => {
    const names = searchBlocks(db, { text: 'graph attention' }).map((h) => h.name);
    assert.strictEqual(names[0], 'GATConv', names.join(', '));
    assert.ok(names.indexOf('CuGraphGATConv') > 0 && names.indexOf('DenseGATConv') > 0, names.join(', '));
  });

  it('finds the SiLU-gated MLP by what it computes, with no word of it in its name or docstring', () => {
    assert.strictEqual(searchBlocks(db, { text: 'swiglu mlp' })[0]?.name, 'GatedMLP');
    assert.strictEqual(searchBlocks(db, { text: 'gated feed forward' })[0]?.name, 'GatedMLP');
  });

  it('leaves the little words of a description out', () => {
    assert.strictEqual(searchBlocks(db, { text: 'a perceptron with two layers' })[0]?.name, 'PlainMLP');
  });
  it("learns an abbreviation from the index's names: the initials of words typed in a row (`multi scale`: MS)", () => {
    const names = searchBlocks(db, { text: 'multi scale deformable attention' }).map((h) => h.name);
    assert.strictEqual(names[0], 'MSDeformAttn', names.join(', '));
  });
});

describe('search: the words typed, run together, are the name', () => {
  it('puts the class named by the words typed first, though its text never says the last one alone', async () => {
    const db = await memoryDb();
    const dir = await tmpdir();
    await writeTree(dir, {
      'enc/__init__.py': '',
      'enc/image_encoder.py': [
        'from torch import nn',
        '',
        'class ImageEncoderViT(nn.Module):',
        '    """Encodes an image into patch embeddings."""',
        '    def forward(self, x):',
        '        return x',
        '',
        'class Block(nn.Module):',
        '    """A transformer block of the image encoder, as in ViT."""',
        '    def forward(self, x):',
        '        return x',
        '',
      ].join('\n'),
    });
    await indexFolder(db, dir);
    const names = searchBlocks(db, { text: 'image encoder vit' }).map((h) => h.name);
    assert.strictEqual(names[0], 'ImageEncoderViT', names.join(', '));
  });
});

describe('search: a part of the model the query names', () => {
  let db: IndexDb;
  before(async () => {
    db = await memoryDb();
    const dir = await tmpdir();
    // bodies of their own (copies of one body would be grouped under one of them)
    const cls = (name: string, doc: string, args = 'self, dim'): string =>
      `class ${name}(nn.Module):\n    """${doc}"""\n    def __init__(${args}):\n        super().__init__()\n        self.${name.toLowerCase()} = nn.Linear(dim, ${name.length})\n\n`;
    await writeTree(dir, {
      'zoo/__init__.py': '',
      'zoo/convnext.py': `from torch import nn\n\n${cls('CNBlock', 'Depthwise convolution, layer norm, an MLP.')}${cls('ConvNeXt', 'ConvNeXt, the ConvNeXt model: a stack of ConvNeXt blocks, block after block.', 'self, dim, block_setting=None')}`,
      'zoo/resnet.py': `from torch import nn\n\n${cls('Bottleneck', 'The bottleneck block: three convolutions with a shortcut.')}${cls('ResNet', 'The residual network.', 'self, dim, num_classes=1000')}`,
      'zoo/raft.py': `from torch import nn\n\n${cls('ResidualBlock', 'Residual block of the update network.')}`,
      'zoo/model.py': `from torch import nn\n\n${cls('Block', 'Attention then an MLP, each with a residual connection.')}${cls('GPT', 'The language model.', 'self, dim, n_layer=2')}`,
      'zoo/decode_heads.py': `from torch import nn\n\n${cls('FusionBlock', 'Fuses the features of two levels in the decoder.')}`,
    });
    await indexFolder(db, dir);
  });

  it('puts the block of the file the query names before the whole model', () => {
    const names = searchBlocks(db, { text: 'convnext block' }).map((h) => h.name);
    assert.strictEqual(names[0], 'CNBlock', names.join(', '));
  });

  it('takes a block beside the class a word names as part of that model (`decoder block of gpt`: the Block beside GPT)', () => {
    const names = searchBlocks(db, { text: 'decoder block of gpt' }).map((h) => h.name);
    assert.strictEqual(names[0], 'Block', names.join(', '));
  });

  it('reads a word of its own as itself, not as an abbreviation of other words (`bottleneck` is not a residual block)', () => {
    const names = searchBlocks(db, { text: 'resnet bottleneck block' }).map((h) => h.name);
    assert.strictEqual(names[0], 'Bottleneck', names.join(', '));
  });
});

describe('search: names cut short, and cross written X', () => {
  let db: IndexDb;
  before(async () => {
    const dir = await tmpdir();
    // (bodies that differ: copies of one body would be shown as one group)
    let made = 0;
    const block = (name: string, body = `        self.lin = nn.Linear(dim, dim * ${++made})`): string[] => [
      `class ${name}(nn.Module):`,
      '    def __init__(self, dim, init_values=1e-5):',
      '        super().__init__()',
      body,
      '    def forward(self, x):',
      '        return self.lin(x)',
      '',
    ];
    await writeTree(dir, {
      'geo/__init__.py': '',
      'geo/layers.py': [
        'import torch',
        'from torch import nn',
        '',
        ...block('CoorsNorm'),
        ...block('NormLinear'),
        ...block('CrossTransformer'),
        ...block('XCAttention'),
        ...block('Attention'),
        ...block('LayerScale', '        self.gamma = nn.Parameter(torch.empty(dim))\n        nn.init.constant_(self.gamma, self.init_values)'),
        ...block('ChannelGate'),
      ].join('\n'),
    });
    db = await memoryDb();
    await indexFolder(db, `${dir}/geo`);
  });

  it('finds a name that cuts a typed word short (`coordinate`: the Coors of CoorsNorm)', () => {
    assert.strictEqual(searchBlocks(db, { text: 'coordinate norm' })[0]?.name, 'CoorsNorm');
  });

  it('reads X as cross in a name (`cross covariance attention`: XCAttention, with the class named cross)', () => {
    const names = searchBlocks(db, { text: 'cross covariance attention' }).map((h) => h.name);
    assert.deepStrictEqual(names.slice(0, 2).sort(), ['CrossTransformer', 'XCAttention'], names.join(' '));
  });

  it('says a learnable per-channel scale set from init_values (a layer scale)', () => {
    assert.strictEqual(searchBlocks(db, { text: 'learnable per channel scale' })[0]?.name, 'LayerScale');
  });
});
