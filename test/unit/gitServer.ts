/** A real git smart-HTTP server on 127.0.0.1 for tests: node's http in front of `git http-backend`. */
import { execFileSync, spawn } from 'child_process';
import * as http from 'http';
import type { AddressInfo } from 'net';

export interface GitServer {
  url: (repo: string) => string;
  close: () => Promise<void>;
}

/** `auth`: the server answers 401 to requests without these basic-auth credentials (a private repository). */
export async function startGitServer(projectRoot: string, auth?: { username: string; password: string }): Promise<GitServer> {
  const expected = auth && `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
  const server = http.createServer((req, res) => {
    if (expected && req.headers.authorization !== expected) {
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="test"' });
      res.end('authentication required');
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const child = spawn('git', ['http-backend'], {
        env: {
          PATH: process.env.PATH,
          GIT_PROJECT_ROOT: projectRoot,
          GIT_HTTP_EXPORT_ALL: '1',
          PATH_INFO: decodeURIComponent(url.pathname),
          QUERY_STRING: url.search.slice(1),
          REQUEST_METHOD: req.method ?? 'GET',
          CONTENT_TYPE: req.headers['content-type'] ?? '',
          CONTENT_LENGTH: String(body.length),
          REMOTE_ADDR: '127.0.0.1',
        },
      });
      const out: Buffer[] = [];
      child.stdout.on('data', (c: Buffer) => out.push(c));
      child.on('close', () => {
        const all = Buffer.concat(out);
        const split = all.indexOf('\r\n\r\n');
        const head = all.subarray(0, split).toString('latin1');
        let status = 200;
        const headers: Record<string, string> = {};
        for (const line of head.split('\r\n')) {
          const i = line.indexOf(':');
          if (i < 0) continue;
          const k = line.slice(0, i).trim();
          const v = line.slice(i + 1).trim();
          if (k.toLowerCase() === 'status') status = parseInt(v, 10);
          else headers[k] = v;
        }
        res.writeHead(status, headers);
        res.end(all.subarray(split + 4));
      });
      // the backend may answer and exit before it has read the whole request (a negotiation it can end early): the
      // answer is on stdout, and the broken pipe on stdin is no error of the client's
      child.stdin.on('error', () => undefined);
      child.stdin.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (repo) => `http://127.0.0.1:${port}/${repo}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Runs git with a fixed identity, in `cwd`. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.org', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.org' },
    encoding: 'utf8',
  }).trim();
}
