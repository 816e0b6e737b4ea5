import * as assert from 'assert';
import { guessCategory } from '../../../src/core/blocks/category';
import { discoverBlocks, isTorchModuleClass } from '../../../src/core/blocks/discover';
import { decodeFacts, decodeSlim, slimFacts, usesOf } from '../../../src/core/store/factsCodec';
import { searchBlocks } from '../../../src/core/search/search';
import { searchWords, splitIdentifier } from '../../../src/core/search/words';
import { indexFolder, memoryDb, tmpdir, writeTree } from '../helpers';
import * as path from 'path';

describe('discovery', () => {
  it('follows inheritance across modules, re-exports, aliases and repositories', async () => {
    const dir = await tmpdir();
    await writeTree(dir, {
      'lib/__init__.py': 'from .base import Base as PublicBase\n',
      'lib/base.py': 'import torch.nn as nn\n\nclass Base(nn.Module):\n    pass\n\nclass Plain:\n    pass\n',
      'lib/seq.py': 'from torch.nn import Sequential\n\nclass Stack(Sequential):\n    pass\n',
      'lib/deep.py': 'from . import PublicBase\nfrom .mid import Mid\n\nclass Leaf(Mid):\n    pass\n\nclass NotABlock(dict):\n    pass\n',
      'lib/mid.py': 'from lib import PublicBase\n\nclass Mid(PublicBase):\n    pass\n',
      'lib/star.py': 'from .base import *\n\nclass ViaStar(Base):\n    pass\n',
      'lib/abstract.py': 'import abc\nimport torch\n\nclass Abstract(torch.nn.Module, abc.ABC):\n    @abc.abstractmethod\n    def forward(self, x): ...\n',
    });
    const other = await tmpdir();
    await writeTree(other, { 'ext/__init__.py': '', 'ext/user.py': 'from lib.deep import Leaf\n\nclass CrossRepo(Leaf):\n    pass\n' });
    const db = await memoryDb();
    await indexFolder(db, dir, { name: 'core' });
    await indexFolder(db, other, { name: 'users' });
    const rows = db.all('SELECT name, is_block, abstract FROM classes ORDER BY name');
    const blocks = rows.filter((r) => Number(r.is_block) === 1).map((r) => String(r.name));
    assert.deepStrictEqual(blocks, ['Abstract', 'Base', 'CrossRepo', 'Leaf', 'Mid', 'Stack', 'ViaStar']);
    assert.strictEqual(Number(rows.find((r) => r.name === 'Abstract')!.abstract), 1, 'abstract blocks are marked, not hidden');
  });

  it('reads the slim facts each file keeps, and the whole facts of rows from before them, to the same blocks and uses', async () => {
    const dir = await tmpdir();
    await writeTree(dir, {
      'pkg/__init__.py': 'from .base import Base\n__all__ = ["Base"]\n',
      'pkg/base.py':
        'import torch.nn as nn\nif True:\n    from torch.nn import Identity\n\nclass Base(nn.Module):\n    def f(self):\n        import math\n        return Identity(), helper()\n\ndef helper():\n    return Base\n',
      'pkg/user.py': 'from pkg import Base\nfrom . import base\n\nclass User(base.Base):\n    pass\n\nclass Other(Base):\n    x = Base()\n',
    });
    const db = await memoryDb();
    await indexFolder(db, dir);
    const state = () =>
      db.all('SELECT name, is_block, uses FROM classes ORDER BY name').map((r) => `${String(r.name)} ${Number(r.is_block)} ${Number(r.uses)}`);
    const withSlim = state();
    assert.deepStrictEqual(
      withSlim.map((r) => r.split(' ').slice(0, 2).join(' ')),
      ['Base 1', 'Other 1', 'User 1'],
    );
    assert.ok(
      withSlim.some((r) => Number(r.split(' ')[2]) > 0),
      `uses counted: ${withSlim.join(', ')}`,
    );
    for (const r of db.all("SELECT facts, slim FROM files WHERE status = 'parsed'")) {
      const full = decodeFacts(r.facts);
      assert.deepStrictEqual(decodeSlim(r.slim as Uint8Array), { facts: slimFacts(full), uses: usesOf(full) });
    }
    db.run('UPDATE classes SET is_block = 0, uses = 0');
    db.run('UPDATE files SET slim = NULL');
    discoverBlocks(db);
    assert.deepStrictEqual(state(), withSlim);
  });

  it('knows torch.nn module classes and rejects Parameter', () => {
    assert.ok(isTorchModuleClass('torch.nn.Module'));
    assert.ok(isTorchModuleClass('torch.nn.Conv2d'));
    assert.ok(isTorchModuleClass('torch.nn.modules.conv.Conv2d'));
    assert.ok(!isTorchModuleClass('torch.nn.Parameter'));
    assert.ok(!isTorchModuleClass('torch.nn.functional'));
  });

  it('guesses categories from names', () => {
    assert.strictEqual(guessCategory('MultiHeadAttention', [], 'x.attn'), 'attention');
    assert.strictEqual(guessCategory('ConvBNAct', [], 'x.layers'), 'convolution');
    assert.strictEqual(guessCategory('LayerNorm2d', [], 'x'), 'normalization');
    assert.strictEqual(guessCategory('FocalLoss', [], 'x'), 'loss');
    assert.strictEqual(guessCategory('PatchEmbed', [], 'x'), 'embedding');
    assert.strictEqual(guessCategory('ClassifierHead', [], 'x'), 'head');
    assert.strictEqual(guessCategory('ResNet', [], 'x.resnet'), 'backbone');
    assert.strictEqual(guessCategory('BasicBlock', [], 'x.resnet'), 'other', 'a file name alone never makes a backbone');
    assert.strictEqual(guessCategory('RandomResizedCrop', [], 'torchvision.transforms.transforms'), 'transform');
    assert.strictEqual(guessCategory('RandomCropVideo', [], 'torchvision.transforms._transforms_video'), 'transform');
    assert.strictEqual(guessCategory('SwinTransformer', [], 'tv.models.swin', '(patch_size, embed_dim, num_classes=1000)'), 'model');
    assert.strictEqual(guessCategory('FCOSClassificationHead', [], 'tv.models.fcos', '(in_channels, num_anchors, num_classes)'), 'head');
  });
});

