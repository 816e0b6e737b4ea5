import { IndexDb } from '/work/main/src/core/index/database';
import { finishRun, indexSource } from '/work/main/src/core/index/indexer';
import { PythonParser } from '/work/main/src/core/parse/parser';
import { openFolder } from '/work/main/src/core/sources/folder';
import { searchBlocks } from '/work/main/src/core/search/search';
import { performance } from 'perf_hooks';
(async () => {
  const file = '/tmp/bench-idx.db';
  const fs = require('fs');
  if (!fs.existsSync(file)) {
    const parser = await PythonParser.create({ treeSitterWasm: '/work/main/node_modules/web-tree-sitter/web-tree-sitter.wasm', pythonWasm: '/work/main/node_modules/tree-sitter-python/tree-sitter-python.wasm' });
    const { db } = await IndexDb.open(file);
    for (const p of ['torch', 'torchvision', 'torchaudio']) await indexSource(db, await openFolder({ location: '/usr/lib/python3/dist-packages/' + p }), { parser });
    finishRun(db); await db.save(); db.close();
  }
  let t0 = performance.now();
  const { db } = await IndexDb.open(file);
  console.log('open', (performance.now() - t0).toFixed(1));
  t0 = performance.now(); db.raw.exec('PRAGMA quick_check'); console.log('quick_check', (performance.now() - t0).toFixed(1));
  const names = db.all('SELECT DISTINCT name FROM classes WHERE is_block = 1 ORDER BY name').map((r) => String(r.name));
  const qs = [...names.filter((_, i) => i % 20 === 0).slice(0, 40), ...names.slice(0, 20).map((n) => n.slice(0, Math.max(3, Math.floor(n.length / 2)))), 'residual block', 'attention', 'multi head attention', 'conv bn relu', 'layer norm', 'dropout'];
  const res: [number, string][] = [];
  for (const q of qs) { const t = performance.now(); searchBlocks(db, { text: q, limit: 20 }); res.push([performance.now() - t, q]); }
  res.sort((a, b) => b[0] - a[0]);
  console.log(res.slice(0, 10).map(([t, q]) => `${t.toFixed(1)}ms ${q}`).join('\n'));
})();
