/**
 * The slim copy (pull/stageSlim.ts): validated with a real Python and torch, the pulled file leaves out the
 * definitions of other modules its original never ran (stood in for by functions that say so), keeps what the file
 * needs while it is imported (a decorator: the trace starts after the import), and writes the full file back when
 * the slim one does not get as far; `full` keeps everything; a few lines fewer are not worth judging again.
 */
import * as assert from 'assert';
import { execFileSync } from 'child_process';
import { promises as fsp } from 'fs';
import type { PullReport } from '../../../src/core/pull/types';
import { slimWorthJudging } from '../../../src/core/pull/stageSlim';
import { hasTorch, PYTHON_WITH_TORCH, pullValidated } from '../helpers';

const FILES: Record<string, string> = {
  'fw/__init__.py': '',
  'fw/util.py': `import functools


def registered(cls):
    cls.registered = True
    return cls


def used(x):
    return x * 2


def unused(x, path):
    """Writes a checkpoint: what a framework's base class carries and a block never runs."""
    parts = str(path).split("/")
    folder = "/".join(parts[:-1]) or "."
    name = parts[-1] or "checkpoint"
    if not name.endswith(".pt"):
        name = name + ".pt"
    target = folder + "/" + name
    meta = {"folder": folder, "name": name, "target": target}
    history = []
    for step in range(3):
        history.append({"step": step, "target": target, "name": name})
    if len(history) != 3:
        raise RuntimeError("history")
    versions = [h["step"] for h in history]
    if versions != sorted(versions):
        raise RuntimeError("order")
    summary = ", ".join(f"{k}={v}" for k, v in meta.items())
    if not summary:
        raise RuntimeError("summary")
    for key in sorted(meta):
        if not meta[key]:
            raise ValueError(key)
    return target
`,
  'fw/base.py': `import torch

from .util import unused, used


class Base(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 2.0

    def post(self, x):
        if x.dim() > 8:
            return unused(x, "checkpoint")
        return used(x) * self.scale

    def save(self, path):
        return unused(self, path) + "/saved"

    def export(self):
        return self.save("x")
`,
  'app/__init__.py': '',
  'app/model.py': `import torch

from fw.base import Base
from fw.util import registered


@registered
class Model(Base):
    def __init__(self, dim=4):
        super().__init__()
        self.lin = torch.nn.Linear(dim, dim)

    def forward(self, x):
        y = self.post(self.lin(x))
        if x.dim() > 8:
            self.export()
        return y
`,
};

const TARGET = 'app.model.Model';

function runs(file: string, snippet: string): string {
  return execFileSync(PYTHON_WITH_TORCH, ['-I', '-c', `import runpy\nns = runpy.run_path(${JSON.stringify(file)})\n${snippet}`], { encoding: 'utf8' }).trim();
}

describe('pull: whether a slim file is worth judging again', () => {
  it('not for a few lines, nor for a small share of a large file', () => {
    assert.strictEqual(slimWorthJudging(295, 293), false, 'two lines of a whole model');
    assert.strictEqual(slimWorthJudging(654, 640), false, 'fourteen lines, 2 %');
    assert.strictEqual(slimWorthJudging(60, 52), false, 'eight lines, 13 %');
    assert.strictEqual(slimWorthJudging(52, 35), true);
    assert.strictEqual(slimWorthJudging(19_099, 1_200), true);
    assert.strictEqual(slimWorthJudging(100, 100), false);
    assert.strictEqual(slimWorthJudging(30, 35), false);
  });
});

describe('pull: the slim copy, judged with a real Python', function () {
  this.timeout(300_000);
  before(function () {
    if (!hasTorch()) this.skip();
  });

  it('leaves out what the original never ran, stands in for it, and keeps what the import needs', async () => {
    const report: PullReport = await pullValidated(FILES, TARGET);
    assert.strictEqual(report.validation?.equivalence?.status, 'equivalent', JSON.stringify(report.validation));
    assert.ok(
      report.judged?.some((j) => j.stage === 'slim' && /left out/.test(j.why)),
      JSON.stringify(report.judged),
    );
    const code = await fsp.readFile(report.out!, 'utf8');
    assert.match(code, /^unused = _nnrag_left_out\("fw\.util\.unused"\)$/m);
    assert.match(code, /locals\(\)\.update\(_nnrag_left_out\("fw\.base\.Base", "save", "export"\)\)/);
    assert.match(code, /^def registered\(cls\):$/m, 'the decorator runs while the file is imported: kept');
    assert.match(code, /^def used\(x\):$/m);
    assert.doesNotMatch(code, /^def unused/m);
    assert.match(code, /^# left out, as the original never ran them while validated \(nn-rag pull --full keeps them\): /m);
    // what was left out says so when called; the rest works
    const said = runs(report.out!, 'm = ns["Model"]()\ntry:\n    m.export()\nexcept RuntimeError as e:\n    print(type(e).__name__, e)');
    assert.match(said, /^_NnragLeftOut fw\.base\.Base\.export was left out of this file: .*nn-rag pull --full keeps it/);
    assert.deepStrictEqual(report.provenance?.definitions.map((d) => d.names.join()).includes('unused'), true);
  });

  it('stands in for a function the block keeps as an attribute but never calls under its own name', async () => {
    // a loss module keeps its criterion (`self.cls_criterion = binary_cross_entropy`): the module tree the judge compares
    // names it, so the stand-in must print itself as the original does
    const model = FILES['app/model.py']
      .replace('from fw.util import registered', 'from fw.util import registered, unused')
      .replace('self.lin = torch.nn.Linear(dim, dim)', 'self.lin = torch.nn.Linear(dim, dim)\n        self.criterion = unused');
    const report = await pullValidated({ ...FILES, 'app/model.py': model }, TARGET);
    assert.strictEqual(report.validation?.equivalence?.status, 'equivalent', JSON.stringify(report.validation));
    assert.ok(
      report.judged?.some((j) => j.stage === 'slim' && /left out; the slim file judged again/.test(j.why)),
      JSON.stringify(report.judged),
    );
    const code = await fsp.readFile(report.out!, 'utf8');
    assert.match(code, /^unused = _nnrag_left_out\("fw\.util\.unused"\)$/m);
    assert.strictEqual(runs(report.out!, 'm = ns["Model"]()\nprint(m.criterion.__qualname__, ns["Base"].save.__qualname__)'), 'unused Base.save');
  });

  it('keeps every definition with `full`', async () => {
    const report = await pullValidated(FILES, TARGET, { full: true });
    assert.strictEqual(report.validation?.equivalence?.status, 'equivalent');
    assert.ok(!report.judged?.some((j) => j.stage === 'slim'));
    const code = await fsp.readFile(report.out!, 'utf8');
    assert.match(code, /^def unused/m);
    assert.doesNotMatch(code, /_nnrag_left_out/);
  });

  it('writes the full file back when the slim one does not get as far', async () => {
    // the copy runs what the original never did (its module's name differs): without it, the copy fails
    const files = { ...FILES, 'app/model.py': FILES['app/model.py'].replace('if x.dim() > 8:', 'if __name__ != "app.model":') };
    const report = await pullValidated(files, TARGET);
    assert.strictEqual(report.validation?.equivalence?.status, 'equivalent', JSON.stringify(report.validation));
    assert.ok(
      report.judged?.some((j) => j.stage === 'slim' && /full file is written/.test(j.why)),
      JSON.stringify(report.judged),
    );
    const code = await fsp.readFile(report.out!, 'utf8');
    assert.doesNotMatch(code, /_nnrag_left_out/);
    assert.match(code, /^def unused/m);
  });
});
