/** The MCP server's latency as a code assistant meets it. */
import * as path from 'path';
import { performance } from 'perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { ROOT, percentile, r2 } from './common';

/** Latency of search_blocks (the labeled queries) and describe_block (the first hit of 20 of them) through `nn-rag mcp`. */
export async function mcpLatency(dbFile: string, queries: string[]): Promise<Record<string, number>> {
  const cliJs = path.join(ROOT, 'dist', 'cli.js');
  const client = new Client({ name: 'nnrag-bench', version: '1' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [cliJs, 'mcp', '--db', dbFile], stderr: 'ignore' }));
  try {
    const searchMs: number[] = [];
    const targets: string[] = [];
    for (const q of queries) {
      const t0 = performance.now();
      const r = (await client.callTool({ name: 'search_blocks', arguments: { query: q, limit: 10 } })) as { content: { text: string }[] };
      searchMs.push(performance.now() - t0);
      const first = (JSON.parse(r.content[0].text) as { target: string }[])[0];
      if (first && targets.length < 20) targets.push(first.target);
    }
    const describeMs: number[] = [];
    for (const target of targets) {
      const t0 = performance.now();
      await client.callTool({ name: 'describe_block', arguments: { target } });
      describeMs.push(performance.now() - t0);
    }
    return {
      mcp_search_p50_ms: r2(percentile(searchMs, 50)),
      mcp_search_p95_ms: r2(percentile(searchMs, 95)),
      mcp_describe_p50_ms: r2(percentile(describeMs, 50)),
      mcp_describe_p95_ms: r2(percentile(describeMs, 95)),
    };
  } finally {
    await client.close();
  }
}
