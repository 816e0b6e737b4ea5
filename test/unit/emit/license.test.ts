import * as assert from 'assert';
import { existsSync, readdirSync, readFileSync } from 'fs';
import * as path from 'path';
import { detectLicense } from '../../../src/core/sources/license';
import { stdlibModules } from '../../../src/core/validate/interpreter';
import { licenseFile } from '../helpers';

const COMMON = '/usr/share/common-licenses';
/** Debian's license texts and the SPDX id each is (GPL, LGPL and GFDL are links to the newest version). */
const DEBIAN: Record<string, string> = {
  'Apache-2.0': 'Apache-2.0',
  Artistic: 'Artistic-1.0-Perl',
  BSD: 'BSD-3-Clause',
  'CC0-1.0': 'CC0-1.0',
  GFDL: 'GFDL-1.3',
  'GFDL-1.2': 'GFDL-1.2',
  'GFDL-1.3': 'GFDL-1.3',
  GPL: 'GPL-3.0',
  'GPL-1': 'GPL-1.0',
  'GPL-2': 'GPL-2.0',
  'GPL-3': 'GPL-3.0',
  LGPL: 'LGPL-3.0',
  'LGPL-2': 'LGPL-2.0',
  'LGPL-2.1': 'LGPL-2.1',
  'LGPL-3': 'LGPL-3.0',
  'MPL-1.1': 'MPL-1.1',
  'MPL-2.0': 'MPL-2.0',
};

describe('license detection by similarity to the SPDX texts', () => {
  it("names every text in Debian's common-licenses right", function () {
    if (!existsSync(COMMON)) this.skip();
    const found = Object.fromEntries(readdirSync(COMMON).map((f) => [f, detectLicense(readFileSync(path.join(COMMON, f), 'utf8'))]));
    // every file there is expected: a new one fails here until it is added above
    assert.deepStrictEqual(found, Object.fromEntries(readdirSync(COMMON).map((f) => [f, DEBIAN[f] ?? '(not in the table)'])));
  });

  it('tells close relatives apart and names nothing that is not a license', () => {
    for (const id of ['MIT', 'MIT-0', 'BSD-2-Clause', 'BSD-3-Clause', 'ISC', 'Unlicense', 'CC-BY-NC-4.0', 'CC-BY-4.0', 'AGPL-3.0-only']) {
      assert.strictEqual(detectLicense(licenseFile(id)), id.replace(/-only$/, ''), id);
    }
    // a README is not a license; an MIT text with the project's own note below it still is MIT
    assert.strictEqual(detectLicense('# tinyblocks\n\nSmall PyTorch blocks for tests. Install with pip and import the blocks you need.\n'), undefined);
    assert.strictEqual(detectLicense(`${licenseFile('MIT')}\nThe weights are released separately.\n`), 'MIT');
  });
});

describe("the standard library is the interpreter's", () => {
  it('asks the interpreter for sys.stdlib_module_names, and says nothing when there is no interpreter', async function () {
    this.timeout(30_000);
    const names = await stdlibModules(process.env.NNRAG_TEST_PYTHON ?? '/usr/bin/python3');
    if (!names) this.skip();
    assert.ok(names.has('os') && names.has('json') && names.has('asyncio'));
    assert.ok(!names.has('torch') && !names.has('numpy'));
    assert.strictEqual(await stdlibModules('/nonexistent/python3'), undefined);
  });
});
