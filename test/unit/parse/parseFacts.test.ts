import * as assert from 'assert';
import { spawnSync } from 'child_process';
import { readFileSync } from 'fs';
import * as path from 'path';
import { Language, Parser } from 'web-tree-sitter';
import type { Node } from 'web-tree-sitter';
import { countNodes } from '../../../bench/floors';
import { copyTree, cursorPath, withPublicCursor } from '../../../src/core/parse/syntax';
import type { SyntaxNode } from '../../../src/core/parse/syntax';
import type { ParsedModule } from '../../../src/core/parse/types';
import { warmUpParser, warmUpSample } from '../../../src/core/analysis/warmUp';
import { ASSETS, parser, ROOT } from '../helpers';

async function parse(text: string): Promise<ParsedModule> {
  const p = await parser();
  const out = p.parseText(text);
  if (!out.ok) throw new Error(`${out.reason}: ${out.detail}`);
  return out;
}

function unitNamed(m: ParsedModule, name: string) {
  const u = m.facts.units.find((x) => x.name === name || x.binds.includes(name));
  assert.ok(u, `no unit binds ${name}`);
  return u;
}

describe('parse: imports', () => {
  it('records every import form with level, alias and placement', async () => {
    const m = await parse(
      [
        'import os',
        'import torch.nn as nn',
        'import a.b.c',
        'from . import sibling',
        'from ..pkg.mod import X as Y, Z',
        'from .star import *',
        'try:',
        '    import fast',
        'except ImportError:',
        '    fast = None',
        'if TYPE_CHECKING:',
        '    from .types import T',
        'def f():',
        '    from .inner import helper',
        '    return helper()',
      ].join('\n'),
    );
    const imps = m.facts.imports.map((i) => ({ k: i.kind, m: i.module, l: i.level, n: i.name, b: i.bound, f: i.inFunction, t: i.typeChecking, g: i.guarded }));
    assert.deepStrictEqual(imps, [
      { k: 'import', m: 'os', l: 0, n: undefined, b: 'os', f: false, t: false, g: false },
      { k: 'import', m: 'torch.nn', l: 0, n: undefined, b: 'nn', f: false, t: false, g: false },
      { k: 'import', m: 'a.b.c', l: 0, n: undefined, b: 'a', f: false, t: false, g: false },
      { k: 'from', m: '', l: 1, n: 'sibling', b: 'sibling', f: false, t: false, g: false },
      { k: 'from', m: 'pkg.mod', l: 2, n: 'X', b: 'Y', f: false, t: false, g: false },
      { k: 'from', m: 'pkg.mod', l: 2, n: 'Z', b: 'Z', f: false, t: false, g: false },
      { k: 'star', m: 'star', l: 1, n: undefined, b: undefined, f: false, t: false, g: false },
      { k: 'import', m: 'fast', l: 0, n: undefined, b: 'fast', f: false, t: false, g: true },
      { k: 'from', m: 'types', l: 1, n: 'T', b: 'T', f: false, t: true, g: true },
      { k: 'from', m: 'inner', l: 1, n: 'helper', b: 'helper', f: true, t: false, g: false },
    ]);
  });
});

