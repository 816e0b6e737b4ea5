import * as assert from 'assert';
import { execFileSync } from 'child_process';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { findTarget } from '../../../src/core/store/target';
import { bodyHash, readProvenance } from '../../../src/core/emit/pulledFile';
import { IndexDb } from '../../../src/core/store/database';
import { unitsDirOf } from '../../../src/core/store/unitsCache';
import { loadUnits, saveUnits } from '../../../src/core/store/unitsCache';
import type { UnitDetail } from '../../../src/core/store/unitsCache';
import { decodeUnits, encodeUnits } from '../../../src/core/store/unitsCodec';
import type { PythonParser } from '../../../src/core/parse/parser';
import { pullBlock } from '../../../src/core/pull/pull';
import { openPullSession } from '../../../src/core/pull/session';
import type { PullReport } from '../../../src/core/pull/types';
import { loadModuleTable } from '../../../src/core/resolve/loadTable';
import { openFolder } from '../../../src/core/sources/folder';
import { ASSETS, cli, hasTorch, indexFolder, memoryDb, parser, PYTHON_WITH_TORCH, ROOT, tmpdir, writeTree } from '../helpers';

/** The part of a framework the stand-in tests share: its package, a module that must never be pulled, registry helpers. */
const FRAMEWORK: Record<string, string> = {
  'fw/__init__.py': '',
  'fw/heavy.py': 'raise RuntimeError("the framework\'s machinery must not be pulled")\n',
  'fw/registry/__init__.py': 'from .registry import Registry\nfrom .build_functions import build_from_cfg\n',
  'fw/registry/build_functions.py': 'from ..heavy import *\n\ndef build_from_cfg(cfg, registry, default_args=None):\n    return heavy_build(cfg, registry)\n',
};

/** Indexes `files` as a repository, pulls `target` without validation, returns the file and the report. */
async function pull(files: Record<string, string>, target: string): Promise<{ code: string; report: PullReport; dir: string }> {
  const dir = await tmpdir();
  const repo = path.join(dir, 'repo');
  await writeTree(repo, files);
  const db = await memoryDb();
  await indexFolder(db, repo);
  const out = path.join(dir, 'out', 'pulled.py');
  const report = await pullBlock(openPullSession(db, loadModuleTable(db)), findTarget(db, target), { parser: await parser(), out, validate: false });
  return { code: await fsp.readFile(out, 'utf8'), report, dir };
}

/** Runs the pulled file with a plain python3 (no repository on the path) and returns what `snippet` prints. */
function run(dir: string, snippet: string): string {
  return execFileSync('python3', ['-I', '-c', `import runpy, sys\nns = runpy.run_path(${JSON.stringify(path.join(dir, 'out', 'pulled.py'))})\n${snippet}`], {
    cwd: dir,
    encoding: 'utf8',
  }).trim();
}

function topLevelNames(code: string): string[] {
  return [...code.matchAll(/^(?:class|def)\s+(\w+)|^(\w+)\s*=/gm)].map((m) => m[1] ?? m[2]).sort();
}

