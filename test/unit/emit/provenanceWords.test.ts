/**
 * What the hover and the CodeLens say of a pulled file's provenance: a package version whole (only a git commit is
 * shortened), and what `equivalent` means.
 */
import * as assert from 'assert';
import { provenanceHover, upstreamLens } from '../../../src/server/provenance';
import { provenanceLine } from '../../../src/core/emit/pulledFile';
import type { Provenance } from '../../../src/core/emit/pulledFile';
import { shortCommit } from '../../../src/core/base/text';
import { argumentSetsWords, argumentsText, builtAsWords } from '../../../src/core/pull/pulledState';

const PROV: Provenance = {
  version: 1,
  target: 'torchvision:torchvision.models.resnet.BasicBlock',
  block: 'BasicBlock',
  repo: 'torchvision',
  url: null,
  commit: 'torchvision==0.14.1a0+5e8e2f1',
  license: 'BSD-3-Clause',
  hash: 'sha256:0000000000000000000000000000000000000000000000000000000000000000',
  pulledAt: '2026-11-26T00:00:00.000Z',
  definitions: [
    { names: ['BasicBlock'], module: 'torchvision.models.resnet', repo: 'torchvision', path: 'models/resnet.py', lines: [59, 100], blob: 'a'.repeat(40) },
  ],
  imports: ['torch'],
  renamed: {},
  validation: { status: 'validated', tier: 'equivalent' },
};

describe('provenance words in the editor', () => {
  const text = `# -*- coding: utf-8 -*-\n${provenanceLine(PROV)}\n\n\nclass BasicBlock:\n    pass\n`;

  it('shows a package version whole, in the hover and the CodeLens; a git commit shortened', () => {
    const hover = provenanceHover(text, text.indexOf('BasicBlock:') + 2);
    const md = JSON.stringify(hover);
    assert.ok(md.includes('torchvision==0.14.1a0+5e8e2f1'), md);
    const lens = upstreamLens(
      text,
      PROV,
      { target: PROV.target, state: 'up-to-date', edited: false, stale: false, conflicts: 0, changed: [], validation: PROV.validation },
      'file:///x.py',
    );
    assert.match(lens[0].command!.title, /pulled from torchvision@torchvision==0\.14\.1a0\+5e8e2f1 /);
    assert.strictEqual(shortCommit('0123456789abcdef0123456789abcdef01234567'), '0123456789ab');
  });

  it('says what equivalent means where the verdict is explained', () => {
    const md = JSON.stringify(provenanceHover(text, text.indexOf('BasicBlock:') + 2));
    assert.match(md, /behaves like the original on the inputs tried/);
  });

  it('says why a block that ran was not compared with its original', () => {
    const forward = {
      ...PROV,
      validation: { status: 'validated', tier: 'forward', notCompared: 'the original needs a package this interpreter lacks (mmcv)' },
    };
    const t = `# -*- coding: utf-8 -*-\n${provenanceLine(forward)}\n\n\nclass BasicBlock:\n    pass\n`;
    const md = (provenanceHover(t, t.indexOf('BasicBlock:') + 2)?.contents as { value: string }).value;
    assert.match(
      md,
      /validation: \*\*validated: forward\*\*\n- not compared with the original: the original needs a package this interpreter lacks \(mmcv\)/,
      md,
    );
  });

  it('shows how the block was built as a call that runs: a class is a name, not a string; one helper for every place', () => {
    const built = {
      ...PROV,
      validation: {
        status: 'validated',
        tier: 'forward',
        args: [16, 16],
        kwargs: { activation: { $name: 'torch.nn.Identity' }, mode: 'fast', bias: false, scale: { $float: 1 }, size: { $tuple: [3] } },
      },
    };
    const t = `# -*- coding: utf-8 -*-\n${provenanceLine(built)}\n\n\nclass BasicBlock:\n    pass\n`;
    const md = (provenanceHover(t, t.indexOf('BasicBlock:') + 2)?.contents as { value: string }).value;
    const call = 'BasicBlock(16, 16, activation=torch.nn.Identity, mode="fast", bias=False, scale=1.0, size=(3,))';
    assert.ok(md.includes(`- built as \`${call}\``), md);
    assert.strictEqual(builtAsWords('BasicBlock', built.validation.args, built.validation.kwargs), `built as ${call}`);
    assert.strictEqual(argumentsText([{ $float: 0.25 }, { $dict: { a: [1, null] } }], {}), '(0.25, {"a": [1, None]})');
    assert.deepStrictEqual([argumentSetsWords(1), argumentSetsWords(3)], ['1 argument set', '3 argument sets']);
  });
});
