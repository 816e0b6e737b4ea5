/** The text of `nn-rag --help`, each command's own help, and suggestions for mistyped names. */
import { closest, distance } from 'fastest-levenshtein';

export const HELP = `nn-rag: find PyTorch nn.Module blocks across repositories and pull a validated copy

usage:
  nn-rag index SOURCE... [--db F] [--name N] [--ref R] [--include G]... [--exclude G]... [--symbols G]...
                         [--priority P] [--python-env PY --packages a,b] [--cache DIR]
                         [--dup-lexical J] [--dup-structural J] [--inline | --no-inline] [--max-file-kb KB] [--json]
                         [--shard K/N | --shard auto [--shard-count N]]
                         --inline / --no-inline: pulls from other repositories always inline / import this one
                         --shard: this machine's part of the SOURCEs (stable by name); then nn-rag merge
  nn-rag merge SHARD_DB... --db F [--json]          the shards' indexes as one (blocks and duplicate groups found
                                                    again over all of it, the units caches joined)
  nn-rag observe [REPO...] [--db F] [--python PY] [--memory-mb MB] [--entry-seconds S] [--seconds S] [--max-entries N]
                 [--force] [--build-native] [--cache DIR] [--json]
                     runs each local repository's tests (test_* functions once per parameter set of their
                     parametrize marks, test classes and their mixins), builders (functions and whole models that need no
                     argument, fed once), config files' model dicts (built by its registry) and README code blocks
                     that use it, in the sandbox, and
                     records how they built and fed its blocks; pulls then build and feed a block that way first;
                     an entry runs again only when a file it imported or read changed;
                     --build-native: builds the repository's compiled operators its tests stop without (as pull does)
                     and runs those tests again with them; every entry runs, two judges side by side, unless
                     --max-entries N caps them (--seconds: the time of each repository, default 3600); a test
                     that writes into its repository writes into a private copy of it
  nn-rag search QUERY [--db F]... [--repo R] [--category C] [--kind block|abstract|class] [--limit N]
                      [--validation validated|failed|none] [--all-copies] [--embeddings URL [--embedding-model M]] [--json]
                                                    several --db: searched together, merged by score
                                                    --embeddings: the first results ranked again by an embedding
                                                    model you serve on this machine (OpenAI-compatible
                                                    /v1/embeddings, e.g. Ollama's; loopback only; default model
                                                    nomic-embed-text; or NNRAG_EMBEDDINGS, NNRAG_EMBEDDING_MODEL)
                      [--server URL]...             also the team's search servers (nn-rag serve; or NNRAG_SERVERS,
                                                    addresses separated by spaces): merged by score, each hit naming
                                                    its server; a server that fails leaves the others, with a warning
  nn-rag show TARGET [--db F] [--calls] [--json]
                     --calls: how the repository's own tests built and fed the block (see observe)
  nn-rag show --deps TARGET [--db F] [--python PY] [--inline | --no-inline] [--whole-classes] [--full-docstrings]
                          [--limit N] [--json]
                     the file a pull would write: the block's lines, the lines pulled in, and for the N largest
                     definitions pulled in (default 10) the chain of references that needs each
  nn-rag pull TARGET [--db F] --out FILE [--force] [--dry-run] [--python PY] [--no-validate] [--timeout S] [--json]
                     [--memory-mb MB] [--inline | --no-inline] [--whole-classes] [--full-docstrings] [--requirements]
                     [--pep723] [--build-native [--cache DIR]] [--full]
                     --dry-run prints what the pull would write as a unified diff and writes nothing
                     --whole-classes copies every class the block needs whole (else they keep the methods reached)
                     --full-docstrings keeps the whole docstrings of what is pulled in (else their first paragraph)
                     --full keeps every definition the block reaches (else a validated file leaves out the code of
                     other modules its original never ran, where the file without it gets as far)
                     --pep723 writes the file's dependencies into its header as PEP 723 inline metadata (uv run FILE)
                     --build-native builds a compiled operator of the repository the block needs from its C++
                     sources (CPU; g++, ninja and the interpreter's torch headers), in the sandbox, cached under
                     --cache/native; it is written into _nnrag_native/ beside the file
                     --force replaces a file that was not pulled, or was edited since (see update)
                     code of other indexed repositories is inlined when --python cannot import them,
                     else imported (a block of an installed package imports the rest of that package);
                     --inline inlines all of it, --no-inline imports all of it
  nn-rag pull TARGET TARGET... --out-dir DIR [the options of one pull]
                     each block into DIR/<its name in snake case>.py; what several of them need is written once into
                     DIR/_nnrag_common.py and imported by each
  nn-rag pull --all | --from names.json [--db F] --out-dir DIR [--repo R] [--limit N] [--start-from N] [--python PY]
              [--jobs N] [--no-pool] [--no-observe] [--shard K/N | --shard auto [--shard-count N]] [--json]
                                                    observes the blocks' local repositories first (see observe;
                                                    unchanged entries are kept), unless --no-observe
                                                    validation in N warm interpreters (default: one per core);
                                                    --shard: this machine's part (stable by target), its own
                                                    report.shard-K-of-N.json, the index only read; auto reads
                                                    SLURM_ARRAY_TASK_ID/COUNT or JOB_COMPLETION_INDEX
  nn-rag validate FILE [--db F] [--python PY] [--class NAME] [--timeout S] [--memory-mb MB] [--cache DIR] [--json]
                                                    a pulled file is compared with the original its header names;
                                                    the original's run is kept in --cache/originals, so a file
                                                    validated again (after an edit too) runs only its copy
  nn-rag stats [--db F] [--json]
  nn-rag spec TARGET [--db F]                       a neutral JSON specification of a block (no code)
  nn-rag spec --all [--repo R] [--limit N] --out-dir DIR [--db F] [--json]
  nn-rag status [PATH...] [--db F] [--json]        pulled files: upstream changed, edited locally, conflicts left
                                                    by an update (exit 1 if out of date or conflicted)
  nn-rag update PATH... [--db F] [--dry-run] [--python PY | --no-validate] [--timeout S] [--memory-mb MB] [--json]
                                                    pull pulled files again, keeping your edits (3-way merge);
                                                    --dry-run prints the diff; updated files are validated again
  nn-rag mcp [--db F] [--root DIR]... [--allow-validate] [--python PY] [--embeddings URL [--embedding-model M]]
             [--server URL]...
                                                    a Model Context Protocol server over stdio for code assistants:
                                                    tools search_blocks, describe_block, pull_block (writes only under
                                                    the client's roots or --root; runs code only with --allow-validate),
                                                    list_repositories, index_status, get_context; --embeddings and
                                                    --server as for search
  nn-rag serve [--db F]... [--host H] [--port N] [--allow-host NAME]...
                                                    the indexes searched over HTTP for a team (GET /v1/search?q=...,
                                                    /v1/status), each held once in memory here instead of copied to
                                                    every editor (nnrag.search.servers, search --server); read only,
                                                    read again when saved again; 127.0.0.1 unless --host (0.0.0.0:
                                                    the network); port 7723; answers requests for its addresses and
                                                    this machine's name, and --allow-host names (a page in a browser
                                                    that points a name of its own here reads nothing)
  nn-rag context QUERY [--db F] [--limit N]         the best N blocks (default 3) for a prompt, as JSON
  nn-rag report --from DIR/report.json [--db F] [--html FILE] [--json]
                                                    the batch extraction report as tables, or a page
  nn-rag export --db F --to ARCHIVE [--json]        the index, its units cache, the indexed files' sources and a
                                                    manifest (repositories, commits, parser version, sha256 of each
                                                    file) as one .tgz for the team: it pulls on any machine
  nn-rag import ARCHIVE|URL --db F [--force] [--max-size-mb N] [--allow-redirects] [--json]
                                                    the archive's index in place of F, once every file is checked;
                                                    a tampered, foreign, stale or damaged archive, or one over
                                                    N MB (default 2048), is refused, F unchanged; from an http(s)
                                                    URL, run again to update (ETag: downloaded again only when it
                                                    changed); redirects only to the same origin unless allowed
  nn-rag report --merge REPORTS... --out FILE [--db F] [--json]
                                                    the shards' reports as one; with --db, their verdicts recorded
                                                    in the index (exit 1 when a shard is missing)

SOURCE is a local folder (its basename names the repository) or an http(s) git URL.
TARGET is module.path.ClassName, or repo:module.path.ClassName where two repositories share module paths.
Duplicates: copies of a block are grouped at three levels (exact text, lexical and structural near-duplicates
with Jaccard >= 0.90 unless --dup-lexical/--dup-structural say otherwise); search lists a group once, as its
original (by priority, then age), unless --all-copies. \`stats --json\` counts unique blocks per level.
The database defaults to .nnrag/index.db in the current folder; git clones are cached in --cache
(default: $XDG_CACHE_HOME/nn-rag or ~/.cache/nn-rag).

exit codes:
  0    success
  1    the work ran but did not succeed (a pull that did not validate, a failed clone)
  2    usage error (unknown command or option, bad target)
  3    bad input (a missing folder, a bad URL, an unreadable database, a missing interpreter)
  130  cancelled (Ctrl-C)
`;

