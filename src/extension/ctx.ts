/**
 * What every command of the extension works over: the services (`Deps`: the language client, the views, the
 * interpreter, the log) and this window's session (`Session`: what the user agreed to, the pull waiting for Accept,
 * the workspace's memory, the last error shown), and how a command is registered.
 */
import * as vscode from 'vscode';
import type { IndexStatus, TreeNode } from '../shared/protocol';
import { fileNameProblem } from '../core/emit/moduleNames';
import type { BlockTreeProvider } from './blockTree';
import type { NnragClient } from './client';
import type { DependencyTreeProvider } from './dependencyTree';
import type { InterpreterService } from './interpreter';
import type { PulledBlocksProvider } from './pulledView';
import type { ValidationProblems } from './problems';

/** This window's session of the extension: created once at activation, passed to every command. */
export class Session {
  /** The user agreed, this session, to validate in a weaker sandbox than bubblewrap's. */
  weakSandboxAccepted = false;
  /** The last error a command showed the user (for the API the integration tests read). */
  lastErrorShown: string | undefined;
  /** The search box while it is open: the integration tests type into it (`NnragApi.typeInSearch`). */
  searchBox: vscode.QuickPick<vscode.QuickPickItem> | undefined;
  /** The question of the pull waiting for Accept or Cancel, while its notification is shown (undefined: none is). */
  pullQuestion: string | undefined;
  /** The pull waiting in a diff editor for Accept or Cancel (one at a time). */
  private pending: ((accepted: boolean) => void) | undefined;

  /** `memory`: the workspace's memory (the folder pulls were last written to, where requirements go). */
  constructor(readonly memory: vscode.Memento) {}

  /** Accepts (true) or cancels (false) the pull waiting in the diff editor; false when none waits. */
  settlePendingPull(accepted: boolean): boolean {
    const settle = this.pending;
    if (!settle) return false;
    settle(accepted);
    return true;
  }

  /**
   * A new pull waits (any earlier one is cancelled). `answer` resolves with the user's answer; `settle` answers this
   * pull only (a button of an older pull's notification, clicked late, answers nothing).
   */
  waitForPull(): { answer: Promise<boolean>; settle: (accepted: boolean) => boolean } {
    this.settlePendingPull(false);
    let mine: ((accepted: boolean) => void) | undefined;
    const answer = new Promise<boolean>((resolve) => {
      mine = (accepted) => {
        this.pending = undefined;
        void vscode.commands.executeCommand('setContext', 'nnrag.pullPending', false);
        resolve(accepted);
      };
      this.pending = mine;
    });
    return { answer, settle: (accepted) => this.pending === mine && this.settlePendingPull(accepted) };
  }
}

export interface Deps {
  client: NnragClient;
  tree: BlockTreeProvider;
  interpreter: InterpreterService;
  log: vscode.LogOutputChannel;
  storage: vscode.Uri;
  treeView: vscode.TreeView<TreeNode>;
  dependencies: DependencyTreeProvider;
  dependencyView: vscode.TreeView<unknown>;
  /** The Pulled Blocks view. */
  pulled: PulledBlocksProvider;
  /** The Problems panel's entries of pulled files (their verdicts). */
  problems: ValidationProblems;
  /** The index state as the server reports it. */
  indexChanged: vscode.Event<IndexStatus>;
  session: Session;
}

/** How a feature registers one command (errors logged and shown, see `register`). */
export type Reg = (id: string, fn: (...args: unknown[]) => unknown) => void;

/** Every command goes through here: errors are logged with their stack and shown with a Show Log button. */
export function register(
  context: vscode.ExtensionContext,
  id: string,
  log: vscode.LogOutputChannel,
  session: Session,
  fn: (...args: unknown[]) => unknown,
): void {
  context.subscriptions.push(
    vscode.commands.registerCommand(id, async (...args: unknown[]) => {
      try {
        return await fn(...args);
      } catch (err) {
        if (err instanceof vscode.CancellationError || (err as { code?: number })?.code === -32800) {
          log.info(`[command] ${id}: cancelled`);
          return undefined;
        }
        const message = err instanceof Error ? err.message : String(err);
        session.lastErrorShown = `NN-RAG: ${message}`;
        log.error(`[command] ${id}: ${err instanceof Error ? (err.stack ?? message) : message}`);
        const show = vscode.l10n.t('Show Log');
        // not awaited: the command ends now, the message stays until the user closes it
        void vscode.window.showErrorMessage(`NN-RAG: ${message}`, show).then((pick) => pick === show && log.show());
        return undefined;
      }
    }),
  );
}

/** Why a file name cannot hold a pulled block, or undefined when it can (the rules of core's fileNameProblem). */
export function checkFileName(name: string): string | undefined {
  return fileNameProblem(name);
}

/** The target a command was given: a string, a tree node or a search hit. */
export function targetOf(arg: unknown): string | undefined {
  if (typeof arg === 'string') return arg;
  const node = arg as TreeNode | undefined;
  return node?.hit?.target;
}

/** The repository a command was given: its name, or a repository node of the tree. */
export function repoNameOf(arg: unknown): string | undefined {
  return typeof arg === 'string' ? arg : (arg as TreeNode | undefined)?.kind === 'repo' ? (arg as TreeNode).repo : undefined;
}
