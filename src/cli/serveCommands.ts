/** `nn-rag serve`: a team's indexes searched over HTTP (search/served.ts), held by one process instead of copied to
 * every editor. */
import { existsSync, unwatchFile, watchFile } from 'fs';
import * as os from 'os';
import * as path from 'path';
import type { AddressInfo } from 'net';
import { NnragError } from '../core/base/errors';
import { keepSearchEngine, prepareSnapshot } from '../core/search/search';
import { listensOnLoopback } from '../core/base/http';
import { createSearchServer, hostsFor, SEARCH_PATH, type ServedIndex } from '../core/search/served';
import { indexCounts } from '../core/store/stats';
import { EXIT, opt, parse } from './env';
import type { CliEnv } from './env';
import { IndexDb } from '../core/store/database';

/** Where a team server listens unless told. */
export const SERVE_PORT = 7723;
/** How often a served index's file is looked at for a new save. */
const WATCH_MS = 2000;

/** Each file's shortest ending of its path that no other file given shares (`team.db`, `a/team.db`). */
function labelsOf(files: string[]): string[] {
  return files.map((f) => {
    const parts = f.split(path.sep).filter(Boolean);
    for (let n = 1; n <= parts.length; n++) {
      const end = parts.slice(-n).join('/');
      if (files.every((g) => g === f || !`/${g.split(path.sep).filter(Boolean).join('/')}`.endsWith(`/${end}`))) return end.replace(/\.db$/, '');
    }
    return f;
  });
}

export async function serveCommand(argv: string[], env: CliEnv): Promise<number> {
  const args = parse(argv, {
    db: { value: true, multiple: true },
    host: { value: true },
    port: { value: true },
    'allow-host': { value: true, multiple: true },
  });
  const host = opt(args, 'host') ?? '127.0.0.1';
  if (!host.trim()) throw new NnragError('usage', '--host names an address to listen on (127.0.0.1, 0.0.0.0 for the network), not nothing');
  const givenPort = opt(args, 'port');
  if (givenPort !== undefined && !/^\d{1,5}$/.test(givenPort))
    throw new NnragError('usage', `--port is a port number (0 to 65535; 0: any free one), not '${givenPort}'`);
  const port = givenPort === undefined ? SERVE_PORT : Number(givenPort);
  if (port > 65535) throw new NnragError('usage', `--port is a port number (0 to 65535; 0: any free one), not ${port}`);
  const files = (args.options.get('db') ?? [path.join('.nnrag', 'index.db')]).map((f) => path.resolve(f));
  const twice = files.find((f, i) => files.indexOf(f) !== i);
  if (twice) throw new NnragError('usage', `${twice} is given twice`);
  // each index named by the shortest ending of its path that tells it from the others (never the whole path: it is
  // sent to every client)
  const labels = labelsOf(files);
  // the search's snapshot read and checked while the index opens; read only: a server never writes an index
  const open = async (file: string): Promise<IndexDb> => {
    if (!existsSync(file)) throw new NnragError('not-found', `no index at ${file}; run 'nn-rag index SOURCE --db ${file}' first`);
    const snapshot = prepareSnapshot(file);
    const { db } = await IndexDb.open(file, { sqlWasm: env.assets.sqlWasm, readOnly: true });
    await keepSearchEngine(db, snapshot);
    return db;
  };
  const indexes: ServedIndex[] = [];
  try {
    for (const [i, file] of files.entries()) indexes.push({ label: labels[i], db: await open(file) });
  } catch (err) {
    for (const x of indexes) x.db.close();
    throw err;
  }
  const { server, allowHost } = createSearchServer(indexes);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    for (const x of indexes) x.db.close();
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new NnragError('usage', `port ${port} on ${host} is taken: choose another with --port`);
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN')
      throw new NnragError('usage', `this machine has no address ${host} to listen on (--host)`);
    throw err;
  }
  server.on('error', (err) => env.err(`nn-rag serve: ${err.message}\n`));
  const where = server.address() as AddressInfo;
  const shown = where.family === 'IPv6' ? `[${where.address}]` : where.address;
  // the names a request may ask for, by the address it listens on (not by how --host was spelled)
  const names = [os.hostname(), ...(args.options.get('allow-host') ?? [])].map((n) => n.toLowerCase());
  allowHost(hostsFor(where.address, names));
  const onLoopback = listensOnLoopback(where.address);
  const blocks = indexes.map((x) => indexCounts(x.db).blocks).reduce((a, b) => a + b, 0);
  env.err(
    `nn-rag serve: ${blocks} blocks in ${indexes.length === 1 ? indexes[0].label : `${indexes.length} indexes`} at http://${shown}:${where.port}${SEARCH_PATH}?q=...` +
      `${onLoopback ? ' (this machine only: --host 0.0.0.0 serves the network)' : ` (requests for ${[...names, 'its addresses'].join(', ')}; --allow-host adds a name)`}\n`,
  );
  // an index saved again (the team indexed it anew) is read again and served from then on; one that cannot be read
  // leaves the one served, and says why
  files.forEach((file, i) => {
    let reading = Promise.resolve();
    watchFile(file, { interval: WATCH_MS, persistent: false }, (now, before) => {
      if (now.mtimeMs === before.mtimeMs && now.size === before.size && now.ino === before.ino) return;
      reading = reading.then(async () => {
        try {
          const db = await open(file);
          const old = indexes[i].db;
          indexes[i] = { label: indexes[i].label, db };
          old.close();
          env.err(`nn-rag serve: ${file} read again\n`);
        } catch (err) {
          env.err(`nn-rag serve: ${file} changed and could not be read (${err instanceof Error ? err.message : String(err)}); serving it as it was\n`);
        }
      });
    });
  });
  let stop = (): void => undefined;
  await new Promise<void>((resolve) => {
    stop = resolve;
    if (env.signal?.aborted) return resolve();
    env.signal?.addEventListener('abort', stop);
    process.once('SIGTERM', stop);
  });
  process.off('SIGTERM', stop);
  for (const file of files) unwatchFile(file);
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  for (const x of indexes) x.db.close();
  return EXIT.ok;
}
