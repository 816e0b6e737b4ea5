/** Entry of the language server: creates the connection and starts the server. */
import { createConnection, ProposedFeatures, StreamMessageReader, StreamMessageWriter } from 'vscode-languageserver/node';
import { FrameGuard } from './frames';
import { startServer } from './server';

// over stdio, malformed frames from a broken client are dropped instead of stopping the reader for good
const connection = process.argv.includes('--stdio')
  ? createConnection(
      ProposedFeatures.all,
      new StreamMessageReader(process.stdin.pipe(new FrameGuard((why) => process.stderr.write(`[lsp] dropped ${why}\n`)))),
      new StreamMessageWriter(process.stdout),
    )
  : createConnection(ProposedFeatures.all);
startServer(connection);