/** The usage lines of one command, cut from HELP (one source for both), with the exit codes. */
export function commandHelp(command: string): string | undefined {
  const lines = HELP.split('\n');
  const out: string[] = [];
  let inside = false;
  for (const line of lines) {
    if (/^ {2}nn-rag \S/.test(line)) inside = line.startsWith(`  nn-rag ${command} `) || line === `  nn-rag ${command}`;
    else if (!/^ {3,}\S/.test(line)) inside = false;
    if (inside) out.push(line);
  }
  if (!out.length) return undefined;
  const exit = HELP.slice(HELP.indexOf('exit codes:'));
  return `usage:\n${out.join('\n')}\n\n${exit}`;
}

export const COMMANDS = [
  'index',
  'observe',
  'search',
  'show',
  'stats',
  'pull',
  'validate',
  'spec',
  'report',
  'status',
  'update',
  'mcp',
  'serve',
  'context',
  'export',
  'import',
  'merge',
  'help',
];

/** "; did you mean X?" for a mistyped name close to one of `known`, else nothing. */
export function didYouMean(typed: string, known: string[], prefix = ''): string {
  if (!known.length) return '';
  const best = closest(typed, known);
  return distance(typed, best) <= Math.max(1, Math.floor(best.length / 3)) ? `; did you mean ${prefix}${best}?` : '';
}