describe('parse: definitions', () => {
  it('finds top-level definitions with ranges, including inside if/try, and __all__', async () => {
    const m = await parse(
      [
        '"""Module doc."""',
        '__all__ = ["A", "f"]',
        '__all__ += ["B"]',
        '',
        '@register',
        'class A(nn.Module, metaclass=Meta):',
        '    """A block."""',
        '    def __init__(self, dim: int = 4, *args, **kw):',
        '        super().__init__()',
        '    def forward(self, x):',
        '        return x',
        '',
        'if USE_B:',
        '    class B(A):',
        '        pass',
        'else:',
        '    B = None',
        '',
        'def f(x, y=DEFAULT):',
        '    """Doc of f."""',
        '    return g(x)',
      ].join('\n'),
    );
    assert.strictEqual(m.facts.docstring, 'Module doc.');
    assert.deepStrictEqual(m.facts.all, ['A', 'f', 'B']);
    const a = m.facts.classes.find((c) => c.name === 'A')!;
    assert.deepStrictEqual(a.bases, ['nn.Module']);
    assert.deepStrictEqual(a.decorators, ['register']);
    assert.strictEqual(a.docstring, 'A block.');
    assert.strictEqual(a.signature, '(dim: int = 4, *args, **kw)');
    assert.strictEqual(a.forwardSignature, '(x)');
    assert.strictEqual(a.startLine, 6);
    const unitA = unitNamed(m, 'A');
    assert.strictEqual(unitA.startLine, 5, 'a decorated class starts at its decorator');
    assert.ok(
      m.facts.classes.some((c) => c.name === 'B' && c.bases[0] === 'A'),
      'class inside a top-level if',
    );
    const compound = m.facts.units.find((u) => u.kind === 'compound')!;
    assert.deepStrictEqual(compound.binds.sort(), ['B']);
    assert.strictEqual(compound.guard, 'if');
    const f = m.facts.functions.find((x) => x.name === 'f')!;
    assert.strictEqual(f.docstring, 'Doc of f.');
    const unitF = unitNamed(m, 'f');
    assert.deepStrictEqual(unitF.defNames, ['DEFAULT']);
    assert.deepStrictEqual(unitF.callNames, ['g']);
    assert.strictEqual(m.text.slice(unitF.start, unitF.end).split('\n')[0], 'def f(x, y=DEFAULT):');
  });

  it('marks abstract classes', async () => {
    const m = await parse('class Base(nn.Module, ABC):\n    @abstractmethod\n    def forward(self, x): ...\n');
    assert.strictEqual(m.facts.classes[0].abstract, true);
  });

  it('recognises registry decorators and registration calls', async () => {
    const m = await parse(
      [
        '@MODELS.register_module()',
        'class A: pass',
        '@MODELS.register_module(name="Alias")',
        'class B: pass',
        '@HEADS.register("short")',
        'class C: pass',
        'MODELS.register_module(module=D, name="Dee")',
        'if version >= 2:',
        '    MODELS.register_module("BN", module=nn.BatchNorm2d)',
        'for m in [nn.ReLU, act.GELU]:',
        '    MODELS.register_module(module=m)',
      ].join('\n'),
    );
    const reg = Object.fromEntries(m.facts.classes.map((c) => [c.name, c.registry]));
    assert.deepStrictEqual(reg.A, { registry: 'MODELS', alias: undefined });
    assert.deepStrictEqual(reg.B, { registry: 'MODELS', alias: 'Alias' });
    assert.deepStrictEqual(reg.C, { registry: 'HEADS', alias: 'short' });
    assert.deepStrictEqual(m.facts.registrations, [
      { registry: 'MODELS', alias: 'Dee', target: 'D', unit: 3 },
      // a positional name in a guarded block; each class of a loop over classes, by its own name
      { registry: 'MODELS', alias: 'BN', target: 'nn.BatchNorm2d', unit: 4 },
      { registry: 'MODELS', target: 'nn.ReLU', unit: 5 },
      { registry: 'MODELS', target: 'act.GELU', unit: 5 },
    ]);
  });
});

describe('parse: scope rules (free names of each top-level definition)', () => {
  async function free(src: string, name: string): Promise<{ def: string[]; call: string[] }> {
    const u = unitNamed(await parse(src), name);
    return { def: [...u.defNames].sort(), call: [...u.callNames].sort() };
  }

  it('class scope is invisible to methods; bare names in methods are globals', async () => {
    const r = await free('class K(Base):\n    EPS = 0.1\n    y = EPS * 2\n    def f(self):\n        return EPS + self.EPS\n', 'K');
    assert.deepStrictEqual(r.def, ['Base']);
    assert.deepStrictEqual(r.call, ['EPS']);
  });

  it('parameters and locals shadow globals; annotations and defaults are definition-time', async () => {
    const r = await free('def f(width: Width = W0, *a, **k) -> Out:\n    proj = make()\n    return proj(width) + a + k\n', 'f');
    assert.deepStrictEqual(r.def, ['Out', 'W0', 'Width']);
    assert.deepStrictEqual(r.call, ['make']);
  });

  it('comprehension targets are local, the first iterable is read outside, walrus binds in the function', async () => {
    const r = await free('def f(xs):\n    ys = [act(v) * scale for v in xs if (n := len(v))]\n    return n, [w for w in GLOBAL_LIST]\n', 'f');
    assert.deepStrictEqual(r.call, ['GLOBAL_LIST', 'act', 'len', 'scale']);
  });

  it('global and nonlocal declarations', async () => {
    const r = await free(
      'def f():\n    global COUNTER\n    COUNTER = 1\n    x = 0\n    def g():\n        nonlocal x\n        x = helper()\n    return g\n',
      'f',
    );
    assert.deepStrictEqual(r.call, ['COUNTER', 'helper']);
  });

  it('lambdas, nested functions and class bodies inside functions', async () => {
    const r = await free('F = lambda x, k=K: x + outer(x)\n', 'F');
    assert.deepStrictEqual(r.def, ['K']);
    assert.deepStrictEqual(r.call, ['outer']);
  });

  it('postponed annotations are not names at all', async () => {
    const m = await parse('from __future__ import annotations\ndef f(x: Hidden) -> Ret:\n    return x\n');
    assert.strictEqual(m.facts.futureAnnotations, true);
    const u = unitNamed(m, 'f');
    assert.deepStrictEqual([...u.defNames, ...u.callNames], []);
  });

  it('keyword argument names, attributes and import names are not references', async () => {
    const r = await free('def f(x):\n    import numpy as np\n    return torch.cat(x, dim=DIM).view(np.shape)\n', 'f');
    assert.deepStrictEqual(r.call, ['DIM', 'torch']);
  });

  it('except targets, with targets and for targets are locals', async () => {
    const r = await free(
      'def f(p):\n    with open(p) as fh:\n        for i, line in enumerate(fh):\n            pass\n    try:\n        pass\n    except Err as e:\n        return e, i, line\n',
      'f',
    );
    assert.deepStrictEqual(r.call, ['Err', 'enumerate', 'open']);
  });

  it('records attribute chains on references for module attribute access', async () => {
    const m = await parse('def f():\n    return pkg.sub.fn(1)\n');
    const refs = m.refs[0];
    assert.strictEqual(refs.length, 1);
    assert.deepStrictEqual(refs[0].attrs, ['sub', 'fn']);
    assert.strictEqual(m.text.slice(refs[0].start, refs[0].attrEnds[1]), 'pkg.sub.fn');
  });
});