describe('pull: resolution and emission', () => {
  it('renames colliding names consistently and keeps module attributes apart', async () => {
    const { code, report, dir } = await pull(
      {
        'pkg/__init__.py': '',
        'pkg/a.py': 'SCALE = 2\ndef helper(x):\n    return x * SCALE\n',
        'pkg/b.py': 'SCALE = 3\ndef helper(x):\n    return x + SCALE\n',
        'pkg/main.py':
          'from . import a\nfrom .b import helper as hb, SCALE\n\nclass K:\n    def run(self, x):\n        return a.helper(x), hb(x), a.SCALE, SCALE\n',
      },
      'pkg.main.K',
    );
    assert.strictEqual(report.status, 'extracted');
    assert.strictEqual(run(dir, "print(ns['K']().run(10))"), '(20, 13, 2, 3)');
    assert.doesNotMatch(code, /^from \.|^import pkg|^from pkg/m);
    assert.deepStrictEqual(Object.keys(report.provenance!.renamed).sort(), ['pkg.b.SCALE', 'pkg.b.helper']);
  });

  it('follows lazy package exports (Hugging Face style) to the defining module, without the package machinery', async () => {
    const lazyInit = (structure: string, typed: string): string =>
      `import sys\nfrom typing import TYPE_CHECKING\nfrom ..lazy import LazyModule, SLOW_IMPORT\n\n_import_structure = ${structure}\n\n${typed}\nelse:\n    sys.modules[__name__] = LazyModule(__name__, _import_structure)\n`;
    const { code, report, dir } = await pull(
      {
        'lib/__init__.py': '',
        'lib/lazy.py':
          'import os\nSLOW_IMPORT = os.environ.get("SLOW", "") == "1"\n\nclass LazyModule:\n    def __init__(self, name, structure):\n        raise RuntimeError("the package machinery must not be pulled")\n',
        'lib/acts/__init__.py': lazyInit('{"gelu": ["GELU", "get_act"]}', 'if TYPE_CHECKING:\n    from .gelu import GELU, get_act'),
        'lib/acts/gelu.py': 'class GELU:\n    def __call__(self, x):\n        return x * 2\n\ndef get_act(name):\n    return GELU()\n',
        'lib/norms/__init__.py': lazyInit('{"rms": ["RMS"]}', 'if TYPE_CHECKING or SLOW_IMPORT:\n    from .rms import RMS'),
        'lib/norms/rms.py': 'class RMS:\n    def __call__(self, x):\n        return x + 1\n',
        'lib/block.py':
          'from .acts import get_act\nfrom .norms import RMS\n\nclass Block:\n    def __init__(self):\n        self.act, self.norm = get_act("gelu"), RMS()\n    def run(self, x):\n        return self.norm(self.act(x))\n',
      },
      'lib.block.Block',
    );
    assert.strictEqual(report.status, 'extracted', JSON.stringify(report.problems));
    assert.strictEqual(run(dir, "print(ns['Block']().run(5))"), '11');
    assert.doesNotMatch(code, /LazyModule|_import_structure|SLOW_IMPORT/, 'the lazy machinery was pulled');
  });

  it('leaves out a registration when nothing in the file builds from the registry, and keeps it when something does', async () => {
    const files = {
      'reg/__init__.py': '',
      'reg/registry.py':
        'class Registry:\n    def __init__(self, name):\n        self.name, self.items = name, {}\n    def register_module(self, name=None):\n        def wrap(cls):\n            self.items[name or cls.__name__] = cls\n            return cls\n        return wrap\n    def build(self, cfg):\n        cfg = dict(cfg)\n        return self.items[cfg.pop("type")](**cfg)\n\nMODELS = Registry("models")\n',
      'reg/blocks.py':
        'from .registry import MODELS\n\n\n@MODELS.register_module()\nclass Inner:\n    def __init__(self, k=2):\n        self.k = k\n\n\n@MODELS.register_module(name="Plain")\nclass Plain:\n    def run(self, x):\n        return x + 1\n\n\n@MODELS.register_module()\nclass Outer:\n    def __init__(self):\n        self.inner = MODELS.build(dict(type="Inner", k=5))\n    def run(self, x):\n        return x * self.inner.k\n',
    };
    const plain = await pull(files, 'reg.blocks.Plain');
    assert.strictEqual(plain.report.status, 'extracted');
    assert.doesNotMatch(plain.code, /class Registry|^from \.registry|^MODELS/m, 'the registry came with a block that does not build from it');
    assert.match(
      plain.code,
      /# @MODELS\.register_module\(name="Plain"\): registration left out by NN-RAG \(nothing here builds from MODELS; registered in reg\.blocks\)\nclass Plain:/,
    );
    assert.strictEqual(run(plain.dir, "print(ns['Plain']().run(1))"), '2');
    const outer = await pull(files, 'reg.blocks.Outer');
    assert.strictEqual(outer.report.status, 'extracted');
    assert.match(outer.code, /class Registry/);
    assert.match(outer.code, /^@MODELS\.register_module\(\)\nclass Inner/m, 'a class the file builds by name keeps its registration');
    assert.strictEqual(run(outer.dir, "print(ns['Outer']().run(3))"), '15');
  });

  it('keeps the functions a needed registry gets by decorator: they are looked up by key, never by name', async () => {
    const { code, report, dir } = await pull(
      {
        'disp/__init__.py': '',
        'disp/dispatch.py':
          'import enum\n\n\nclass Backend(str, enum.Enum):\n    NATIVE = "native"\n    MATH = "math"\n\n\nclass _Registry:\n    _backends = {}\n\n    @classmethod\n    def register(cls, name):\n        def put(fn):\n            cls._backends[name] = fn\n            return fn\n        return put\n\n\n@_Registry.register(Backend.NATIVE)\ndef _native(x):\n    return x + 1\n\n\n@_Registry.register(Backend.MATH)\ndef _math(x):\n    return x * 10\n\n\ndef unused_helper():\n    return 0\n\n\ndef dispatch(x, backend=Backend.NATIVE):\n    return _Registry._backends[backend](x)\n',
        'disp/block.py': 'from .dispatch import dispatch\n\n\nclass Block:\n    def run(self, x):\n        return dispatch(x)\n',
        'other/__init__.py': '',
        'other/plain.py': 'def helper(x):\n    return x\n\n\nclass Plain:\n    def run(self, x):\n        return helper(x)\n',
      },
      'disp.block.Block',
    );
    assert.strictEqual(report.status, 'extracted');
    assert.match(code, /^@_Registry\.register\(Backend\.NATIVE\)\ndef _native\(x\):/m);
    assert.match(code, /^@_Registry\.register\(Backend\.MATH\)\ndef _math\(x\):/m);
    assert.doesNotMatch(code, /unused_helper/);
    assert.strictEqual(run(dir, "print(ns['Block']().run(4))"), '5');
  });

  it('inlines an indexed repository the interpreter cannot import, imports one it can, and says which', async () => {
    const dir = await tmpdir();
    await writeTree(path.join(dir, 'helperlib'), { 'helperlib/__init__.py': '', 'helperlib/ops.py': 'def double(x):\n    return 2 * x\n' });
    // a repository whose package the interpreter has (the standard library's `json`): it stays an import
    await writeTree(path.join(dir, 'jsonfork'), { 'json/__init__.py': 'def dumps(x):\n    return "fork"\n' });
    await writeTree(path.join(dir, 'app'), {
      'app/__init__.py': '',
      'app/block.py': 'from helperlib.ops import double\nfrom json import dumps\n\nclass Block:\n    def run(self, x):\n        return dumps(double(x))\n',
    });
    const db = await memoryDb();
    for (const r of ['helperlib', 'jsonfork', 'app']) await indexFolder(db, path.join(dir, r));
    const session = openPullSession(db, loadModuleTable(db));
    const out = path.join(dir, 'out', 'pulled.py');
    const report = await pullBlock(session, findTarget(db, 'app.block.Block'), { parser: await parser(), out, validate: false, python: 'python3' });
    const code = await fsp.readFile(out, 'utf8');
    assert.deepStrictEqual(report.inlinedRepos, ['helperlib']);
    assert.match(code, /^# also inlined: code of helperlib \(indexed, and not importable by python3\)$/m);
    assert.match(code, /^def double\(x\):/m);
    assert.match(code, /^from json import dumps$/m);
    assert.strictEqual(run(dir, "print(ns['Block']().run(4))"), '8');
    const none = await pullBlock(session, findTarget(db, 'app.block.Block'), {
      parser: await parser(),
      out,
      validate: false,
      python: 'python3',
      inline: 'none',
      force: true,
    });
    assert.strictEqual(none.inlinedRepos, undefined);
    assert.match(await fsp.readFile(out, 'utf8'), /^from helperlib\.ops import double$/m);
  });

  it('compares a block that inlines another indexed repository with its original, which imports that repository from its folder', async () => {
    const dir = await tmpdir();
    await writeTree(path.join(dir, 'baselib'), {
      'baselib/__init__.py': '',
      'baselib/layers.py':
        'from torch import nn\n\n\nclass Scale(nn.Module):\n    def __init__(self, k=3.0):\n        super().__init__()\n        self.k = k\n\n    def forward(self, x):\n        return x * self.k\n',
    });
    await writeTree(path.join(dir, 'model'), {
      'model/__init__.py': '',
      'model/block.py':
        'from torch import nn\n\nfrom baselib.layers import Scale\n\n\nclass Block(nn.Module):\n    def __init__(self, dim=4):\n        super().__init__()\n        self.lin = nn.Linear(dim, dim)\n        self.scale = Scale()\n\n    def forward(self, x):\n        return self.scale(self.lin(x))\n',
    });
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', path.join(dir, 'baselib'), path.join(dir, 'model'), '--db', db)).code, 0);
    const r = await cli('pull', 'model.block.Block', '--db', db, '--out', path.join(dir, 'out', 'block.py'), '--python', PYTHON_WITH_TORCH, '--json');
    const report = JSON.parse(r.out);
    assert.deepStrictEqual(report.inlinedRepos, ['baselib']);
    assert.strictEqual(report.tier, 'equivalent', r.out);
    // and validate FILE finds the same folders from the file's provenance
    const again = JSON.parse((await cli('validate', path.join(dir, 'out', 'block.py'), '--db', db, '--python', PYTHON_WITH_TORCH, '--json')).out);
    assert.strictEqual(again.tier, 'equivalent', JSON.stringify(again));
  });

  it("validate FILE puts on the original's path the repositories its pull did, also one the file names nothing of (a package's __init__ that imports it and registers the block's parts)", async () => {
    const dir = await tmpdir();
    const registry =
      'class Registry:\n    def __init__(self):\n        self.items = {}\n\n    def register_module(self):\n        def wrap(cls):\n            self.items[cls.__name__] = cls\n            return cls\n        return wrap\n\n    def build(self, cfg):\n        cfg = dict(cfg)\n        return self.items[cfg.pop("type")](**cfg)\n\n\nMODELS = Registry()\n';
    await writeTree(path.join(dir, 'checklib'), { 'checklib/__init__.py': 'VERSION = "1.0"\n' });
    await writeTree(path.join(dir, 'model'), {
      // as OpenMMLab's packages do: the package checks another library's version and registers its layers on import
      'model/__init__.py': 'import checklib\n\nfrom . import losses  # noqa: F401\n\nassert checklib.VERSION\n',
      'model/registry.py': registry,
      'model/losses.py':
        'from torch import nn\n\nfrom .registry import MODELS\n\n\n@MODELS.register_module()\nclass Scale(nn.Module):\n    def forward(self, x):\n        return x * 3\n',
      'model/block.py':
        'from torch import nn\n\nfrom .registry import MODELS\n\n\nclass Block(nn.Module):\n    def __init__(self, dim=4, act=dict(type="Scale")):\n        super().__init__()\n        self.lin = nn.Linear(dim, dim)\n        self.act = MODELS.build(act)\n\n    def forward(self, x):\n        return self.act(self.lin(x))\n',
    });
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', path.join(dir, 'checklib'), path.join(dir, 'model'), '--db', db)).code, 0);
    const out = path.join(dir, 'out', 'block.py');
    const r = await cli('pull', 'model.block.Block', '--db', db, '--out', out, '--python', PYTHON_WITH_TORCH, '--json');
    const report = JSON.parse(r.out) as { tier: string; inlinedRepos?: string[] };
    assert.strictEqual(report.tier, 'equivalent', r.out);
    assert.strictEqual(report.inlinedRepos, undefined, 'the file holds nothing of checklib');
    // without checklib on its path, the original's package __init__ fails, it is imported without it, and its
    // registry lacks Scale: the original would not build and nothing would be compared
    const again = JSON.parse((await cli('validate', out, '--db', db, '--python', PYTHON_WITH_TORCH, '--json')).out) as { tier: string };
    assert.strictEqual(again.tier, 'equivalent', JSON.stringify(again));
  });

  it('a name registered in a library the file inlines is found by string: in the code, and in the config dict a test built the block with', async () => {
    const dir = await tmpdir();
    const registry =
      'class Registry:\n    def __init__(self):\n        self.items = {}\n\n    def register_module(self, name=None, module=None):\n        if module is not None:\n            self.items[name or module.__name__] = module\n            return module\n\n        def wrap(cls):\n            self.items[name or cls.__name__] = cls\n            return cls\n        return wrap\n\n    def build(self, cfg):\n        cfg = dict(cfg)\n        return self.items[cfg.pop("type")](**cfg)\n\n\nMODELS = Registry()\n';
    await writeTree(path.join(dir, 'fwlib'), {
      // the library registers its layers when it is imported, as OpenMMLab's do
      'fwlib/__init__.py': 'from . import acts, norms  # noqa: F401\n',
      // torch's own layers registered under names: by a positional name in a guarded block, and in a loop
      'fwlib/norms.py':
        'import torch\nfrom torch import nn\n\nfrom .registry import MODELS\n\nif torch.__version__ >= "1":\n    MODELS.register_module("LN", module=nn.LayerNorm)\nelse:\n    MODELS.register_module("LN", module=nn.Identity)\n\nfor layer in [nn.ReLU, nn.GELU]:\n    MODELS.register_module(module=layer)\n\n\ndef unrelated():\n    return 1\n',
      'fwlib/registry.py': registry,
      'fwlib/acts.py':
        'import torch\nfrom torch import nn\n\nfrom .registry import MODELS\n\n\n@MODELS.register_module()\nclass Swish(nn.Module):\n    def forward(self, x):\n        return x * torch.sigmoid(x)\n\n\n@MODELS.register_module(name="Cube")\nclass CubeAct(nn.Module):\n    def forward(self, x):\n        return x ** 3\n',
    });
    await writeTree(path.join(dir, 'app'), {
      'app/__init__.py': '',
      'app/block.py':
        'from torch import nn\n\nfrom fwlib.registry import MODELS\n\n\nclass Block(nn.Module):\n    def __init__(self, dim=4, act_cfg=dict(type="Swish"), norm_cfg=dict(type="LN"), out_act="GELU"):\n        super().__init__()\n        self.lin = nn.Linear(dim, dim)\n        self.act = MODELS.build(act_cfg)\n        self.norm = MODELS.build(dict(norm_cfg, normalized_shape=dim))\n        self.out = MODELS.build(dict(type=out_act))\n\n    def forward(self, x):\n        return self.out(self.norm(self.act(self.lin(x))))\n',
      'tests/test_block.py':
        'import torch\n\nfrom app.block import Block\n\n\ndef test_cube():\n    block = Block(dim=3, act_cfg=dict(type="Cube"))\n    assert block(torch.randn(2, 3)).shape == (2, 3)\n',
    });
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', path.join(dir, 'fwlib'), path.join(dir, 'app'), '--db', db)).code, 0);
    assert.strictEqual((await cli('observe', 'app', '--db', db, '--python', PYTHON_WITH_TORCH)).code, 0);
    const out = path.join(dir, 'out', 'block.py');
    const r = await cli('pull', 'app.block.Block', '--db', db, '--out', out, '--python', PYTHON_WITH_TORCH, '--json');
    const report = JSON.parse(r.out) as { tier: string; inlinedRepos: string[]; validation: { observed?: string } };
    assert.deepStrictEqual(report.inlinedRepos, ['fwlib']);
    const code = await fsp.readFile(out, 'utf8');
    // "Swish" in the block's own default, "Cube" only in the config dict its test built it with
    assert.match(code, /^@MODELS\.register_module\(\)\nclass Swish\(nn\.Module\):/m);
    assert.match(code, /^@MODELS\.register_module\(name="Cube"\)\nclass CubeAct\(nn\.Module\):/m);
    assert.match(code, /^if torch\.__version__ >= "1":\n    MODELS\.register_module\("LN", module=nn\.LayerNorm\)/m);
    assert.match(code, /^for layer in \[nn\.ReLU, nn\.GELU\]:\n    MODELS\.register_module\(module=layer\)/m);
    assert.doesNotMatch(code, /def unrelated/);
    assert.strictEqual(report.tier, 'equivalent', r.out);
    assert.strictEqual(report.validation.observed, 'tests/test_block.py::test_cube');
  });

  it('a name the original module reads and never defines (its own bug) is left as it is, and the block is still judged', async () => {
    const dir = await tmpdir();
    await writeTree(path.join(dir, 'buggy'), {
      'buggy/__init__.py': '',
      'buggy/layers.py':
        'from torch import nn\n\n\nclass Block(nn.Module):\n    def __init__(self, dim=4):\n        super().__init__()\n        self.lin = nn.Linear(dim, dim)\n\n    def forward(self, x, sparse=False):\n        if sparse:\n            return x[:n_i]\n        return self.lin(x)\n',
    });
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', path.join(dir, 'buggy'), '--db', db)).code, 0);
    const r = await cli('pull', 'buggy.layers.Block', '--db', db, '--out', path.join(dir, 'out', 'block.py'), '--python', PYTHON_WITH_TORCH, '--json');
    const report = JSON.parse(r.out);
    assert.strictEqual(report.tier, 'equivalent', r.out);
    assert.deepStrictEqual(report.validation.upstream_undefined, ['n_i']);
    assert.match(report.message, /name 'n_i' is not defined/);
  });

  it("feeds a block the inputs the repository's own test builds and calls it with (a mask as booleans, by keyword)", async () => {
    const dir = await tmpdir();
    await writeTree(path.join(dir, 'geo'), {
      'geo/__init__.py': '',
      'geo/layers.py':
        'import torch\nfrom torch import nn\n\n\nclass PointBlock(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n        self.lin = nn.Linear(dim + 3, dim)\n\n    def forward(self, feats, coors, edges=None, mask=None):\n        assert coors.shape[-1] == 3 and mask.dtype == torch.bool\n        out = self.lin(torch.cat([feats, coors], dim=-1))\n        return out.masked_fill(~mask[..., None], 0.0)\n',
      'tests/test_layers.py':
        'import torch\n\nfrom geo.layers import PointBlock\n\n\ndef test_point_block():\n    layer = PointBlock(dim=16)\n    feats = torch.randn(1, 7, 16)\n    coors = torch.randn(1, 7, 3)\n    mask = torch.ones(1, 7).bool()\n    out = layer(feats, coors, mask=mask)\n    assert out.shape == (1, 7, 16)\n',
    });
    const db = path.join(dir, 'index.db');
    assert.strictEqual((await cli('index', path.join(dir, 'geo'), '--db', db)).code, 0);
    const r = await cli('pull', 'geo.layers.PointBlock', '--db', db, '--out', path.join(dir, 'out', 'point.py'), '--python', PYTHON_WITH_TORCH, '--json');
    const report = JSON.parse(r.out);
    assert.strictEqual(report.tier, 'equivalent', r.out);
    assert.deepStrictEqual(report.validation.input_shapes.slice(0, 2), [
      [1, 7, 16],
      [1, 7, 3],
    ]);
  });

  it('orders a statement that runs at import after what the functions it calls read (Hugging Face activations)', async () => {
    const { report, dir } = await pull(
      {
        'hf/__init__.py': '',
        'hf/acts.py':
          'class GELU:\n    def __call__(self, x):\n        return x * 3\n\n\nclass ClassInstantier(dict):\n    def __getitem__(self, key):\n        return super().__getitem__(key)()\n\n\ndef get_activation(name):\n    return ACT2FN[name]\n\n\nACT2CLS = {"gelu": GELU}\nACT2FN = ClassInstantier(ACT2CLS)\ngelu = get_activation("gelu")\n',
        'hf/block.py': 'from .acts import gelu\n\nclass Block:\n    def run(self, x):\n        return gelu(x)\n',
      },
      'hf.block.Block',
    );
    assert.strictEqual(report.status, 'extracted');
    assert.strictEqual(run(dir, "print(ns['Block']().run(2))"), '6');
  });

  it("writes a minimal registry and logger in place of a framework's, with the registrations the file's modules make", async () => {
    const { code, report, dir } = await pull(
      {
        ...FRAMEWORK,
        'fw/registry/registry.py':
          'from ..heavy import Config, print_log\nfrom .build_functions import build_from_cfg\n\nclass Registry:\n    def __init__(self, name, build_func=None, parent=None, scope=None, locations=None):\n        self.cfg = Config(name)\n    def register_module(self, name=None, force=False, module=None):\n        print_log(name)\n    def get(self, key):\n        return print_log(key)\n    def build(self, cfg):\n        return build_from_cfg(cfg, self)\n',
        'fw/registry/root.py': 'from .registry import Registry\n\nMODELS = Registry("model")\n',
        'fw/norm.py':
          'from .registry.root import MODELS\n\nclass Norm:\n    def __init__(self, eps=0.1):\n        self.eps = eps\n\nMODELS.register_module("N", module=Norm)\n\ndef build_norm(cfg):\n    return MODELS.build(cfg)\n',
        'fw/logging/__init__.py': 'from .logger import MMLogger, print_log\n',
        'fw/logging/logger.py':
          'import logging\nfrom ..heavy import colored\n\nclass MMLogger(logging.Logger):\n    @classmethod\n    def get_current_instance(cls):\n        return colored(cls)\n\ndef print_log(msg, logger=None, level=logging.INFO):\n    colored(msg)\n',
        'fw/block.py':
          'from .norm import build_norm\nfrom .logging import MMLogger, print_log\n\nclass Block:\n    def __init__(self):\n        self.norm = build_norm(dict(type="N", eps=0.5))\n        print_log("built", logger="current")\n        self.logger = MMLogger.get_current_instance()\n    def run(self):\n        return self.norm.eps\n',
      },
      'fw.block.Block',
    );
    assert.strictEqual(report.status, 'extracted', JSON.stringify(report.problems));
    assert.match(code, /A minimal registry written by NN-RAG in place of fw\.registry\.registry\.Registry/);
    assert.match(code, /A minimal build_from_cfg written by NN-RAG/);
    assert.match(code, /A minimal print_log written by NN-RAG in place of fw\.logging\.logger\.print_log/);
    assert.match(code, /class MMLogger:\n    """A minimal stand-in written by NN-RAG/);
    assert.doesNotMatch(code, /heavy_build|colored|Config\(/, "the framework's machinery was pulled");
    assert.match(code, /^MODELS\.register_module\("N", module=Norm\)$/m);
    assert.strictEqual(run(dir, "print(ns['Block']().run())"), '0.5');
    // a child registry is among its parent's children, as code that walks the registry tree reads them
    assert.strictEqual(
      run(dir, "child = ns['Registry']('model', parent=ns['MODELS'], scope='mine')\nprint(ns['MODELS'].children['mine'] is child, child.children)"),
      'True {}',
    );
  });

  it("writes a minimal PretrainedInit and master_only in place of a framework's checkpoint and distributed machinery", async function () {
    const { code, report, dir } = await pull(
      {
        ...FRAMEWORK,
        'fw/registry/registry.py':
          'from ..heavy import Config\nfrom .build_functions import build_from_cfg\n\nclass Registry:\n    def __init__(self, name, build_func=None, parent=None, scope=None, locations=None):\n        self.cfg = Config(name)\n    def register_module(self, name=None, force=False, module=None):\n        return Config(name)\n    def get(self, key):\n        return Config(key)\n    def build(self, cfg):\n        return build_from_cfg(cfg, self)\n',
        'fw/registry/root.py': 'from .registry import Registry\n\nWEIGHT_INITIALIZERS = Registry("weight initializer")\n',
        'fw/runner/__init__.py': '',
        'fw/runner/checkpoint.py': 'from ..heavy import *\n\ndef load_checkpoint(module, filename, **kwargs):\n    return heavy_load(module, filename)\n',
        'fw/dist/__init__.py': 'from .utils import master_only\n',
        'fw/dist/utils.py':
          'from ..heavy import *\n\ndef master_only(func):\n    def wrapper(*args, **kwargs):\n        if heavy_rank() == 0:\n            return func(*args, **kwargs)\n    return wrapper\n',
        'fw/model/__init__.py': '',
        'fw/model/weight_init.py':
          'from ..registry import build_from_cfg\nfrom ..registry.root import WEIGHT_INITIALIZERS\n\n\ndef initialize(module, init_cfg):\n    build_from_cfg(init_cfg, WEIGHT_INITIALIZERS)(module)\n\n\n@WEIGHT_INITIALIZERS.register_module(name="Pretrained")\nclass PretrainedInit:\n    def __init__(self, checkpoint, prefix=None, map_location="cpu"):\n        self.checkpoint = checkpoint\n\n    def __call__(self, module):\n        from ..runner.checkpoint import load_checkpoint\n        load_checkpoint(module, self.checkpoint)\n',
        'fw/net.py':
          'from torch import nn\nfrom .dist import master_only\nfrom .model.weight_init import initialize\n\n\nclass Net(nn.Module):\n    def __init__(self, init_cfg=None):\n        super().__init__()\n        self.fc = nn.Linear(2, 2)\n        self.init_cfg = init_cfg\n\n    def init_weights(self):\n        if self.init_cfg and self.init_cfg["type"] == "Pretrained":\n            initialize(self, self.init_cfg)\n        self.dump()\n\n    @master_only\n    def dump(self):\n        self.dumped = True\n\n    def forward(self, x):\n        return self.fc(x)\n',
      },
      'fw.net.Net',
    );
    assert.strictEqual(report.status, 'extracted', JSON.stringify(report.problems));
    assert.match(
      code,
      /^@WEIGHT_INITIALIZERS\.register_module\(name="Pretrained"\)\nclass PretrainedInit:\n {4}"""A minimal PretrainedInit written by NN-RAG in place of fw\.model\.weight_init\.PretrainedInit/m,
    );
    assert.match(code, /^def master_only\(func\):\n {4}"""A minimal master_only written by NN-RAG in place of fw\.dist\.utils\.master_only/m);
    assert.doesNotMatch(code, /heavy_|load_checkpoint|Config\(/, "the framework's machinery was pulled");
    // the registry is made before the class registers into it
    assert.ok(code.indexOf('WEIGHT_INITIALIZERS = Registry(') < code.indexOf('@WEIGHT_INITIALIZERS.register_module'));
    if (!hasTorch()) this.skip(); // the rest runs the file with torch
    const script = [
      'import runpy, sys, torch',
      `ns = runpy.run_path(${JSON.stringify(path.join(dir, 'out', 'pulled.py'))})`,
      `ckpt = ${JSON.stringify(path.join(dir, 'ckpt.pth'))}`,
      'torch.save({"state_dict": {"module.fc.weight": torch.ones(2, 2), "module.fc.bias": torch.zeros(2)}}, ckpt)',
      'net = ns["Net"](dict(type="Pretrained", checkpoint=ckpt))',
      'net.init_weights()',
      'print(net.fc.weight.sum().item(), net.dumped)',
    ].join('\n');
    assert.strictEqual(execFileSync(PYTHON_WITH_TORCH, ['-I', '-c', script], { cwd: dir, encoding: 'utf8' }).trim(), '4.0 True');
  });

  it("keeps only the methods of a framework's base class that the block reaches, by name, and says what it left out", async () => {
    const files = {
      'fw/__init__.py': '',
      'fw/heavy.py': 'raise RuntimeError("a method nothing reaches pulled its dependencies in")\n',
      'fw/base.py': [
        'from .heavy import load_checkpoint, init_cfg_apply',
        'from .util import scale',
        '',
        'class Base:',
        '    """A framework base."""',
        '    alias = "helper"',
        '    def __init__(self, k=2):',
        '        self.k = unwrap(k)',
        '    def helper(self, x):',
        '        return scale(x, self.k)',
        '    @property',
        '    def twice(self):',
        '        return self.k * 2',
        '    def init_weights(self):',
        '        init_cfg_apply(self)',
        '    @classmethod',
        '    def from_pretrained(cls, path):',
        '        return load_checkpoint(cls, path)',
        '    def by_string(self):',
        '        return self.k + 1',
        '    def __repr__(self):',
        '        return f"Base({self.k})"',
        '',
        'class Only:',
        '    def unused(self):',
        '        return load_checkpoint(self)',
        '',
        '# only tested against: an empty stand-in, without what its body needs',
        'class Wrapper:',
        '    def __init__(self, module):',
        '        self.module = load_checkpoint(module)',
        '',
        'def unwrap(m) -> Base:',
        '    return m.module if isinstance(m, (list, Wrapper)) else m',
        '',
        '# `self.init_weights()` here reaches its own method, not the one of an unrelated class',
        'class Other:',
        '    def __init__(self):',
        '        self.init_weights()',
        '    def init_weights(self):',
        '        self.ready = scale(1, 1)',
        '',
      ].join('\n'),
      'fw/util.py': 'def scale(x, k):\n    return x * k\n',
      'fw/block.py': [
        'from .base import Base, Only, Other',
        '',
        'class Block(Base):',
        '    def __init__(self):',
        '        super().__init__(3)',
        '        self.only = Only()',
        '        self.other = Other()',
        '    def run(self, x):',
        '        return self.helper(x) + self.twice + getattr(self, "by_string")()',
        '    def never_called_but_kept(self):',
        '        return self.k',
        '',
      ].join('\n'),
    };
    const { code, report, dir } = await pull(files, 'fw.block.Block');
    assert.strictEqual(report.status, 'extracted', JSON.stringify(report.problems));
    assert.doesNotMatch(code, /load_checkpoint|init_cfg_apply|def from_pretrained|def unused/, 'a method nothing reaches was kept');
    assert.match(code, /class Wrapper:\n {4}"""A stand-in written by NN-RAG for fw\.base\.Wrapper/);
    assert.strictEqual(code.match(/def init_weights/g)?.length, 1, "only Other's init_weights is reached");
    for (const kept of ['def helper', 'def twice', 'def by_string', 'def __repr__', 'def never_called_but_kept', 'def scale'])
      assert.ok(code.includes(kept), `${kept} is missing`);
    assert.match(code, /# NN-RAG left out methods nothing in this file reaches: init_weights, from_pretrained/);
    // a class left with no statement still has a body
    assert.match(code, /class Only:\n {4}# NN-RAG left out a method nothing in this file reaches: unused\n {4}pass\n/);
    assert.strictEqual(run(dir, "b = ns['Block'](); print(b.run(2), repr(b), b.other.ready)"), '16 Base(3) 1');
  });

  it('writes stand-ins for names only tested against or only named in annotations, and keeps what the file makes', async () => {
    const { code, report, dir } = await pull(
      {
        'pk/__init__.py': '',
        'pk/heavy.py': 'raise RuntimeError("a class only tested against pulled its body in")\n',
        'pk/procs.py': [
          'from .heavy import machinery',
          '',
          'class P1:',
          '    def __init__(self):',
          '        self.m = machinery()',
          '',
          'class P2:',
          '    kind = "two"',
          '',
          'class P3:',
          '    def __init__(self):',
          '        self.m = machinery()',
          '',
          'PROCS = (P1, P2)',
          'Proc = P1 | P2 | P3',
          '',
        ].join('\n'),
        'pk/block.py': [
          'from .procs import PROCS, Proc, P2, P3',
          '',
          'class Block:',
          '    def __init__(self):',
          '        self.p = P2()',
          '    def set(self, p: Proc | None = None, q: "int" = 1) -> Proc:',
          '        return p',
          '    def check(self, p):',
          '        return p.__class__ in PROCS and not isinstance(p, P3)',
          '',
        ].join('\n'),
      },
      'pk.block.Block',
    );
    assert.strictEqual(report.status, 'extracted', JSON.stringify(report.problems));
    assert.doesNotMatch(code, /machinery/);
    assert.match(code, /^class P1:\n {4}"""A stand-in written by NN-RAG for pk\.procs\.P1/m);
    assert.match(code, /^class P3:\n {4}"""A stand-in written by NN-RAG for pk\.procs\.P3/m);
    assert.match(code, /^class P2:\n {4}kind = "two"/m);
    assert.match(code, /^Proc = object {2}# a stand-in written by NN-RAG for pk\.procs\.Proc/m);
    assert.strictEqual(run(dir, "b = ns['Block'](); print(b.check(b.p), b.set(3))"), 'True 3');
  });

  it("keeps a class named only in the block's own constructor annotations: it is what a user builds the block with", async () => {
    const { code, report, dir } = await pull(
      {
        'pk/__init__.py': '',
        'pk/cfg.py': 'class BlockConfig:\n    def __init__(self, stride):\n        self.stride = stride\n\nclass Other:\n    pass\n',
        'pk/block.py': [
          'from .cfg import BlockConfig, Other',
          '',
          'class Block:',
          '    def __init__(self, cnf: BlockConfig):',
          '        self.stride = cnf.stride',
          '    def helper(self, o: Other) -> Other:',
          '        return o',
          '',
        ].join('\n'),
      },
      'pk.block.Block',
    );
    assert.strictEqual(report.status, 'extracted', JSON.stringify(report.problems));
    assert.match(code, /^class BlockConfig:\n {4}def __init__\(self, stride\):/m);
    assert.match(code, /^class Other:\n {4}"""A stand-in written by NN-RAG for pk\.cfg\.Other/m);
    assert.strictEqual(run(dir, "print(ns['Block'](ns['BlockConfig'](2)).stride)"), '2');
  });

  it("names a block defined under an `if` (mmcv's `if IS_MLU_AVAILABLE: class ..._MLU`) in the header, so a pull again replaces its own file", async () => {
    const { report, dir } = await pull(
      {
        'pk/__init__.py': '',
        'pk/ops.py':
          'from torch import nn\n\nHAS_DEVICE = True\n\nif HAS_DEVICE:\n    def helper(x):\n        return x\n\n    class DeviceConv(nn.Module):\n        def forward(self, x):\n            return helper(x)\n',
      },
      'pk.ops.DeviceConv',
    );
    assert.strictEqual(report.status, 'extracted', JSON.stringify(report.problems));
    const out = path.join(dir, 'out', 'pulled.py');
    assert.strictEqual(readProvenance(await fsp.readFile(out, 'utf8'))?.block, 'DeviceConv');
    // the file is NN-RAG's own: a second pull over it is not refused
    const db = await memoryDb();
    await indexFolder(db, path.join(dir, 'repo'));
    const again = await pullBlock(openPullSession(db, loadModuleTable(db)), findTarget(db, 'pk.ops.DeviceConv'), {
      parser: await parser(),
      out,
      validate: false,
    });
    assert.strictEqual(again.status, 'extracted');
  });

  it('derives a class from the binding before it when it takes the name it derives from (class Output(Output))', async () => {
    const { code, report, dir } = await pull(
      {
        'pk/__init__.py': '',
        'pk/outputs.py': 'class Output:\n    def __init__(self, sample):\n        self.sample = sample\n',
        'pk/legacy.py':
          'from .outputs import Output\n\n\nclass Output(Output):\n    def __init__(self, *args, **kwargs):\n        super().__init__(*args, **kwargs)\n        self.legacy = True\n',
        'pk/block.py': 'from .legacy import Output\n\nclass Block:\n    def run(self, x):\n        return Output(sample=x)\n',
      },
      'pk.block.Block',
    );
    assert.strictEqual(report.status, 'extracted', JSON.stringify(report.problems));
    assert.match(code, /^class Output_legacy\(Output\):$/m);
    assert.strictEqual(run(dir, "o = ns['Block']().run(4); print(o.sample, o.legacy)"), '4 True');
  });

  it('binds a repository module imported inside a function as an object to the attributes the function reads', async () => {
    const { code, report, dir } = await pull(
      {
        'pk/__init__.py': '',
        'pk/models/__init__.py': '',
        'pk/models/auto.py': 'SCALE = 3\n\ndef make(x):\n    return x * SCALE\n\ndef unused():\n    raise RuntimeError("not read through the module")\n',
        'pk/block.py':
          'class Block:\n    def run(self, x):\n        import pk.models.auto as auto_module\n        return auto_module.make(x) + auto_module.SCALE\n',
      },
      'pk.block.Block',
    );
    assert.strictEqual(report.status, 'extracted', JSON.stringify(report.problems));
    assert.match(code, /auto_module = __import__\("types"\)\.SimpleNamespace\(make=make, SCALE=SCALE\)/);
    assert.doesNotMatch(code, /def unused/);
    assert.strictEqual(run(dir, "print(ns['Block']().run(2))"), '9');
  });

  it('keeps what a block uses of an installed package as imports (only its own module inlined), unless --inline', async function () {
    this.timeout(120_000);
    const dir = await tmpdir();
    const db = path.join(dir, 'tv.db');
    const idx = await cli('index', '--python-env', PYTHON_WITH_TORCH, '--packages', 'torchvision', '--db', db);
    assert.strictEqual(idx.code, 0, idx.err);
    const out = path.join(dir, 'ir.py');
    const target = 'torchvision.models.mobilenetv2.InvertedResidual';
    assert.strictEqual((await cli('pull', target, '--db', db, '--out', out, '--python', PYTHON_WITH_TORCH, '--no-validate')).code, 0);
    const kept = await fsp.readFile(out, 'utf8');
    assert.match(kept, /^from torchvision\.ops\.misc import Conv2dNormActivation$/m);
    assert.doesNotMatch(kept, /^class Conv2dNormActivation/m);
    assert.strictEqual((await cli('pull', target, '--db', db, '--out', out, '--python', PYTHON_WITH_TORCH, '--no-validate', '--inline')).code, 0);
    assert.match(await fsp.readFile(out, 'utf8'), /^class Conv2dNormActivation/m);
  });

  it("imports an indexed torch's own code rather than inlining it, without --python too, and the compiled names its source lacks", async function () {
    // before: pulled without --python, torch's LayerNorm was 18,680 lines of torch's internals that failed on 100
    // compiled names (`torch.Size`, `torch._C`...); with --python, `from torch import Size` was a native-extension problem
    this.timeout(120_000);
    const dir = await tmpdir();
    const db = path.join(dir, 'torch.db');
    const idx = await cli('index', '--python-env', PYTHON_WITH_TORCH, '--packages', 'torch', '--db', db);
    assert.strictEqual(idx.code, 0, idx.err);
    // and torch's sources indexed as a folder (the bench's corpus): its LayerNorm was 18,680 lines there too
    const folderDb = path.join(dir, 'torch-folder.db');
    const torchDir = execFileSync(PYTHON_WITH_TORCH, ['-c', 'import torch, os; print(os.path.dirname(torch.__file__))'], { encoding: 'utf8' }).trim();
    const folder = await cli('index', torchDir, '--db', folderDb);
    assert.strictEqual(folder.code, 0, folder.err);
    for (const [extra, index] of [
      [[], db],
      [['--python', PYTHON_WITH_TORCH], db],
      [[], folderDb],
    ] as [string[], string][]) {
      const out = path.join(dir, `ln${extra.length}${index === db ? '' : 'f'}.py`);
      const r = await cli('pull', 'torch.nn.modules.normalization.LayerNorm', '--db', index, '--out', out, '--no-validate', '--json', ...extra);
      assert.strictEqual(r.code, 0, r.out + r.err);
      assert.deepStrictEqual(JSON.parse(r.out).problems, []);
      const text = await fsp.readFile(out, 'utf8');
      assert.match(text, /^from torch import Size$/m);
      assert.match(text, /^from torch\.nn\.modules\.module import Module$/m);
      assert.doesNotMatch(text, /^class Module/m);
    }
  });

  it('renames a third-party import kept under a guard when its name collides (every binding, every branch)', async () => {
    const guarded = (value: string): string => `try:\n    import json\nexcept ImportError:\n    json = None\n\n\ndef f():\n    return ${value}\n`;
    const { report, dir } = await pull(
      {
        'g/__init__.py': '',
        'g/a.py': 'json = "not the module"\n\n\ndef f():\n    return json\n',
        'g/b.py': guarded('json.dumps([1])'),
        'g/block.py': 'from .a import f as fa\nfrom .b import f as fb\n\nclass Block:\n    def run(self):\n        return fa() + fb()\n',
      },
      'g.block.Block',
    );
    assert.strictEqual(report.status, 'extracted');
    assert.strictEqual(run(dir, "print(ns['Block']().run())"), 'not the module[1]');
  });

  it('orders definition-time needs first: bases, decorators, defaults, class bodies', async () => {
    const { code, dir } = await pull(
      {
        'lib/__init__.py': '',
        'lib/deco.py': 'REG = []\ndef register(cls):\n    REG.append(cls.__name__)\n    return cls\n',
        'lib/base.py': 'from .consts import WIDTH\nclass Base:\n    width = WIDTH\n',
        'lib/consts.py': 'WIDTH = 7\nDEFAULT = WIDTH * 2\n',
        'lib/top.py':
          'from .base import Base\nfrom .deco import register, REG\nfrom .consts import DEFAULT\n\n@register\nclass Top(Base):\n    def f(self, d=DEFAULT):\n        return d + self.width, list(REG)\n',
      },
      'lib.top.Top',
    );
    assert.strictEqual(run(dir, "print(ns['Top']().f())"), "(21, ['Top'])");
    const order = topLevelNames(code);
    assert.deepStrictEqual(order, ['Base', 'DEFAULT', 'REG', 'Top', 'WIDTH', 'register']);
    assert.ok(code.indexOf('WIDTH = 7') < code.indexOf('class Base'), 'a class-body need comes before the class');
  });

  it('closes over cycles, star imports with __all__, re-export chains and module-level values built by calls', async () => {
    const { code, dir } = await pull(
      {
        'cy/__init__.py': 'from .api import *\n',
        'cy/api.py': '__all__ = ["pair", "depth_a"]\nfrom .helpers import pair\nfrom .rec import depth_a\nfrom .helpers import unused\n',
        'cy/helpers.py': 'def _ntuple(n):\n    def parse(x):\n        return (x,) * n\n    return parse\npair = _ntuple(2)\ndef unused():\n    pass\n',
        'cy/rec.py': 'from . import rec2\ndef depth_a(n):\n    return 0 if n == 0 else 1 + rec2.depth_b(n - 1)\n',
        'cy/rec2.py': 'from . import rec\ndef depth_b(n):\n    return 0 if n == 0 else 1 + rec.depth_a(n - 1)\n',
        'cy/user.py': 'from cy import *\n\nclass U:\n    def go(self):\n        return pair(3), depth_a(5)\n',
      },
      'cy.user.U',
    );
    assert.strictEqual(run(dir, "print(ns['U']().go())"), '((3, 3), 5)');
    assert.deepStrictEqual(topLevelNames(code), ['U', '_ntuple', 'depth_a', 'depth_b', 'pair']);
  });

  it('replaces repository imports inside functions and guarded blocks; third-party ones stay as written', async () => {
    const { code, dir } = await pull(
      {
        'lz/__init__.py': '',
        'lz/inner.py': 'def inner():\n    return "inner"\n',
        'lz/fast.py': 'def speed():\n    return "fast"\n',
        'lz/main.py': [
          'try:',
          '    from .fast import speed',
          'except ImportError:',
          '    speed = None',
          '',
          'class M:',
          '    def go(self):',
          '        from .inner import inner',
          '        import json',
          '        return inner(), speed(), json.dumps(1)',
        ].join('\n'),
      },
      'lz.main.M',
    );
    assert.strictEqual(run(dir, "print(ns['M']().go())"), "('inner', 'fast', '1')");
    assert.match(code, /^        import json$/m, 'a third-party or stdlib import inside a function stays where it was');
    assert.doesNotMatch(code, /from \.|import lz/);
  });

  it('keeps imports of other repositories and third-party packages as imports, pruned to what is used', async () => {
    const { code } = await pull(
      {
        'm/__init__.py': '',
        'm/x.py':
          'import os, sys\nimport numpy as np\nfrom collections import OrderedDict, defaultdict\n\nclass X:\n    def f(self):\n        return np.zeros(2), OrderedDict(), os.sep\n',
      },
      'm.x.X',
    );
    assert.match(code, /^import os$/m);
    assert.match(code, /^import numpy as np$/m);
    assert.match(code, /^from collections import OrderedDict$/m);
    assert.doesNotMatch(code, /sys|defaultdict/);
    assert.ok(code.indexOf('import os') < code.indexOf('import numpy'), 'standard library before third-party');
  });

  it('names a module without Python source as a native extension', async () => {
    const { report } = await pull(
      { 'nat/__init__.py': '', 'nat/op.py': 'from . import _C\n\nclass Op:\n    def f(self):\n        return _C.run()\n' },
      'nat.op.Op',
    );
    assert.strictEqual(report.status, 'failed');
    assert.strictEqual(report.category, 'native-extension');
    assert.match(report.message!, /nat\._C/);
  });

  it('follows string registries to the registered class, and nothing else', async () => {
    const { code, dir } = await pull(
      {
        'rg/__init__.py': 'from . import heads\n',
        'rg/registry.py':
          'class Registry:\n    def __init__(self):\n        self.m = {}\n    def register_module(self, name=None):\n        def deco(cls):\n            self.m[name or cls.__name__] = cls\n            return cls\n        return deco\n    def build(self, cfg):\n        cfg = dict(cfg)\n        return self.m[cfg.pop("type")](**cfg)\nMODELS = Registry()\n',
        'rg/heads.py':
          'from .registry import MODELS\n@MODELS.register_module(name="Fancy")\nclass FancyHead:\n    def __init__(self, k=1):\n        self.k = k\n@MODELS.register_module()\nclass Unused:\n    pass\n',
        'rg/model.py':
          'from .registry import MODELS\nclass Model:\n    def __init__(self, head=dict(type="Fancy", k=3)):\n        self.head = MODELS.build(head)\n',
      },
      'rg.model.Model',
    );
    assert.strictEqual(run(dir, "print(ns['Model']().head.k)"), '3');
    assert.ok(!code.includes('class Unused'));
  });

  it('never takes the name of a builtin the code reads', async () => {
    const { dir } = await pull(
      {
        'bt/__init__.py': '',
        'bt/ops.py': 'def max(a):\n    return "mine"\n',
        'bt/k.py': 'from .ops import max as mymax\n\nclass K:\n    def f(self):\n        return mymax(1), max(1, 2)\n',
      },
      'bt.k.K',
    );
    assert.strictEqual(run(dir, "print(ns['K']().f())"), "('mine', 2)");
  });

  it('keeps the unconditional fallback of a name rebound under try, and one name for one module', async () => {
    const { code, dir } = await pull(
      {
        'ext/__init__.py': '',
        'ext/ops.py': [
          'import os',
          'import os.path',
          'def has_ops():',
          '    return False',
          'try:',
          '    import surely_not_installed_native_lib',
          '    def has_ops():',
          '        return True',
          'except ImportError:',
          '    pass',
        ].join('\n'),
        'ext/use.py': 'import os\nfrom .ops import has_ops\n\nclass U:\n    def f(self):\n        return has_ops(), os.sep\n',
      },
      'ext.use.U',
    );
    assert.strictEqual(run(dir, "print(ns['U']().f())"), "(False, '/')");
    assert.doesNotMatch(code, /os_os|as os_/, 'import os and import os.path share the name os');
  });

  it('writes a provenance header that reads back', async () => {
    const { code, report } = await pull({ 'p/__init__.py': '', 'p/q.py': 'class Q:\n    pass\n' }, 'p.q.Q');
    const prov = readProvenance(code)!;
    assert.strictEqual(prov.block, 'Q');
    assert.strictEqual(prov.target, report.target);
    assert.deepStrictEqual(
      prov.definitions.map((d) => [d.path, d.lines]),
      [['p/q.py', [1, 2]]],
    );
    assert.match(prov.hash, /^sha256:[0-9a-f]{64}$/);
    // the header says where the code comes from, one line per source file
    const grouped = await pull(
      {
        'p/__init__.py': '',
        'p/h.py': 'A = 1\nB = 2\nC = 3\n\ndef f():\n    return A + B + C\n',
        'p/q.py': 'from .h import f\n\nclass Q:\n    def run(self):\n        return f()\n',
      },
      'p.q.Q',
    );
    assert.match(grouped.code, /^# {3}repo p\/h\.py \([0-9a-f]{12}\): A 1; B 2; C 3; f 5-6$/m);
    assert.match(grouped.code, /^# {3}repo p\/q\.py \([0-9a-f]{12}\): Q 3-5$/m);
  });

  it('records the sha256 of the body as written, for files in one-byte and two-byte text alike', async () => {
    const { code } = await pull(
      {
        'u/__init__.py': '',
        'u/a.py': 'def helper():\n    return "plain ascii"\n',
        'u/b.py': 'def dash():\n    """An em dash \u2014 and \u00e9."""\n    return "\u03b1"\n',
        'u/c.py': 'from .a import helper\nfrom .b import dash\nimport math\n\nclass C:\n    def f(self):\n        return helper(), dash(), math.pi\n',
      },
      'u.c.C',
    );
    assert.ok(code.includes('\u2014') && code.includes('plain ascii'), 'both files are inlined');
    assert.strictEqual(readProvenance(code)!.hash, bodyHash(code));
  });
});

describe('pull: what the index kept of each file', () => {
  const files = {
    'pkg/__init__.py': '',
    'pkg/layers.py': 'import torch.nn as nn\n\n\ndef act():\n    return nn.ReLU()\n\n\nclass Base(nn.Module):\n    pass\n',
    'pkg/block.py': 'from .layers import Base, act\n\n\nclass Block(Base):\n    def __init__(self):\n        super().__init__()\n        self.act = act()\n',
  };
  const bins = async (dir: string): Promise<string[]> => {
    const out: string[] = [];
    for (const sub of await fsp.readdir(dir).catch(() => [] as string[])) {
      for (const name of await fsp.readdir(path.join(dir, sub))) out.push(name.replace(/\.bin$/, ''));
    }
    return out.sort();
  };
  const pullHash = async (db: IndexDb, p: PythonParser): Promise<string> =>
    (await pullBlock(openPullSession(db, loadModuleTable(db)), findTarget(db, 'pkg.block.Block'), { parser: p, validate: false })).provenance!.hash;

  it('pulls without parsing again, the same code; a damaged entry is parsed and written again; a finished run prunes', async () => {
    const dir = await tmpdir();
    const repo = path.join(dir, 'repo');
    await writeTree(repo, files);
    const { db } = await IndexDb.open(path.join(dir, 'index.db'), { sqlWasm: ASSETS.sqlWasm });
    await indexFolder(db, repo);
    const units = unitsDirOf(db)!;
    const hashes = db.all("SELECT hash FROM files WHERE status = 'parsed' ORDER BY hash").map((r) => String(r.hash));
    assert.deepStrictEqual(await bins(units.dir), hashes, 'one entry per parsed file, under its blob id');

    const mem = await memoryDb();
    await indexFolder(mem, repo);
    const parsedAgain = await pullHash(mem, await parser());
    // a parser that cannot parse: the pull reads only what the index kept
    const refusing = { parse: () => assert.fail('parsed again') } as unknown as PythonParser;
    assert.strictEqual(await pullHash(db, refusing), parsedAgain);

    const layers = hashes.find((h) => h === String(db.get("SELECT hash FROM files WHERE path = 'pkg/layers.py'")!.hash))!;
    const entry = path.join(units.dir, layers.slice(0, 2), `${layers}.bin`);
    await fsp.writeFile(entry, 'not deflated json');
    await assert.rejects(pullHash(db, refusing), /parsed again/);
    assert.strictEqual(await pullHash(db, await parser()), parsedAgain);
    assert.strictEqual(await pullHash(db, refusing), parsedAgain, 'the damaged entry was written again');

    // a changed file and another parser version: the finished run keeps only what the index holds now
    await fsp.mkdir(path.join(units.root, 'parser-0', 'ab'), { recursive: true });
    await fsp.appendFile(path.join(repo, 'pkg/layers.py'), '\n\nWIDTH = 4\n');
    await indexFolder(db, repo);
    const now = db.all("SELECT hash FROM files WHERE status = 'parsed' ORDER BY hash").map((r) => String(r.hash));
    assert.ok(!now.includes(layers));
    assert.deepStrictEqual(await bins(units.dir), now);
    assert.deepStrictEqual(await fsp.readdir(units.root), [path.basename(units.dir)]);
    db.close();
  });

  it('keeps every module of the example repository whole in the units format, and refuses damaged entries', async () => {
    // the modules as the index lists and reads them
    const source = await openFolder({ location: path.join(ROOT, 'examples', 'tinyblocks') });
    const { files } = await source.list();
    const p = await parser();
    let refs = 0;
    let attrs = 0;
    for (const sf of files) {
      const file = sf.path;
      const out = p.parse(await source.read(sf));
      assert.ok(out.ok, file);
      const detail: UnitDetail = { refs: out.refs, bindSites: out.bindSites, strings: out.strings, importRanges: out.importRanges, bodies: out.bodies };
      const bytes = encodeUnits(detail);
      assert.deepStrictEqual(decodeUnits(bytes), detail, file);
      refs += out.refs.flat().length;
      attrs += out.refs.flat().filter((r) => r.attrs.length).length;
      // cut anywhere, or one byte changed in its header: an error, never a wrong or huge detail
      for (const cut of [0, 3, 5, Math.floor(bytes.length / 2), bytes.length - 1]) assert.throws(() => decodeUnits(bytes.subarray(0, cut)), /units entry/);
      assert.throws(() => decodeUnits(Buffer.concat([bytes, Buffer.from([0])])), /bytes after its end/);
      const bad = Uint8Array.from(bytes);
      bad[4] = 0xff;
      assert.throws(() => decodeUnits(bad), /units entry/);
    }
    assert.ok(files.length > 3 && refs > 50 && attrs > 10, `a real sample: ${files.length} files, ${refs} references, ${attrs} with attributes`);
    // references out of source order and a string literal that is not ASCII come back as they were
    const odd: UnitDetail = {
      refs: [
        [
          { name: 'b', start: 40, end: 41, timing: 'call', attrs: ['x', 'ÿ'], attrEnds: [43, 45] },
          { name: 'a', start: 2, end: 3, timing: 'def', attrs: [], attrEnds: [] },
        ],
      ],
      bindSites: [
        [
          { name: 'é', start: 9, end: 10 },
          { name: 'c', start: 0, end: 1 },
        ],
      ],
      strings: [
        [
          { value: 'MLPHead', timing: 'call', at: 50 },
          { value: 'ünï', timing: 'def', at: 12 },
        ],
      ],
      importRanges: [{ unit: 0, start: 5, end: 30, imports: [0, 1] }],
      bodies: [
        {
          statements: 3,
          methods: [
            { name: 'forward', start: 20, end: 60 },
            { name: 'ǵ', start: 8, end: 9 },
          ],
        },
      ],
    };
    assert.deepStrictEqual(decodeUnits(encodeUnits(odd)), odd);
    // a range that ends before it starts is a bug upstream: no entry, never a wrong one
    const backwards: UnitDetail = { ...odd, bindSites: [[{ name: 'c', start: 5, end: 4 }]] };
    assert.throws(() => encodeUnits(backwards), /is not a count or an offset/);
  });

  it('writes an entry once, makes its folder when missing, and leaves no partial files behind', async () => {
    const dir = path.join(await tmpdir(), 'units');
    const hash = 'ab'.repeat(20);
    const detail = (name: string): UnitDetail => ({ refs: [[]], bindSites: [[{ name, start: 0, end: 1 }]], strings: [[]], importRanges: [], bodies: [null] });
    saveUnits(dir, hash, detail('first'));
    assert.strictEqual(loadUnits(dir, hash, 1)?.bindSites[0][0].name, 'first');
    // an entry is never rewritten unless asked (a second writer of one blob finds it there)
    saveUnits(dir, hash, detail('second'));
    assert.strictEqual(loadUnits(dir, hash, 1)?.bindSites[0][0].name, 'first');
    saveUnits(dir, hash, detail('third'), true);
    assert.strictEqual(loadUnits(dir, hash, 1)?.bindSites[0][0].name, 'third');
    // the folder removed under a running index: the next write makes it again
    await fsp.rm(dir, { recursive: true, force: true });
    saveUnits(dir, hash, detail('fourth'));
    assert.strictEqual(loadUnits(dir, hash, 1)?.bindSites[0][0].name, 'fourth');
    assert.strictEqual(loadUnits(dir, hash, 2), undefined, 'not this module: its unit count differs');
    assert.deepStrictEqual(await fsp.readdir(path.join(dir, 'ab')), [`${hash}.bin`]);
  });
});
