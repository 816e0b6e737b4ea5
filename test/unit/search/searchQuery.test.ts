import * as assert from 'assert';
import { searchBlocks, searchSuggestion } from '../../../src/core/search/search';
import { correct, splitCompound, understand, vocabularyOf } from '../../../src/core/search/query';
import { indexFolder, memoryDb, tmpdir, writeTree } from '../helpers';

const NAMES = [
  'MultiheadAttention',
  'ResidualBlock',
  'ConvBnReLU2d',
  'DropPath',
  'BatchNorm2d',
  'FeaturePyramidNetwork',
  'ColorJitter',
  'InvertedResidual',
  'SqueezeExcitation',
];

describe('search: what a query means', () => {
  const v = vocabularyOf(NAMES);
  const terms = (q: string): string[] => understand(q, v).terms;

  it('expands abbreviations and acronyms on the query side, as the index side does', () => {
    assert.ok(terms('attn').includes('attention'));
    assert.ok(['feature', 'pyramid', 'network'].every((w) => terms('FPN').includes(w)));
    assert.ok(['batch', 'normalization'].every((w) => terms('bn').includes(w)));
    assert.ok(['squeeze', 'excitation'].every((w) => terms('SE block').includes(w)));
    assert.ok(terms('mha').includes('multihead'));
    assert.deepStrictEqual(understand('FPN', v).meanings, [['feature', 'pyramid', 'network']]);
    // a word spelled out from its start means its words; a word of its own is not another name for them
    assert.deepStrictEqual(understand('upsample', v).meanings, [['up', 'sampling']]);
    assert.deepStrictEqual(understand('bottleneck', v).meanings, [[]]);
  });

  it("knows the field's synonyms", () => {
    assert.ok(['drop', 'path'].every((w) => terms('stochastic depth').includes(w)));
    assert.ok(['stochastic', 'depth'].every((w) => terms('droppath').includes(w)));
    assert.ok(['inverted', 'residual'].every((w) => terms('MBConv').includes(w)));
    assert.ok(terms('swish').includes('silu'));
  });

  it('reads British spellings and plurals as the code writes them', () => {
    assert.ok(terms('colour jitter').includes('color'));
    assert.ok(terms('group normalisation').includes('normalization'));
    assert.ok(terms('residual blocks').includes('block'));
  });

  it("splits compounds into the index's words", () => {
    const more = vocabularyOf([...NAMES, 'ResBlock', 'ConvBNAct']);
    assert.deepStrictEqual(splitCompound('convbnact', more), ['conv', 'bn', 'act']);
    assert.deepStrictEqual(splitCompound('resblock', more), ['res', 'block']);
    assert.ok(['residual', 'block'].every((w) => understand('resblock', more).terms.includes(w)));
    assert.strictEqual(splitCompound('attention', vocabularyOf(['Attention'])), undefined, 'a word the index has is not split');
  });

  it('corrects typos against the index, and names known parts as known', () => {
    assert.strictEqual(correct('atention', v), 'attention');
    assert.strictEqual(correct('squeze', v), 'squeeze');
    assert.strictEqual(correct('xyzzyq', v), undefined);
    const u = understand('multihead atention', v);
    assert.deepStrictEqual([...u.corrections], [['atention', 'attention']]);
    assert.strictEqual(understand('Conv2dNormActivation', vocabularyOf(['Conv2dNormActivation'])).corrections.size, 0);
    assert.strictEqual(understand('LayerNorm2d', vocabularyOf(['LayerNorm', 'Conv2d'])).widened, false, 'a name made of known parts');
  });

  it('takes the initials of a spelled-out name as its acronym', () => {
    assert.strictEqual(understand('atrous spatial pyramid pooling', v).acronym, 'aspp');
    assert.strictEqual(understand('two words', v).acronym, undefined);
  });
});