describe('parse: hostile input', () => {
  it('rejects binary data', async () => {
    const p = await parser();
    const out = p.parse(Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2, 3]));
    assert.strictEqual(out.ok, false);
    assert.strictEqual(!out.ok && out.reason, 'binary');
  });

  it('honours a PEP 263 coding line (latin-1)', async () => {
    const p = await parser();
    const bytes = Buffer.concat([Buffer.from('# -*- coding: latin-1 -*-\nNAME = "caf'), Buffer.from([0xe9]), Buffer.from('"\n')]);
    const out = p.parse(bytes);
    assert.ok(out.ok);
    assert.ok(out.ok && out.text.includes('café'));
  });

  it('rejects text that is not UTF-8 without a coding line', async () => {
    const p = await parser();
    const out = p.parse(Buffer.from([0x78, 0x20, 0x3d, 0x20, 0x22, 0xe9, 0x22, 0x0a]));
    assert.strictEqual(!out.ok && out.reason, 'binary');
  });

  it('skips files over the size limit', async () => {
    const p = await parser();
    const out = p.parse(Buffer.alloc(5000, 0x20), 1000);
    assert.strictEqual(!out.ok && out.reason, 'too-large');
  });

  it('reports Python 2 and syntax errors', async () => {
    const p = await parser();
    const py2 = p.parseText('print "hello"\n');
    assert.strictEqual(!py2.ok && py2.reason, 'python2');
    const py2b = p.parseText('def f():\n    raise ValueError, "bad"\n');
    assert.strictEqual(!py2b.ok && py2b.reason, 'python2');
    const py2c = p.parseText('MODE = 0777\n');
    assert.strictEqual(!py2c.ok && py2c.reason, 'python2');
    const bad = p.parseText('def f(:\n');
    assert.strictEqual(!bad.ok && bad.reason, 'syntax');
    // what CPython 3 compiles is never Python 2: zeros with leading zeros, a Python 2 form in a docstring
    assert.ok(p.parseText('x = 00\ny = 0_0\n').ok, '00 is a Python 3 literal');
    const elsewhere = p.parseText('"""Usage:\nprint hello\n"""\n\n\ndef f(:\n    pass\n');
    assert.strictEqual(!elsewhere.ok && elsewhere.reason, 'syntax', 'a Python 2 form away from the error does not make a file Python 2');
  });

  it('reads a module whose only error is a construct newer than the grammar inside a function body', async () => {
    const p = await parser();
    // CPython compiles `return a, *(gen)`; tree-sitter-python 0.25 does not
    const out = p.parseText(
      'import re\n\n\ndef f(x):\n    return x, *(int(y) for y in x)\n\n\nclass A:\n    def g(self):\n        return re.sub("a", "b", "c")\n',
    );
    assert.ok(out.ok, JSON.stringify(out));
    assert.deepStrictEqual(out.ok && out.facts.classes.map((c) => c.name), ['A']);
    // an error in the module's own statements, or in a signature, still skips the file
    assert.strictEqual(p.parseText('x = (\n\ndef f(x):\n    pass\n').ok, false);
    assert.strictEqual(p.parseText('def f(x,, y):\n    return x, *(y for y in x)\n').ok, false);
  });

  it('reports indentation deeper than CPython reads as CPython does', async () => {
    const p = await parser();
    let text = '';
    for (let i = 0; i < 1000; i++) text += `${' '.repeat(i)}if x:\n`;
    text += `${' '.repeat(1000)}pass\n`;
    const out = p.parseText(text);
    assert.strictEqual(!out.ok && out.reason, 'too-deep');
    assert.strictEqual(!out.ok && out.detail, 'IndentationError: too many levels of indentation (line 101), as CPython says');
  });

  it('refuses pathological nesting instead of overflowing the stack', async () => {
    const p = await parser();
    const deep = `x = ${'('.repeat(1200)}1${')'.repeat(1200)}\n`;
    const out = p.parseText(deep);
    assert.strictEqual(out.ok, false);
    assert.ok(!out.ok && ['too-deep', 'syntax'].includes(out.reason));
    const fine = p.parseText(`x = ${'('.repeat(150)}1${')'.repeat(150)}\n`);
    assert.ok(fine.ok, 'ordinary nesting parses');
  });

  it('parses an empty file', async () => {
    const p = await parser();
    const out = p.parse(Buffer.alloc(0));
    assert.ok(out.ok);
  });
});

