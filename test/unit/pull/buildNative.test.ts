/**
 * `pull --build-native`: a block that calls a repository's own compiled operator (a C++ extension of
 * torch.utils.cpp_extension, declared in setup.py) gets it built from the indexed sources inside the sandbox, cached,
 * placed beside the pulled file and compared with the original (which is given the same build); a CUDA-only
 * operator says so. Needs g++, ninja and the interpreter's torch headers (scripts/setup.mjs installs them).
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { cli, PYTHON_WITH_TORCH, tmpdir, writeTree } from '../helpers';
import { findNativeSources } from '../../../src/core/pull/nativeSources';
import { LOADER_REPO, NATIVE_REPO } from '../nativeFixture';
import type { RepoRow } from '../../../src/core/store/sourceText';

const HEADERS = ['/usr/bin/g++', '/usr/bin/ninja', '/usr/include/torch/extension.h'];

describe('pull --build-native', function () {
  this.timeout(900_000);
  let dir: string;
  let db: string;
  let cache: string;
  before(async function () {
    const missing = HEADERS.filter((f) => !fs.existsSync(f));
    if (missing.length) {
      // scripts/setup.mjs installs them where it may (apt-get as root); elsewhere the build cannot be tried
      console.warn(`    skipped: ${missing.join(', ')} missing (apt-get install g++ ninja-build python3-dev libtorch-dev pybind11-dev)`);
      this.skip();
    }
    dir = await tmpdir('nnrag-native-');
    db = path.join(dir, 'index.db');
    cache = path.join(dir, 'cache');
    await writeTree(path.join(dir, 'repo'), NATIVE_REPO);
    assert.strictEqual((await cli('index', path.join(dir, 'repo'), '--db', db)).code, 0);
  });

  it('without the flag, names the compiled module and the flag that builds it', async () => {
    const r = await cli('pull', 'opspkg.layers.ScaledResidual', '--db', db, '--out', path.join(dir, 'plain.py'), '--python', PYTHON_WITH_TORCH, '--json');
    const report = JSON.parse(r.out);
    assert.strictEqual(report.category, 'native-extension', r.out);
    assert.match(report.message, /opspkg\._C.*--build-native/);
  });

  it("builds the operator from setup.py's sources, validates the copy as equivalent, and takes the cache the second time", async () => {
    const out = path.join(dir, 'out', 'scaled.py');
    const r = await cli(
      'pull',
      'opspkg.layers.ScaledResidual',
      '--db',
      db,
      '--out',
      out,
      '--python',
      PYTHON_WITH_TORCH,
      '--build-native',
      '--cache',
      cache,
      '--json',
    );
    const report = JSON.parse(r.out);
    assert.strictEqual(report.tier, 'equivalent', r.out + r.err);
    assert.strictEqual(report.natives.length, 1);
    assert.deepStrictEqual(report.natives[0].sources, ['opspkg/csrc/ops.cpp', 'opspkg/csrc/scale.cpp']);
    assert.strictEqual(report.natives[0].cached, false);
    const placed = path.join(dir, 'out', '_nnrag_native', report.natives[0].file);
    assert.ok(fs.existsSync(placed), 'the operator is beside the file');
    const text = fs.readFileSync(out, 'utf8');
    assert.match(text, /^# needs the compiled operator opspkg\._C, built for the CPU from opspkg\/csrc\/ops\.cpp, opspkg\/csrc\/scale\.cpp/m);
    assert.doesNotMatch(text, /from \. import _C|import opspkg/);

    const again = JSON.parse(
      (
        await cli(
          'pull',
          'opspkg.layers.ScaledResidual',
          '--db',
          db,
          '--out',
          path.join(dir, 'out', 'again.py'),
          '--python',
          PYTHON_WITH_TORCH,
          '--build-native',
          '--cache',
          cache,
          '--json',
        )
      ).out,
    );
    assert.strictEqual(again.tier, 'equivalent');
    assert.strictEqual(again.natives[0].cached, true);
    assert.strictEqual(again.natives[0].file, report.natives[0].file, 'the same sources and interpreter: the same build');
  });

  it('validate FILE compares a copy that loads the operator with its original, and an edit differs', async () => {
    const out = path.join(dir, 'out', 'scaled.py');
    const same = JSON.parse((await cli('validate', out, '--db', db, '--python', PYTHON_WITH_TORCH, '--json')).out);
    assert.strictEqual(same.tier, 'equivalent', JSON.stringify(same));
    const edited = path.join(dir, 'out', 'edited.py');
    fs.writeFileSync(edited, fs.readFileSync(out, 'utf8').replace('self.alpha = alpha', 'self.alpha = alpha * 2'));
    const differs = JSON.parse((await cli('validate', edited, '--db', db, '--python', PYTHON_WITH_TORCH, '--json')).out);
    assert.strictEqual(differs.equivalence?.status, 'differs', JSON.stringify(differs));
  });

  it('a build that replaces its output with a link to a host file carries nothing out of the sandbox', async () => {
    const work = await tmpdir('nnrag-native-swap-');
    const secret = path.join(work, 'host-secret.txt');
    fs.writeFileSync(secret, "the user's key\n");
    // the operator, when the build loads it once, unlinks itself and leaves a link to a host file in its place
    const swap = `#include <dlfcn.h>\n#include <unistd.h>\nstatic void swap_self() __attribute__((constructor));\nstatic void swap_self() { Dl_info i; if (dladdr((void*)&swap_self, &i) && i.dli_fname) { unlink(i.dli_fname); symlink(${JSON.stringify(secret)}, i.dli_fname); } }\n`;
    await writeTree(path.join(work, 'repo'), { ...NATIVE_REPO, 'opspkg/csrc/scale.cpp': `${swap}${NATIVE_REPO['opspkg/csrc/scale.cpp']}` });
    const sdb = path.join(work, 'index.db');
    assert.strictEqual((await cli('index', path.join(work, 'repo'), '--db', sdb)).code, 0);
    const out = path.join(work, 'out', 'scaled.py');
    const r = await cli(
      'pull',
      'opspkg.layers.ScaledResidual',
      '--db',
      sdb,
      '--out',
      out,
      '--python',
      PYTHON_WITH_TORCH,
      '--build-native',
      '--cache',
      path.join(work, 'cache'),
      '--json',
    );
    const report = JSON.parse(r.out);
    assert.strictEqual(report.category, 'native-extension', r.out);
    assert.match(report.message, /left no ordinary file: .*symbolic link/);
    const everything = (d: string): string[] => (fs.existsSync(d) ? (fs.readdirSync(d, { recursive: true }) as string[]).map((f) => path.join(d, f)) : []);
    for (const f of [...everything(path.join(work, 'cache')), ...everything(path.join(work, 'out'))]) {
      const st = fs.lstatSync(f);
      assert.ok(!st.isSymbolicLink(), `${f} is a link`);
      if (st.isFile()) assert.ok(!fs.readFileSync(f, 'utf8').includes("the user's key"), `${f} holds the host file`);
    }
  });

  it('an operator with only CUDA sources says it cannot be built for the CPU', async () => {
    const r = await cli(
      'pull',
      'opspkg.gates.Gated',
      '--db',
      db,
      '--out',
      path.join(dir, 'out', 'gated.py'),
      '--python',
      PYTHON_WITH_TORCH,
      '--build-native',
      '--cache',
      cache,
      '--json',
    );
    const report = JSON.parse(r.out);
    assert.strictEqual(report.category, 'native-extension', r.out);
    assert.match(report.message, /only CUDA sources \(opspkg\/csrc\/cuda\/gate\.cu\)/);
  });
  it("an operator the code loads by name at run time (mmcv's load_ext) is named, then built and registered under that name", async () => {
    const work = await tmpdir('nnrag-native-loader-');
    const ldb = path.join(work, 'index.db');
    await writeTree(path.join(work, 'repo'), LOADER_REPO);
    assert.strictEqual((await cli('index', path.join(work, 'repo'), '--db', ldb)).code, 0);
    const plain = JSON.parse(
      (await cli('pull', 'ldpkg.ops.shift.ShiftAdd', '--db', ldb, '--out', path.join(work, 'plain.py'), '--python', PYTHON_WITH_TORCH, '--json')).out,
    );
    assert.strictEqual(plain.category, 'native-extension', JSON.stringify(plain));
    assert.match(plain.message, /loads the compiled module ldpkg\._ext by name at run time \(importlib\.import_module\).*--build-native builds it/);
    const out = path.join(work, 'out', 'shift_add.py');
    const r = await cli(
      'pull',
      'ldpkg.ops.shift.ShiftAdd',
      '--db',
      ldb,
      '--out',
      out,
      '--python',
      PYTHON_WITH_TORCH,
      '--build-native',
      '--cache',
      cache,
      '--json',
    );
    const built = JSON.parse(r.out);
    assert.strictEqual(built.tier, 'equivalent', r.out + r.err);
    // the binding file and the CPU code; the accelerator's source and CUDA's left out; the shared header found
    assert.deepStrictEqual(built.natives[0].sources, [
      'ldpkg/ops/csrc/pytorch/cpu/shift.cpp',
      'ldpkg/ops/csrc/pytorch/pybind.cpp',
      'ldpkg/ops/csrc/pytorch/shift.cpp',
    ]);
    assert.match(fs.readFileSync(out, 'utf8'), /^_nnrag_native\("ldpkg\._ext", "nnrag_ldpkg__ext", "[\w.-]+\.so", True\)$/m);
    const again = JSON.parse((await cli('validate', out, '--db', ldb, '--python', PYTHON_WITH_TORCH, '--json')).out);
    assert.strictEqual(again.tier, 'equivalent', JSON.stringify(again));
  });
  it("observe --build-native builds the operator a repository's tests stop without and runs them again with it", async () => {
    const work = await tmpdir('nnrag-native-observe-');
    const odb = path.join(work, 'index.db');
    await writeTree(path.join(work, 'repo'), {
      ...LOADER_REPO,
      'tests/test_shift.py': 'import torch\n\nfrom ldpkg.ops.shift import ShiftAdd\n\n\ndef test_shift():\n    ShiftAdd(dim=6, shift=0.5)(torch.randn(3, 6))\n',
    });
    assert.strictEqual((await cli('index', path.join(work, 'repo'), '--db', odb)).code, 0);
    const plain = await cli('observe', '--db', odb, '--python', PYTHON_WITH_TORCH, '--json');
    assert.strictEqual(JSON.parse(plain.out)[0].failed, 1, plain.out + plain.err);
    const built = await cli('observe', '--db', odb, '--python', PYTHON_WITH_TORCH, '--build-native', '--cache', cache, '--force', '--json');
    assert.match(built.err, /ldpkg\._ext (?:built in [\d.]+ s|taken from the cache); its entries run again with it/, built.err);
    const [summary] = JSON.parse(built.out);
    assert.deepStrictEqual([summary.failed, summary.classes, summary.fed], [0, 1, 1], built.out);
    const calls = JSON.parse((await cli('show', 'ldpkg.ops.shift.ShiftAdd', '--calls', '--db', odb, '--json')).out);
    assert.deepStrictEqual(calls[0]?.kwargs, { dim: 6, shift: 0.5 }, JSON.stringify(calls));
  });
});

describe("finding a compiled module's sources without setup.py", () => {
  const row = (location: string): RepoRow => ({
    id: 1,
    name: 'r',
    kind: 'folder',
    location,
    url: null,
    commit: null,
    root: location,
    license: null,
    config: {},
  });

  it('takes the file that binds the module and the C++ files beside and below it, leaving CUDA out', async () => {
    const dir = await tmpdir('nnrag-native-find-');
    await writeTree(dir, {
      'pkg/__init__.py': '',
      'pkg/csrc/bind.cpp': 'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}\n',
      'pkg/csrc/cpu/roi.cpp': '// cpu\n',
      'pkg/csrc/cuda/roi_cuda.cu': '// cuda\n',
      'pkg/csrc/roi.h': '// header\n',
      'tools/other.cpp': '// elsewhere\n',
    });
    const found = await findNativeSources(row(dir), 'pkg._ext.roi_align');
    assert.ok(found);
    assert.strictEqual(found.module, 'pkg._ext', 'the name after the compiled module is a name inside it');
    assert.deepStrictEqual(found.sources, ['pkg/csrc/bind.cpp', 'pkg/csrc/cpu/roi.cpp']);
    assert.deepStrictEqual(found.cudaLeftOut, ['pkg/csrc/cuda/roi_cuda.cu']);
    assert.ok(found.files.has('pkg/csrc/roi.h'), 'headers are staged');
  });

  it('takes no file through a link (a C++ source linked to a file outside the repository is not read)', async () => {
    const dir = await tmpdir('nnrag-native-link-');
    await writeTree(dir, { 'pkg/__init__.py': '', 'pkg/csrc/bind.cpp': 'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}\n' });
    fs.symlinkSync('/etc/hostname', path.join(dir, 'pkg/csrc/leak.cpp'));
    fs.symlinkSync('/etc', path.join(dir, 'pkg/csrc/etc'));
    const found = await findNativeSources(row(dir), 'pkg._C');
    assert.deepStrictEqual(found?.sources, ['pkg/csrc/bind.cpp']);
    assert.deepStrictEqual([...found!.files.keys()], ['pkg/csrc/bind.cpp']);
  });

  it('finds nothing where no C++ file binds a module', async () => {
    const dir = await tmpdir('nnrag-native-none-');
    await writeTree(dir, { 'pkg/__init__.py': '', 'pkg/csrc/kernel.cpp': 'int f() { return 1; }\n' });
    assert.strictEqual(await findNativeSources(row(dir), 'pkg._C'), undefined);
  });
});
