/** The `nn-rag` command line: the core, in-process, for terminals, CI and batch extraction. */
import { NnragError } from '../core/base/errors';
import { CLEAR_LINE, EXIT, reportError, terminalSafe } from './env';
import type { CliEnv } from './env';
import { COMMANDS, commandHelp, didYouMean, HELP } from './help';
import { indexCommand, mergeCommand, statsCommand } from './indexCommands';
import { contextCommand, mcpCommand } from './mcpCommands';
import { observeCommand } from './observeCommands';
import { pullCommand, validateCommand } from './pullCommands';
import { searchCommand, showCommand } from './searchCommands';
import { serveCommand } from './serveCommands';
import { reportCommand, specCommand } from './specCommands';
import { exportCommand, importCommand } from './shareCommands';
import { statusCommand, updateCommand } from './updateCommands';
import { VERSION } from '../shared/version';

export type { CliAssets, CliEnv } from './env';

export async function runCli(argv: string[], rawEnv: CliEnv): Promise<number> {
  // our own progress redraw is the only control sequence that reaches the terminal
  const env: CliEnv = {
    ...rawEnv,
    out: (t) => rawEnv.out(terminalSafe(t)),
    err: (t) => rawEnv.err(t.startsWith(CLEAR_LINE) ? CLEAR_LINE + terminalSafe(t.slice(CLEAR_LINE.length)) : terminalSafe(t)),
  };
  const [command, ...rest] = argv;
  try {
    // `nn-rag pull --help`: that command's usage
    if (command && (rest.includes('--help') || rest.includes('-h'))) {
      const help = commandHelp(command);
      if (help) {
        env.out(help);
        return EXIT.ok;
      }
    }
    switch (command) {
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        env.out(HELP);
        return command === undefined ? EXIT.usage : EXIT.ok;
      case '--version':
        env.out(`${VERSION}\n`);
        return EXIT.ok;
      case 'index':
        return await indexCommand(rest, env);
      case 'observe':
        return await observeCommand(rest, env);
      case 'merge':
        return await mergeCommand(rest, env);
      case 'search':
        return await searchCommand(rest, env);
      case 'show':
        return await showCommand(rest, env);
      case 'stats':
        return await statsCommand(rest, env);
      case 'pull':
        return await pullCommand(rest, env);
      case 'validate':
        return await validateCommand(rest, env);
      case 'spec':
        return await specCommand(rest, env);
      case 'report':
        return await reportCommand(rest, env);
      case 'status':
        return await statusCommand(rest, env);
      case 'update':
        return await updateCommand(rest, env);
      case 'mcp':
        return await mcpCommand(rest, env);
      case 'serve':
        return await serveCommand(rest, env);
      case 'context':
        return await contextCommand(rest, env);
      case 'export':
        return await exportCommand(rest, env);
      case 'import':
        return await importCommand(rest, env);
      default:
        throw new NnragError('usage', `unknown command '${command}'${didYouMean(command, COMMANDS, 'nn-rag ')}; run 'nn-rag --help'`);
    }
  } catch (err) {
    return reportError(err, env);
  }
}
