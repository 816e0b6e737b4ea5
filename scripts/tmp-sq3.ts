import { IndexDb } from '/work/main/src/core/index/database';
import { performance } from 'perf_hooks';
(async () => {
  console.log('start');
  const { db } = await IndexDb.open('/tmp/bench-idx.db');
  console.log('opened');
  for (const m of ['model*', 'mod*', 'norm*', 'norm', 'batch*', 'ba*']) {
    const t = performance.now();
    const r = db.all(`SELECT c.id, matchinfo(classes_fts, 'pcnal') AS i FROM classes_fts JOIN classes c ON c.id = classes_fts.docid WHERE classes_fts MATCH ?`, [m]);
    console.log((performance.now() - t).toFixed(1), 'ms', r.length, m);
  }
})();
