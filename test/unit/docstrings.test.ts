import * as assert from 'assert';
import { shortenDocstrings } from '../../src/core/emit/docstrings';
import { PythonParser } from '../../src/core/parse/parser';
import { ASSETS } from './helpers';

describe('docstrings of what a pull brings', () => {
  let parser: PythonParser;
  before(async () => {
    parser = await PythonParser.create(ASSETS);
  });
  const shorten = (text: string): string => shortenDocstrings(text, (t) => parser.docstrings(t));

  it('keeps the first paragraph of a function and a method docstring, with a line that says where the rest is', () => {
    const text = [
      'class Norm(nn.Module):',
      '    r"""Normalizes.',
      '',
      '    Args:',
      '        dim (int): channels',
      '    """',
      '',
      '    def forward(self, x):',
      "        '''Applies it.",
      '        Over the last dimension.',
      '',
      '        Example: Norm(3)(x)',
      "        '''",
      '        return x',
      '',
    ].join('\n');
    const out = shorten(text);
    assert.strictEqual(
      out,
      [
        'class Norm(nn.Module):',
        '    r"""Normalizes.',
        '',
        '    (shortened by NN-RAG: the whole docstring is in the source the header names)',
        '    """',
        '',
        '    def forward(self, x):',
        "        '''Applies it.",
        '        Over the last dimension.',
        '',
        '        (shortened by NN-RAG: the whole docstring is in the source the header names)',
        "        '''",
        '        return x',
        '',
      ].join('\n'),
    );
    // still Python, with the same code
    assert.ok(parser.parseText(out).ok);
  });

  it('cuts at the right place after letters outside ASCII', () => {
    const text = ['def café(x):', '    """Café — crème.', '', '    Ünïcode details 😀.', '    """', '    return "ü"', ''].join('\n');
    assert.strictEqual(shorten(text), ['def café(x):', '    """Café — crème.', '', '    (shortened by NN-RAG: the whole docstring is in the source the header names)', '    """', '    return "ü"', ''].join('\n'));
  });

  it('leaves one-paragraph docstrings, strings that are not docstrings, and f-strings alone', () => {
    const text = [
      'def f(x):',
      '    """One line."""',
      '    y = """not a docstring',
      '',
      '    second paragraph"""',
      '    return y',
      '',
      'def g():',
      '    x = 1',
      '    """after a statement: not a docstring',
      '',
      '    more"""',
      '',
    ].join('\n');
    assert.strictEqual(shorten(text), text);
  });
});
