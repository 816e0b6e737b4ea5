import * as assert from 'assert';
import { satisfies, validRange } from '@renovatebot/pep440';
import { inlineMetadata, mergePyproject, mergeRequirements, requirementSpecifier, requirementsText } from '../../../src/core/validate/requirements';

describe('requirements a pulled file can be installed with (PEP 440)', () => {
  it("writes a local-label version (Debian's torch 1.13.0a0+gitunknown) as a specifier the public releases satisfy", () => {
    const spec = requirementSpecifier('1.13.0a0+gitunknown');
    assert.strictEqual(spec, '~=1.13.0a0');
    assert.ok(validRange(spec), `${spec} is a PEP 440 specifier`);
    for (const v of ['1.13.0', '1.13.1']) assert.ok(satisfies(v, spec), `${v} satisfies ${spec}`);
    assert.ok(!satisfies('1.14.0', spec) && !satisfies('1.12.1', spec));
    assert.ok(!spec.includes('+'), 'no local label: no index serves one');
  });

  it('keeps ordinary versions compatible, leaves an unreadable one open, and names what the interpreter lacks', () => {
    assert.strictEqual(requirementSpecifier('0.14.1'), '~=0.14.1');
    assert.strictEqual(requirementSpecifier('2'), '>=2');
    assert.strictEqual(requirementSpecifier('not a version'), '');
    const text = requirementsText(
      [
        { module: 'torch', distribution: 'torch', version: '1.13.0a0+gitunknown' },
        { module: 'yaml', distribution: 'PyYAML', version: '6.0' },
      ],
      ['torch', 'yaml', 'einops'],
    );
    assert.strictEqual(text, 'PyYAML~=6.0\neinops  # not installed in the validating interpreter\ntorch~=1.13.0a0\n');
  });

  it('writes the same requirements as PEP 723 inline metadata (a TOML array of strings in comment lines)', () => {
    const block = inlineMetadata(
      [
        { module: 'torch', distribution: 'torch', version: '1.13.0a0+gitunknown' },
        { module: 'yaml', distribution: 'PyYAML', version: '6.0' },
      ],
      ['torch', 'yaml', 'einops'],
    );
    assert.strictEqual(
      block,
      [
        '# /// script',
        '# dependencies = [',
        '#   "PyYAML~=6.0",',
        '#   "torch~=1.13.0a0",',
        '#   # not installed in the validating interpreter: einops',
        '# ]',
        '# ///',
      ].join('\n'),
    );
  });
});

describe("requirements merged into the project's file", () => {
  it("keeps the user's line for a distribution the file names, appends the others once, and modules without one as a comment", () => {
    const existing = '# my project\nTorch==2.1.0\nnumpy>=1.24 ; python_version > "3.8"\n';
    const adding = 'einops>=0.7\nnumpy>=1.26\nmystery  # not installed in the validating interpreter\ntorch>=1.13\n';
    const once = mergeRequirements(existing, adding);
    assert.deepStrictEqual(once.added, ['einops>=0.7', '# mystery  # not installed in the validating interpreter']);
    assert.ok(once.text.startsWith(existing), 'what was there stays as written');
    // again: nothing more
    const twice = mergeRequirements(once.text, adding);
    assert.deepStrictEqual([twice.added, twice.text], [[], once.text]);
    // into an empty file, and one without a final newline
    assert.strictEqual(mergeRequirements('', 'torch>=1.13\n').text, 'torch>=1.13\n');
    assert.strictEqual(mergeRequirements('numpy', 'torch>=1.13\n').text, 'numpy\ntorch>=1.13\n');
  });

  it("adds to pyproject.toml's [project] dependencies, leaving the rest of the file as the user wrote it", () => {
    const adding = 'einops>=0.7\nnumpy>=1.26\nmystery  # not installed in the validating interpreter\n';
    const multi =
      '[build-system]\nrequires = ["setuptools"]\n\n[project]\nname = "mine"  # the name\ndependencies = [\n  "numpy>=1.24",  # pinned for CUDA\n  "torch==2.1.0"\n]\n\n[tool.ruff]\nline-length = 120\n';
    const r = mergePyproject(multi, adding);
    assert.ok('text' in r, JSON.stringify(r));
    assert.deepStrictEqual(r.added, ['einops>=0.7', '# mystery  # not installed in the validating interpreter']);
    assert.strictEqual(
      r.text,
      '[build-system]\nrequires = ["setuptools"]\n\n[project]\nname = "mine"  # the name\ndependencies = [\n  "numpy>=1.24",  # pinned for CUDA\n  "torch==2.1.0",\n  "einops>=0.7",\n  # mystery  # not installed in the validating interpreter\n]\n\n[tool.ruff]\nline-length = 120\n',
    );
    // again: nothing more
    const again = mergePyproject(r.text, adding);
    assert.deepStrictEqual(again, { text: r.text, added: [] });
    // one line, and no dependencies key yet
    const one = mergePyproject('[project]\nname = "x"\ndependencies = ["numpy"]\n', 'torch>=1.13\n');
    assert.deepStrictEqual(one, { text: '[project]\nname = "x"\ndependencies = ["numpy", "torch>=1.13"]\n', added: ['torch>=1.13'] });
    const none = mergePyproject('[project]\nname = "x"\n\n[tool.x]\na = 1\n', 'torch>=1.13\n');
    assert.deepStrictEqual(none, { text: '[project]\ndependencies = [\n    "torch>=1.13",\n]\nname = "x"\n\n[tool.x]\na = 1\n', added: ['torch>=1.13'] });
    // a brace inside a string does not end the array
    const tricky = mergePyproject('[project]\ndependencies = [\n    "mmcv[full]>=2",\n]\n', 'torch>=1.13\n');
    assert.ok('text' in tricky && tricky.text === '[project]\ndependencies = [\n    "mmcv[full]>=2",\n    "torch>=1.13",\n]\n', JSON.stringify(tricky));
    // what NN-RAG does not edit, it says
    assert.match((mergePyproject('[tool.poetry]\nname = "x"\n', 'torch\n') as { problem: string }).problem, /no \[project\] table/);
    assert.match((mergePyproject('[project\n', 'torch\n') as { problem: string }).problem, /not valid TOML/);
  });
});
