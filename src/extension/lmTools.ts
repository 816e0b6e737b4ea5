/**
 * NN-RAG for the agents in VS Code: language-model tools (search, describe, pull) and the `nn-rag mcp` server
 * definition, for VS Code versions that have these APIs (1.95+ and 1.101+); older ones simply do not get them.
 * The pull tool follows the command's rules: it says what it will write before it runs (the tool's confirmation), it
 * writes into the workspace's pull folder, and it validates only in a trusted workspace with the selected interpreter.
 */
import * as path from 'path';
import * as vscode from 'vscode';
import { GetBlockDetails, SearchBlocks } from '../shared/protocol';
import type { Deps } from './ctx';
import { checkFileName } from './ctx';
import { pullIntoWorkspace } from './pullIntoWorkspace';
import { assistantFileProblem, snakeCase } from '../core/emit/moduleNames';
import { setting } from './config';

/** The parts of the language-model tools API this file uses (typed here: the extension builds against VS Code 1.90's types). */
interface ToolInvocation<T> {
  input: T;
}
interface Tool<T> {
  invoke(options: ToolInvocation<T>, token: vscode.CancellationToken): Promise<unknown>;
  prepareInvocation?(
    options: ToolInvocation<T>,
    token: vscode.CancellationToken,
  ): { invocationMessage?: string; confirmationMessages?: { title: string; message: string | vscode.MarkdownString } } | undefined;
}
interface LmApi {
  registerTool?<T>(name: string, tool: Tool<T>): vscode.Disposable;
  registerMcpServerDefinitionProvider?(id: string, provider: { provideMcpServerDefinitions(): unknown[] }): vscode.Disposable;
}
interface LmClasses {
  LanguageModelToolResult?: new (parts: unknown[]) => unknown;
  LanguageModelTextPart?: new (text: string) => unknown;
  McpStdioServerDefinition?: new (label: string, command: string, args: string[], env?: Record<string, string>) => unknown;
}

export function registerLanguageModelTools(context: vscode.ExtensionContext, deps: Deps, storageDir: string): void {
  const lm = (vscode as unknown as { lm?: LmApi }).lm;
  const classes = vscode as unknown as LmClasses;
  const { LanguageModelToolResult: Result, LanguageModelTextPart: Text } = classes;
  if (lm?.registerTool && Result && Text) {
    const text = (value: unknown): unknown => new Result([new Text(typeof value === 'string' ? value : JSON.stringify(value, null, 1))]);
    context.subscriptions.push(
      lm.registerTool<{ query: string; repository?: string; category?: string; limit?: number }>('nnrag_searchBlocks', {
        async invoke({ input }, token) {
          const hits = await deps.client.request(
            SearchBlocks,
            { text: input.query, repo: input.repository, category: input.category, limit: Math.min(50, input.limit ?? 10) },
            token,
          );
          return text(
            hits.map((h) => ({
              target: h.target,
              signature: `${h.name}${h.signature || '()'}`,
              summary: h.doc.split('\n')[0] ?? '',
              category: h.category,
              validation: h.validation,
              provenance: `${h.repo} ${h.path}:${h.line}`,
            })),
          );
        },
      }),
      lm.registerTool<{ target: string }>('nnrag_describeBlock', {
        async invoke({ input }, token) {
          return text(await deps.client.request(GetBlockDetails, { target: input.target }, token));
        },
      }),
      lm.registerTool<{ target: string; fileName?: string }>('nnrag_pullBlock', {
        prepareInvocation({ input }) {
          const folder = vscode.workspace.workspaceFolders?.[0];
          const name = input.fileName ?? `${snakeCase(input.target.split('.').pop() ?? 'block')}.py`;
          const where = folder ? path.join(setting('pullFolder', folder.uri), name) : name;
          const runs = vscode.workspace.isTrusted
            ? vscode.l10n.t('then validate it by running it with {0} in a sandbox', deps.interpreter.current().path)
            : vscode.l10n.t('without running it (the workspace is not trusted)');
          return {
            invocationMessage: vscode.l10n.t('Pulling {0}', input.target),
            confirmationMessages: {
              title: vscode.l10n.t('Pull {0}?', input.target),
              message: vscode.l10n.t('NN-RAG will write {0} in the workspace, {1}.', where, runs),
            },
          };
        },
        async invoke({ input }) {
          const name = input.fileName ?? `${snakeCase(input.target.split('.').pop() ?? 'block')}.py`;
          const folder = vscode.workspace.workspaceFolders?.[0];
          const refused = checkFileName(name) ?? assistantFileProblem(path.join(folder ? setting('pullFolder', folder.uri) : '', name), '');
          if (refused) return text(`not pulled: ${refused}`);
          const report = await pullIntoWorkspace(deps, input.target, name, { confirmed: true });
          if (!report) return text('not pulled');
          return text({
            path: report.out,
            status: report.status,
            tier: report.tier,
            category: report.category,
            message: report.message,
            validated: report.status === 'validated',
            trusted: vscode.workspace.isTrusted,
          });
        },
      }),
    );
  }
  // other agents in the editor can start the MCP server on the extension's own index (read-only while the
  // language server writes it)
  if (lm?.registerMcpServerDefinitionProvider && classes.McpStdioServerDefinition) {
    const Definition = classes.McpStdioServerDefinition;
    const cli = vscode.Uri.joinPath(context.extensionUri, 'dist', 'cli.js').fsPath;
    context.subscriptions.push(
      lm.registerMcpServerDefinitionProvider('nnrag.mcp', {
        provideMcpServerDefinitions: () => [
          new Definition('NN-RAG', process.execPath, [cli, 'mcp', '--db', path.join(storageDir, 'index.db')], { ELECTRON_RUN_AS_NODE: '1' }),
        ],
      }),
    );
  }
}