describe('search', () => {
  it('splits identifiers and expands abbreviations', () => {
    assert.deepStrictEqual(splitIdentifier('MultiHeadAttention'), ['multi', 'head', 'attention']);
    assert.deepStrictEqual(splitIdentifier('conv_bn_act'), ['conv', 'bn', 'act']);
    assert.deepStrictEqual(splitIdentifier('SEBlock'), ['se', 'block']);
    assert.deepStrictEqual(splitIdentifier('resnet50'), ['resnet', '50']);
    assert.ok(searchWords('MHSAttn').split(' ').includes('attention'));
    // (adjacent words also joined: `DepthWise` is searched as depthwise)
    assert.strictEqual(searchWords('ConstructorToString'), 'constructorto tostring constructor to string', 'no Object.prototype lookups');
  });

  async function corpus() {
    const dir = await tmpdir();
    await writeTree(dir, {
      'zoo/__init__.py': '',
      'zoo/attn.py':
        [
          'from torch import nn',
          'class Attention(nn.Module):',
          '    """Multi-head self attention."""',
          'class AttentionPool(nn.Module):',
          '    """Pooling by attention."""',
          'class CrossAttn(nn.Module):',
          '    """Cross attention between two sequences."""',
          'class WindowAttention(nn.Module):',
          '    pass',
        ].join('\n    pass\n') + '\n',
      'zoo/conv.py':
        'from torch import nn\nclass ConvBNAct(nn.Module):\n    """Convolution, batch norm, activation."""\n    def __init__(self, in_ch, out_ch, k=3):\n        super().__init__()\n',
      'zoo/norm.py': 'from torch import nn\nclass RMSNorm(nn.Module):\n    """Root mean square normalization."""\n',
      'zoo/util.py': 'class Attention:\n    """Not a module."""\n',
    });
    const db = await memoryDb();
    await indexFolder(db, dir);
    return db;
  }

  it('puts the exact name first, then prefixes, then word matches', async () => {
    const db = await corpus();
    const names = searchBlocks(db, { text: 'Attention' }).map((h) => h.name);
    assert.strictEqual(names[0], 'Attention');
    assert.strictEqual(names[1], 'AttentionPool', 'a prefix match comes next');
    assert.ok(names.includes('CrossAttn'), 'attn is expanded to attention');
    assert.ok(names.includes('WindowAttention'));
    assert.strictEqual(names.filter((n) => n === 'Attention').length, 1, 'a plain class is not a block');
  });

  it('matches words in docstrings and signatures, and prefixes', async () => {
    const db = await corpus();
    assert.strictEqual(searchBlocks(db, { text: 'root mean square' })[0].name, 'RMSNorm');
    assert.strictEqual(searchBlocks(db, { text: 'out_ch' })[0].name, 'ConvBNAct');
    assert.strictEqual(searchBlocks(db, { text: 'convbn' })[0].name, 'ConvBNAct');
  });

  it('filters by repository, category and kind', async () => {
    const db = await corpus();
    assert.deepStrictEqual(
      searchBlocks(db, { text: '', category: 'normalization' }).map((h) => h.name),
      ['RMSNorm'],
    );
    assert.strictEqual(searchBlocks(db, { text: 'attention', repo: 'nope' }).length, 0);
    const all = searchBlocks(db, { text: 'Attention', kind: 'class' }).map((h) => `${h.module}.${h.name}`);
    assert.ok(all.includes('zoo.util.Attention'), 'kind=class includes plain classes');
    db.run(`UPDATE classes SET validation = '{"status":"validated","tier":"forward"}' WHERE name = 'RMSNorm'`);
    assert.deepStrictEqual(
      searchBlocks(db, { text: '', validation: 'validated' }).map((h) => h.name),
      ['RMSNorm'],
    );
    // the record as an object in JSON, not a string inside it
    assert.deepStrictEqual(searchBlocks(db, { text: 'RMSNorm' })[0].validation, { status: 'validated', tier: 'forward' });
    assert.ok(!searchBlocks(db, { text: '', validation: 'none' }).some((h) => h.name === 'RMSNorm'));
    const hit = searchBlocks(db, { text: 'ConvBNAct' })[0];
    assert.deepStrictEqual(
      { target: hit.target, qualname: hit.qualname, path: hit.path, line: hit.line },
      { target: `${path.basename(hit.target.split(':')[0])}:zoo.conv.ConvBNAct`, qualname: 'zoo.conv.ConvBNAct', path: 'zoo/conv.py', line: 2 },
    );
  });

  it('survives queries made of punctuation and FTS operators', async () => {
    const db = await corpus();
    for (const q of ['"', 'AND OR NOT', '*', 'a:b', "'); DROP TABLE classes; --", 'NEAR/3']) {
      assert.doesNotThrow(() => searchBlocks(db, { text: q }), q);
    }
    assert.ok((db.all('SELECT count(*) AS n FROM classes')[0].n as number) > 0);
  });
});
