/** The memory and process-count cgroup a sandbox runs in, where the system lets us make one. */
import * as fs from 'fs';
import * as path from 'path';

/** A memory (and process count) cgroup of our own under the one we run in, where the system lets us make one. */
export class Cgroup {
  private constructor(
    readonly dirs: string[],
    private readonly memoryFile: string | undefined,
  ) {}

  private static counter = 0;

  static create(memoryMb: number): Cgroup | undefined {
    if (process.platform !== 'linux' || process.env.NNRAG_CGROUP === 'off') return undefined;
    let lines: string[];
    try {
      lines = fs.readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n');
    } catch {
      return undefined;
    }
    const name = `nnrag-${process.pid}-${Cgroup.counter++}`;
    const bytes = String(memoryMb * 1024 * 1024);
    const made: string[] = [];
    const attempt = (dir: string, files: [string, string][]): boolean => {
      try {
        fs.mkdirSync(dir);
      } catch {
        return false;
      }
      made.push(dir);
      try {
        for (const [file, value] of files) if (fs.existsSync(path.join(dir, file)) || !file.includes('memsw')) fs.writeFileSync(path.join(dir, file), value);
        return true;
      } catch {
        return false;
      }
    };
    const byController = new Map<string, string>();
    for (const line of lines) {
      const [, controllers, where] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
      if (controllers === undefined) continue;
      for (const c of controllers.split(',')) byController.set(c, where);
    }
    let memoryFile: string | undefined;
    const v1 = byController.get('memory');
    if (v1 !== undefined && fs.existsSync('/sys/fs/cgroup/memory/memory.limit_in_bytes')) {
      const dir = path.join('/sys/fs/cgroup/memory', v1, name);
      if (
        attempt(dir, [
          ['memory.limit_in_bytes', bytes],
          ['memory.memsw.limit_in_bytes', bytes],
        ])
      )
        memoryFile = path.join(dir, 'memory.failcnt');
      const pids = byController.get('pids');
      if (memoryFile && pids !== undefined && fs.existsSync('/sys/fs/cgroup/pids'))
        attempt(path.join('/sys/fs/cgroup/pids', pids, name), [['pids.max', '512']]);
    } else if (byController.has('') && fs.existsSync('/sys/fs/cgroup/cgroup.controllers')) {
      const dir = path.join('/sys/fs/cgroup', byController.get('') ?? '', name);
      if (
        attempt(dir, [
          ['memory.max', bytes],
          ['memory.swap.max', '0'],
          ['pids.max', '512'],
        ])
      )
        memoryFile = path.join(dir, 'memory.events');
    }
    if (!memoryFile) {
      for (const dir of made.reverse()) tryRmdir(dir);
      return undefined;
    }
    return new Cgroup(made, memoryFile);
  }

  /** The files a process writes its pid to, to join. */
  get procs(): string[] {
    return this.dirs.map((d) => path.join(d, 'cgroup.procs'));
  }

  /** Whether the memory limit was hit. */
  hitLimit(): boolean {
    try {
      const text = fs.readFileSync(this.memoryFile!, 'utf8');
      return /^\d+$/.test(text.trim()) ? Number(text) > 0 : /(?:^|\n)oom_kill [1-9]/.test(text) || /(?:^|\n)max [1-9]/.test(text);
    } catch {
      return false;
    }
  }

  /** Kills every process still in the group. */
  killAll(): void {
    for (const file of this.procs) {
      try {
        for (const pid of fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
          try {
            process.kill(Number(pid), 'SIGKILL');
          } catch {
            // gone
          }
        }
      } catch {
        // the group is gone
      }
    }
  }

  release(): void {
    this.killAll();
    for (const dir of [...this.dirs].reverse()) tryRmdir(dir);
  }
}

function tryRmdir(dir: string): void {
  for (let i = 0; i < 20; i++) {
    try {
      fs.rmdirSync(dir);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      // processes still leaving the group: the kernel empties it shortly
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 25);
    }
  }
}
