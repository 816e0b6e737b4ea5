/**
 * A real VS Code offline: code-server 4.139.1 (VS Code 1.139.1 with a Node extension host) on 127.0.0.1, driven by
 * headless Debian Chromium through playwright-core. Everything it writes goes into one temporary folder.
 */
import { execFileSync, spawn } from 'child_process';
import type { ChildProcess } from 'child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'fs';
import { createServer } from 'net';
import { createRequire } from 'module';
import * as os from 'os';
import * as path from 'path';

/** The part of playwright-core's API the runners use (it is installed in the harness folder, not the project). */
export interface Locator {
  first(): Locator;
  nth(i: number): Locator;
  click(o?: { button?: 'right' | 'left'; timeout?: number }): Promise<void>;
  fill(value: string, o?: { timeout?: number }): Promise<void>;
  hover(o?: { timeout?: number }): Promise<void>;
  waitFor(o?: { state?: 'visible' | 'attached' | 'hidden'; timeout?: number }): Promise<void>;
  innerText(o?: { timeout?: number }): Promise<string>;
  inputValue(o?: { timeout?: number }): Promise<string>;
  count(): Promise<number>;
  filter(o: { hasText: string | RegExp }): Locator;
  locator(selector: string): Locator;
}
export interface Page {
  goto(url: string, o?: { waitUntil?: 'load' | 'domcontentloaded'; timeout?: number }): Promise<unknown>;
  exposeFunction(name: string, fn: (...args: never[]) => unknown): Promise<void>;
  locator(selector: string): Locator;
  getByRole(role: string, o?: { name?: string | RegExp }): Locator;
  keyboard: { press(key: string): Promise<void>; type(text: string, o?: { delay?: number }): Promise<void> };
  screenshot(o: { path: string; fullPage?: boolean }): Promise<unknown>;
  waitForTimeout(ms: number): Promise<void>;
  on(event: 'console' | 'pageerror', fn: (arg: { text?: () => string; message?: string }) => void): void;
  close(): Promise<void>;
}
export interface Browser {
  newContext(o: { viewport: { width: number; height: number } }): Promise<{ newPage(): Promise<Page> }>;
  close(): Promise<void>;
}

export interface Harness {
  node: string;
  codeServer: string;
  chromium: string;
  modules: string;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export class CodeServer {
  private log = '';

  private constructor(
    readonly port: number,
    readonly home: string,
    private readonly child: ChildProcess,
  ) {}

  /** Starts code-server; `trust: false` keeps Workspace Trust on (folders start untrusted, no prompt). */
  static async start(
    h: Harness,
    opts: { trust: boolean; env?: Record<string, string>; settings?: Record<string, unknown>; install?: string },
  ): Promise<CodeServer> {
    const home = mkdtempSync(path.join(os.tmpdir(), 'nnrag-code-server-'));
    for (const d of ['user', 'extensions', 'xdg', 'tmp', 'home']) mkdirSync(path.join(home, d), { recursive: true });
    mkdirSync(path.join(home, 'user', 'User'), { recursive: true });
    writeFileSync(
      path.join(home, 'user', 'User', 'settings.json'),
      JSON.stringify({
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        'security.workspace.trust.startupPrompt': 'never',
        'security.workspace.trust.banner': 'never',
        'telemetry.telemetryLevel': 'off',
        'extensions.autoCheckUpdates': false,
        'update.mode': 'none',
        'chat.disableAIFeatures': true,
        'workbench.secondarySideBar.defaultVisibility': 'hidden',
        ...opts.settings,
      }),
    );
    // nothing of an earlier run (or of the user running the tests) is seen: a home of its own, as on a fresh machine
    const env = {
      ...process.env,
      HOME: path.join(home, 'home'),
      XDG_CONFIG_HOME: path.join(home, 'xdg'),
      XDG_DATA_HOME: path.join(home, 'xdg'),
      XDG_CACHE_HOME: path.join(home, 'xdg'),
      TMPDIR: path.join(home, 'tmp'),
      ...opts.env,
    };
    const dirs = ['--user-data-dir', path.join(home, 'user'), '--extensions-dir', path.join(home, 'extensions')];
    // an extension installed the way users install it (a .vsix), instead of a development folder
    if (opts.install) execFileSync(h.node, [h.codeServer, ...dirs, '--install-extension', opts.install], { env, stdio: 'pipe', timeout: 120_000 });
    const port = await freePort();
    const args = [
      h.codeServer,
      '--bind-addr',
      `127.0.0.1:${port}`,
      '--auth',
      'none',
      ...dirs,
      '--disable-telemetry',
      '--disable-update-check',
      '--reconnection-grace-time',
      '5',
      '--vscode-option',
      'enable-smoke-test-driver',
      ...(opts.trust ? ['--disable-workspace-trust'] : []),
    ];
    const child = spawn(h.node, args, { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const cs = new CodeServer(port, home, child);
    child.stdout!.on('data', (d: Buffer) => (cs.log += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (cs.log += d.toString()));
    await cs.waitForListening();
    return cs;
  }

  private async waitForListening(): Promise<void> {
    const t0 = Date.now();
    while (Date.now() - t0 < 60_000) {
      if (this.child.exitCode !== null) throw new Error(`code-server exited with ${this.child.exitCode}:\n${this.log}`);
      try {
        const res = await fetch(`http://127.0.0.1:${this.port}/healthz`);
        if (res.ok) return;
      } catch {
        // not yet
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`code-server did not listen within 60 s:\n${this.log}`);
  }

  output(): string {
    return this.log;
  }

  /** The workbench URL for a folder, with a development extension (or none: installed ones only) and optionally its tests. */
  url(folder: string, extension?: string, tests?: string): string {
    const remote = (p: string): string => `vscode-remote://127.0.0.1:${this.port}${p}`;
    if (!extension) return `http://127.0.0.1:${this.port}/?folder=${encodeURIComponent(folder)}`;
    const payload: string[][] = [['extensionDevelopmentPath', remote(extension)]];
    if (tests) payload.push(['extensionTestsPath', remote(tests)]);
    return `http://127.0.0.1:${this.port}/?folder=${encodeURIComponent(folder)}&payload=${encodeURIComponent(JSON.stringify(payload))}`;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.pid) {
      try {
        process.kill(-this.child.pid, 'SIGTERM');
      } catch {
        // already gone
      }
      await new Promise((r) => setTimeout(r, 500));
      try {
        process.kill(-this.child.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    rmSync(this.home, { recursive: true, force: true });
  }
}

/** Headless Debian Chromium (playwright gives it a fresh profile); one page of 1400x900. */
export async function launchBrowser(h: Harness): Promise<{ browser: Browser; page: Page }> {
  const pw = createRequire(path.join(h.modules, 'noop.js'))('playwright-core') as { chromium: { launch(o: unknown): Promise<Browser> } };
  const browser = await pw.chromium.launch({
    executablePath: h.chromium,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  return { browser, page };
}
