import { IndexDb } from '/work/main/src/core/index/database';
import { performance } from 'perf_hooks';
(async () => {
  const { db } = await IndexDb.open('/tmp/bench-idx.db');
  for (const m of ['frozenbatchnorm2d*', 'frozenbatchnorm2d* OR frozen* OR batch* OR norm*', 'norm*', 'model*', 'frozen*', 'frozenbatchnorm2d']) {
    for (const cols of ['c.id', "c.id, matchinfo(classes_fts, 'pcnalx')"]) {
      const t = performance.now();
      const r = db.all(`SELECT ${cols} FROM classes_fts JOIN classes c ON c.id = classes_fts.docid WHERE classes_fts MATCH ?`, [m]);
      console.log((performance.now() - t).toFixed(1), 'ms', r.length, m, cols.length);
    }
  }
  const t = performance.now(); db.all("SELECT id FROM classes WHERE name = ?", ['FrozenBatchNorm2d']); console.log('by name', (performance.now() - t).toFixed(2));
})();