describe('search: ranking what the query means', () => {
  async function zoo() {
    const dir = await tmpdir();
    const conv = (n: string, d: string) =>
      `class ${n}(nn.Sequential):\n    """Convolution, normalization and activation, in ${d}."""\n    def __init__(self, in_ch, out_ch, k=3, norm_layer=None, act_layer=None):\n        super().__init__()\n        self.conv = nn.Conv${d}(in_ch, out_ch, k)\n        self.norm = norm_layer(out_ch)\n        self.act = act_layer()\n`;
    await writeTree(dir, {
      'zoo/__init__.py': '',
      'zoo/conv.py': `from torch import nn\n\n${conv('Conv2dNormActivation', '2d')}\n${conv('Conv3dNormActivation', '3d')}`,
      'zoo/attn.py':
        'from torch import nn\n\nclass MultiheadAttention(nn.Module):\n    """Attention over heads."""\n    def __init__(\n        self,\n        # sizes\n        dim=8,\n        heads=2,  # per layer\n    ):\n        super().__init__()\n\nclass ASPP(nn.Module):\n    """Pyramid of dilated convolutions."""\n\nclass ASPPPooling(nn.Module):\n    """The pooling branch of ASPP."""\n',
      'zoo/models.py':
        'from torch import nn\n\nclass ConvNeXt(nn.Module):\n    """A ConvNeXt model with blocks."""\n    def __init__(self, num_classes=1000):\n        super().__init__()\n\nclass CNBlock(nn.Module):\n    """The ConvNeXt block."""\n',
      'zoo/transforms.py':
        'from torch import nn\n\nclass ObjectDetection(nn.Module):\n    """Presets for detection: the head of the pipeline."""\n\nclass DetectionHead(nn.Module):\n    """A detection head."""\n',
    });
    const db = await memoryDb();
    await indexFolder(db, dir);
    return db;
  }

  it('shows signatures on one line, without the comments of the source', async () => {
    const db = await zoo();
    assert.strictEqual(searchBlocks(db, { text: 'MultiheadAttention' })[0].signature, '(dim=8, heads=2,)');
  });

  it('puts an exact name first even when it is a copy of another block', async () => {
    const db = await zoo();
    const hit = searchBlocks(db, { text: 'Conv3dNormActivation' })[0];
    assert.strictEqual(hit.name, 'Conv3dNormActivation');
  });

  it('finds a block by an abbreviation, a typo, a compound and its acronym spelled out', async () => {
    const db = await zoo();
    assert.strictEqual(searchBlocks(db, { text: 'mha' })[0]?.name, 'MultiheadAttention');
    assert.strictEqual(searchBlocks(db, { text: 'multihead atention' })[0]?.name, 'MultiheadAttention');
    assert.strictEqual(searchBlocks(db, { text: 'atrous spatial pyramid pooling' })[0]?.name, 'ASPP');
    assert.strictEqual(searchBlocks(db, { text: 'conv norm activation' })[0]?.name.endsWith('NormActivation'), true);
  });

  it('prefers blocks to whole models when the query asks for a block, and blocks to data transforms', async () => {
    const db = await zoo();
    assert.strictEqual(searchBlocks(db, { text: 'convnext block' })[0]?.name, 'CNBlock');
    assert.strictEqual(searchBlocks(db, { text: 'detection head' })[0]?.name, 'DetectionHead');
  });

  it('says what the query probably meant when nothing matches', async () => {
    const db = await zoo();
    assert.strictEqual(searchSuggestion(db, 'multihed atention'), 'multihead attention');
    assert.strictEqual(searchSuggestion(db, 'attention'), undefined);
  });

  it('knows the words of blocks added after its last search, and forgets those of blocks removed', async () => {
    const db = await zoo();
    assert.strictEqual(searchSuggestion(db, 'squeezz excitation'), undefined, 'no such words yet');
    const more = await tmpdir();
    await writeTree(more, {
      'extra/__init__.py': '',
      'extra/se.py': 'from torch import nn\n\nclass SqueezeExcitation(nn.Module):\n    """Channel gates."""\n',
    });
    await indexFolder(db, more);
    // the vocabulary grows by the new rows only, and says what it was told
    assert.strictEqual(searchSuggestion(db, 'squeezz excitation'), 'squeeze excitation');
    db.run('DELETE FROM classes WHERE name = ?', ['SqueezeExcitation']);
    assert.strictEqual(searchSuggestion(db, 'squeezz excitation'), undefined, 'a removed block takes its words with it');
  });
});
