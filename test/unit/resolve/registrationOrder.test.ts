/**
 * A registry's entries as the original's imports left them: a class registered with `force=True` replaces the
 * entry another module registered plainly before it (mmcv's Conv3d wrapper over conv.py's nn.Conv3d). The pulled
 * file keeps that order, so the plain registration is not refused as a duplicate and the block builds the class the
 * original builds.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { cli, PYTHON_WITH_TORCH, tmpdir, writeTree } from '../helpers';

const REGISTRY = `class Registry:
    def __init__(self, name):
        self.name = name
        self._modules = {}

    def register_module(self, name=None, force=False, module=None):
        def put(cls):
            key = name or cls.__name__
            if not force and key in self._modules:
                raise KeyError(f"{key} is already registered in {self.name}")
            self._modules[key] = cls
            return cls

        return put(module) if module is not None else put

    def build(self, cfg):
        cfg = dict(cfg)
        return self._modules[cfg.pop("type")](**cfg)


MODELS = Registry("model")
`;

describe('registrations keep the order the original imports made', function () {
  this.timeout(180_000);
  it('a plain registration comes before the forced one that replaces it; the block is equivalent', async () => {
    const dir = await tmpdir('nnrag-regorder-');
    const db = path.join(dir, 'index.db');
    await writeTree(path.join(dir, 'src'), {
      'regpkg/__init__.py': 'from . import conv, wrappers\n',
      'regpkg/registry.py': REGISTRY,
      'regpkg/conv.py':
        'from torch import nn\n\nfrom .registry import MODELS\n\nMODELS.register_module("Conv3d", module=nn.Conv3d)\n\n\ndef build_conv(cfg, *args, **kwargs):\n    return MODELS.build(dict(cfg, **kwargs)) if not args else MODELS._modules[cfg["type"]](*args, **kwargs)\n',
      'regpkg/wrappers.py':
        'from torch import nn\n\nfrom .registry import MODELS\n\n\n@MODELS.register_module("Conv3d", force=True)\nclass Conv3d(nn.Conv3d):\n    def forward(self, x):\n        return super().forward(x) * 2\n',
      'regpkg/block.py':
        'from torch import nn\n\nfrom .conv import build_conv\nfrom .wrappers import Conv3d  # noqa: F401 (registers the wrapper)\n\n\nclass Block(nn.Module):\n    def __init__(self, channels=2):\n        super().__init__()\n        self.conv = build_conv(dict(type="Conv3d"), channels, channels, 1)\n\n    def forward(self, x):\n        return self.conv(x)\n',
    });
    assert.strictEqual((await cli('index', path.join(dir, 'src'), '--db', db)).code, 0);
    const out = path.join(dir, 'block.py');
    const r = await cli('pull', 'regpkg.block.Block', '--db', db, '--out', out, '--python', PYTHON_WITH_TORCH, '--json');
    const report = JSON.parse(r.out);
    assert.strictEqual(report.tier, 'equivalent', r.out + r.err);
    const text = fs.readFileSync(out, 'utf8');
    assert.ok(text.indexOf('MODELS.register_module("Conv3d", module=nn.Conv3d)') < text.indexOf('@MODELS.register_module("Conv3d", force=True)'), text);
  });
});
