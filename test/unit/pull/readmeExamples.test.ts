/**
 * The usage a README documents: its Python code blocks give the judge the arguments and inputs the authors use, for
 * the very class they import (another class of the same name in another module gets none of it).
 */
import * as assert from 'assert';
import { pythonFences, readmeBlocks, readmeUsesOf } from '../../../src/core/pull/readmeExamples';
import { loadModuleTable } from '../../../src/core/resolve/loadTable';
import { loadRepoRows } from '../../../src/core/store/sourceText';
import { hasTorch, indexFolder, memoryDb, parser, pullValidated, tmpdir, writeTree } from '../helpers';

// a patch embedding whose image and patch sizes must agree with its input, and whose width no guess gives
const NET = `import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, image_size, patch_size, dim):
        super().__init__()
        assert dim % 5 == 0, "five heads"
        self.grid = image_size // patch_size
        self.embed = nn.Conv2d(3, dim, patch_size, stride=patch_size)
        self.pos = nn.Parameter(torch.randn(1, dim, self.grid, self.grid))

    def forward(self, img):
        return self.embed(img) + self.pos
`;

const FILES: Record<string, string> = {
  'zoo/__init__.py': 'from .net import Net\n',
  'zoo/net.py': NET,
  'zoo/other.py': NET,
  'README.md': [
    '# zoo',
    '',
    '```python',
    'import torch',
    'from zoo import Net',
    '',
    'v = Net(image_size = 48, patch_size = 12, dim = 20)',
    'img = torch.randn(1, 3, 48, 48)',
    'out = v(img)',
    '```',
    '',
    '```bash',
    'pip install zoo',
    '```',
  ].join('\n'),
};

describe('README examples: how the authors build and call a block', function () {
  this.timeout(180_000);

  it('reads the Python code blocks of a README, not its shell ones', () => {
    const fences = pythonFences(FILES['README.md']);
    assert.strictEqual(fences.length, 1);
    assert.match(fences[0], /v = Net\(image_size = 48/);
    assert.deepStrictEqual(pythonFences('```\nfrom a import B\nB(1)\n```\n```\nls -l\n```\n').length, 1);
  });

  it('gives the calls to the class the code block imports, through the package, and to no other class of its name', async () => {
    const dir = await tmpdir();
    await writeTree(dir, FILES);
    const db = await memoryDb();
    await indexFolder(db, dir);
    const table = loadModuleTable(db);
    const repo = [...loadRepoRows(db).values()][0];
    const blocks = await readmeBlocks(repo, await parser());
    const uses = readmeUsesOf(blocks, table, table.lookup('zoo.net')!, 'Net');
    assert.deepStrictEqual(uses.calls, [{ args: [], kwargs: { image_size: 48, patch_size: 12, dim: 20 } }]);
    assert.strictEqual(uses.texts.length, 1);
    assert.deepStrictEqual(readmeUsesOf(blocks, table, table.lookup('zoo.other')!, 'Net'), { calls: [], texts: [] });
  });

  it('validates a block with the arguments and the input its README builds and calls it with', async function () {
    if (!hasTorch()) this.skip();
    const documented = await pullValidated(FILES, 'zoo.net.Net');
    assert.strictEqual(documented.tier, 'equivalent', JSON.stringify(documented.validation));
    assert.deepStrictEqual(documented.validation?.kwargs, { image_size: 48, patch_size: 12, dim: 20 });
    assert.deepStrictEqual(documented.validation?.input_shapes, [[1, 3, 48, 48]]);
    const { 'README.md': _readme, ...undocumented } = FILES;
    // without the README no argument set builds it
    const guessed = await pullValidated(undocumented, 'zoo.net.Net');
    assert.strictEqual(guessed.category, 'instantiate', JSON.stringify(guessed.validation));
  });
});