describe('parse: warming the thread parser', () => {
  it('parses a sample that walks the constructs fact extraction handles', async () => {
    // the warm-up only helps if its sample goes through the whole extraction, not an early syntax-error exit
    const m = await parse(warmUpSample());
    const classes = m.facts.classes.map((c) => c.name);
    for (let k = 0; k < 8; k++) {
      assert.ok(classes.includes(`Block${k}`) && classes.includes(`Head${k}`), `Block${k}/Head${k} in ${classes.join(',')}`);
    }
    assert.ok(
      m.facts.imports.some((i) => i.level === 1),
      'a relative import',
    );
    // scopes walked: the builder's names split by when they are needed
    assert.ok(
      ['List', 'Block0'].every((n) => unitNamed(m, 'build0').defNames.includes(n)),
      unitNamed(m, 'build0').defNames.join(','),
    );
    assert.ok(unitNamed(m, 'build0').callNames.includes('_REGISTRY0'), unitNamed(m, 'build0').callNames.join(','));
    await warmUpParser(await parser(), 1);
  });
});

describe('parse: the copy of the syntax tree', () => {
  it('holds every node of the tree, with the types, fields and offsets web-tree-sitter gives; the walk floor visits as many', async () => {
    await parser(); // the runtime, initialised as the index does (the copy calls its cursor functions)
    const ts = new Parser();
    ts.setLanguage(await Language.load(ASSETS.pythonWasm));
    const text = `${warmUpSample()}\nx = [f(a, *b, k=1) for a in y if a] # done\n`;
    const tree = ts.parse(text)!;
    try {
      // web-tree-sitter's own nodes, in pre-order
      const want: string[] = [];
      const visit = (n: Node, field: string | null): void => {
        want.push(`${n.type}|${n.isNamed}|${field ?? ''}|${n.startIndex}|${n.endIndex}`);
        for (let i = 0; i < n.childCount; i++) visit(n.child(i)!, n.fieldNameForChild(i));
      };
      visit(tree.rootNode, null);
      const got: string[] = [];
      const walk = (n: SyntaxNode): void => {
        got.push(`${n.type}|${n.isNamed}|${n.field ?? ''}|${n.startIndex}|${n.endIndex}`);
        for (const c of n.children) {
          assert.strictEqual(c.parent, n);
          walk(c);
        }
      };
      assert.strictEqual(cursorPath(), 'direct', "the index's path: the runtime's cursor exports");
      walk(copyTree(tree, text));
      assert.ok(want.length > 2000, `${want.length} nodes`);
      assert.deepStrictEqual(got, want);
      assert.strictEqual(countNodes(tree), want.length);
      assert.strictEqual(countNodes(tree), want.length, 'the cursor is freed and the tree can be walked again');
      // the same through web-tree-sitter's public cursor (a runtime whose exports are not reachable)
      got.length = 0;
      withPublicCursor(() => {
        assert.strictEqual(cursorPath(), 'public');
        walk(copyTree(tree, text));
        assert.strictEqual(countNodes(tree), want.length);
      });
      assert.deepStrictEqual(got, want);
      assert.strictEqual(cursorPath(), 'direct');
      assert.strictEqual(countNodes(tree), want.length, 'each path leaves the tree whole for the other');
    } finally {
      tree.delete();
    }
  });
});

