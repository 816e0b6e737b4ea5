import * as assert from 'assert';
import { shortenDocstrings } from '../../../src/core/emit/docstrings';
import { PythonParser } from '../../../src/core/parse/parser';
import { ASSETS, hasTorch, pullValidated } from '../helpers';

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
      '    def apply(self, x):',
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
        '    def apply(self, x):',
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

  it("keeps a forward's docstring whole: the judge reads the shapes it gives on both sides", () => {
    // litgpt's adapter GPT inherits its forward ("idx: ... shape `(B, T)`"): shortened in the copy, the copy's side had one
    // input fewer than the original's, and the inputs the plan named by position differed (a false 'differs')
    const text = [
      'class Base(nn.Module):',
      '    def forward(self, idx):',
      '        """Logits.',
      '',
      '        idx: shape `(B, T)`.',
      '        """',
      '        return idx',
      '',
    ].join('\n');
    assert.strictEqual(shorten(text), text);
  });

  it('cuts at the right place after letters outside ASCII', () => {
    const text = ['def café(x):', '    """Café — crème.', '', '    Ünïcode details 😀.', '    """', '    return "ü"', ''].join('\n');
    assert.strictEqual(
      shorten(text),
      [
        'def café(x):',
        '    """Café — crème.',
        '',
        '    (shortened by NN-RAG: the whole docstring is in the source the header names)',
        '    """',
        '    return "ü"',
        '',
      ].join('\n'),
    );
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

describe('docstrings read at run time', function () {
  this.timeout(120_000);
  it("are kept whole in a file whose code reads __doc__ (a decorator that parses a class's Args section)", async function () {
    if (!hasTorch()) this.skip();
    const report = await pullValidated(
      {
        'docpkg/__init__.py': '',
        'docpkg/doc.py': `def documented(cls):
    if "Args:" not in (cls.__doc__ or ""):
        raise ValueError(f"No 'Args' section is found in the docstring of {cls.__name__!r}")
    return cls
`,
        'docpkg/layers.py': `from torch import nn

from docpkg.doc import documented


@documented
class HeadOutput(nn.Module):
    """A head's output.

    Args:
        dim (int): its width.
    """

    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)


class UsesHead(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.head = HeadOutput(dim)

    def forward(self, x):
        return self.head(x)
`,
      },
      'docpkg.layers.UsesHead',
    );
    assert.strictEqual(report.tier, 'equivalent', JSON.stringify(report.validation));
  });
});
