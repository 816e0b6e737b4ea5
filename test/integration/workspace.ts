/** A throw-away workspace for the real-VS-Code tests: a copy of examples/tinyblocks and a folder whose settings index it. */
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'fs';
import * as os from 'os';
import * as path from 'path';

export const ROOT = path.resolve(__dirname, '..', '..');

export interface TestWorkspace {
  root: string;
  folder: string;
  fixture: string;
}

/** `preview: false` writes pulled files at once: in the extension-test mode the Refactor Preview resolves without applying. */
export function makeWorkspace(python: string, { preview = true }: { preview?: boolean } = {}): TestWorkspace {
  const root = mkdtempSync(path.join(os.tmpdir(), 'nnrag-it-'));
  const fixture = path.join(root, 'tinyblocks');
  cpSync(path.join(ROOT, 'examples', 'tinyblocks'), fixture, { recursive: true });
  const folder = path.join(root, 'workspace');
  mkdirSync(path.join(folder, '.vscode'), { recursive: true });
  writeFileSync(
    path.join(folder, '.vscode', 'settings.json'),
    JSON.stringify(
      {
        'nnrag.repositories': [{ location: fixture, name: 'tinyblocks' }],
        'nnrag.pythonPath': python,
        'nnrag.pullFolder': 'blocks',
        'nnrag.pull.preview': preview,
      },
      null,
      2,
    ),
  );
  writeFileSync(path.join(folder, 'train.py'), '"""A user\'s project: pulled blocks go into blocks/."""\n');
  return { root, folder, fixture };
}