describe('parse: the shapes optimised code depends on', () => {
  it('survive between files: no optimised walk or extractor is thrown away when a file is done', function () {
    this.timeout(120_000);
    // files one after the other with a full collection between them (what a parse worker's heap sees), with V8
    // tracing what it optimises and what it throws away
    const script = `require('tsx/cjs');
      const { PythonParser } = require(${JSON.stringify(path.join(ROOT, 'src/core/parse/parser.ts'))});
      const { warmUpSample } = require(${JSON.stringify(path.join(ROOT, 'src/core/analysis/warmUp.ts'))});
      PythonParser.create(${JSON.stringify(ASSETS)}).then((p) => {
        const bytes = new TextEncoder().encode(warmUpSample());
        for (let i = 0; i < 60; i++) { if (!p.parse(bytes).ok) throw new Error('no facts'); global.gc(); console.log('FILE ' + i); }
      });`;
    const run = spawnSync(process.execPath, ['--expose-gc', '--trace-opt', '--trace-deopt', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
      maxBuffer: 256 << 20,
    });
    assert.strictEqual(run.status, 0, run.stderr);
    // the functions of the walk, the extractor and the fingerprints
    const ours = new Set<string>();
    for (const file of ['src/core/parse/syntax.ts', 'src/core/parse/facts.ts', 'src/core/parse/fingerprint.ts']) {
      const source = readFileSync(path.join(ROOT, file), 'utf8');
      for (const m of source.matchAll(/^\s*(?:export )?(?:function |(?:private |static |get )*)([A-Za-z_]\w*)\s*[(<]/gm)) ours.add(m[1]);
    }
    const named = (line: string): string | undefined => /<(?:JSFunction|SharedFunctionInfo) (?:get )?([\w$]+)/.exec(line)?.[1];
    const lines = run.stdout.split('\n');
    const optimised = new Set(
      lines
        .filter((l) => l.startsWith('[completed compiling'))
        .map(named)
        .filter((n) => n && ours.has(n)),
    );
    // V8 did optimise them (else there is nothing to throw away and the check below proves nothing)
    for (const hot of ['walk', 'visit']) assert.ok(optimised.has(hot), `${hot} was not optimised: ${[...optimised].join(', ')}`);
    // code thrown away because a class's hidden class died with the last file's objects (233 of them before, after
    // nearly every file). While V8 warms up it also throws away a few optimisations that had inlined the first file's
    // closures (walk's `step` and `make`) and moves on to code shared by all of them; those are not what this checks, so
    // only the files after the first ten count, each once, however many functions it cost
    let file = -1;
    const lost = new Map<number, string[]>();
    for (const line of lines) {
      if (line.startsWith('FILE ')) file = Number(line.slice(5));
      const name = /reason: weak objects/.test(line) ? named(line) : undefined;
      if (name && ours.has(name) && file >= 9) lost.set(file + 1, [...(lost.get(file + 1) ?? []), name]);
    }
    const shown = [...lost].map(([f, names]) => `file ${f}: ${names.join(', ')}`).join('; ');
    assert.ok(lost.size <= 3, `optimised code thrown away after ${lost.size} of the last 50 files: ${shown}`);
  });

  it('are kept without harm: parsers made and dropped (the command line makes one per command) leave the runtime whole', function () {
    this.timeout(120_000);
    // a dropped parser's objects are collected and finalized while another parser works on; a cursor among them once
    // made web-tree-sitter free the last walk's cursor a second time, and the next parse failed
    const script = `require('tsx/cjs');
      const { PythonParser } = require(${JSON.stringify(path.join(ROOT, 'src/core/parse/parser.ts'))});
      const { warmUpSample } = require(${JSON.stringify(path.join(ROOT, 'src/core/analysis/warmUp.ts'))});
      const tick = () => new Promise((r) => setImmediate(r));
      (async () => {
        const text = warmUpSample();
        const keep = await PythonParser.create(${JSON.stringify(ASSETS)});
        const want = JSON.stringify(keep.parseText(text));
        let same = 0;
        for (let i = 0; i < 20; i++) {
          (await PythonParser.create(${JSON.stringify(ASSETS)})).parseText(text);
          global.gc();
          await tick();
          await tick();
          for (let k = 0; k < 3; k++) if (JSON.stringify(keep.parseText(text)) === want) same++;
        }
        console.log('same ' + same);
      })();`;
    const run = spawnSync(process.execPath, ['--expose-gc', '-e', script], { cwd: ROOT, encoding: 'utf8' });
    assert.strictEqual(run.status, 0, run.stderr);
    assert.strictEqual(run.stdout.trim(), 'same 60');
  });
});
