/**
 * Neutral specifications: a JSON description of a block without its code, fit for training or prompting a language
 * model without redistributing source. Constructor and forward parameters (types and defaults as written), the
 * layers `__init__` builds, the tensors the validator saw go in and out, the dependency graph by name, category,
 * duplicates and provenance. Its shape is `spec.schema.json` next to this file.
 */
import type { SyntaxNode as Node } from '../parse/syntax';
import type { ClassRef } from '../store/target';
import type { DependencyGraph } from '../emit/emit';
import type { IndexDb } from '../store/database';
import type { PythonParser } from '../parse/parser';
import { pullBlock } from '../pull/pull';
import { openPullSession } from '../pull/session';
import type { PullSession } from '../pull/session';
import { describeClass } from '../resolve/describe';
import { loadModuleTable } from '../resolve/loadTable';
import { readClassFile } from '../store/sourceText';

export const SPEC_SCHEMA = 'nn-rag/spec@1';

export interface ParamSpec {
  name: string;
  kind: 'positional-only' | 'positional-or-keyword' | 'keyword-only' | 'var-positional' | 'var-keyword';
  annotation: string | null;
  default: string | null;
  required: boolean;
}

export interface LayerSpec {
  attribute: string;
  /** The callable as written (`nn.Conv2d`, `ConvNormAct`, `nn.ModuleList`). */
  type: string;
  /** The arguments as written, shortened. */
  args: string;
}

export interface BlockSpec {
  schema: typeof SPEC_SCHEMA;
  target: string;
  name: string;
  category: string;
  abstract: boolean;
  summary: string;
  bases: { written: string; resolved: string }[];
  constructor_params: ParamSpec[];
  forward: { params: ParamSpec[]; returns: string | null };
  layers: LayerSpec[];
  methods: string[];
  tensors: {
    status: string;
    tier: string | null;
    args: unknown[] | null;
    kwargs: Record<string, unknown> | null;
    inputs: unknown;
    outputs: unknown;
  } | null;
  dependencies: DependencyGraph & { third_party: string[] };
  duplicates: { copies: number; repositories: number; original: string | null };
  provenance: {
    repository: string;
    url: string | null;
    commit: string | null;
    license: string | null;
    path: string;
    lines: [number, number];
    blob: string;
    swhid: string;
  };
}

const short = (s: string, max = 160): string => {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
};

function paramsOf(parameters: Node | null, dropSelf: boolean): ParamSpec[] {
  const out: ParamSpec[] = [];
  let kind: ParamSpec['kind'] = 'positional-or-keyword';
  for (const p of parameters?.namedChildren ?? []) {
    if (!p) continue;
    const get = (f: string): string | null => p.childForFieldName(f)?.text ?? null;
    switch (p.type) {
      case 'identifier':
        out.push({ name: p.text, kind, annotation: null, default: null, required: true });
        break;
      case 'typed_parameter': {
        const inner = p.namedChildren.find((c) => c && c.type !== 'type');
        const ann = get('type');
        if (inner?.type === 'list_splat_pattern') {
          out.push({ name: inner.text.replace(/^\*/, ''), kind: 'var-positional', annotation: ann, default: null, required: false });
          kind = 'keyword-only';
        } else if (inner?.type === 'dictionary_splat_pattern') {
          out.push({ name: inner.text.replace(/^\*\*/, ''), kind: 'var-keyword', annotation: ann, default: null, required: false });
        } else out.push({ name: inner?.text ?? p.text, kind, annotation: ann, default: null, required: true });
        break;
      }
      case 'default_parameter':
      case 'typed_default_parameter':
        out.push({ name: get('name') ?? '', kind, annotation: get('type'), default: short(get('value') ?? ''), required: false });
        break;
      case 'list_splat_pattern':
        out.push({ name: p.text.replace(/^\*/, ''), kind: 'var-positional', annotation: null, default: null, required: false });
        kind = 'keyword-only';
        break;
      case 'dictionary_splat_pattern':
        out.push({ name: p.text.replace(/^\*\*/, ''), kind: 'var-keyword', annotation: null, default: null, required: false });
        break;
      case 'keyword_separator':
        kind = 'keyword-only';
        break;
      case 'positional_separator':
        for (const q of out) if (q.kind === 'positional-or-keyword') q.kind = 'positional-only';
        break;
      default:
        break;
    }
  }
  return dropSelf && out[0] && (out[0].name === 'self' || out[0].name === 'cls') ? out.slice(1) : out;
}

/** `self.x = Callable(...)` in `__init__` (also under if/for/with): the layers the block builds. */
function layersOf(init: Node | null): LayerSpec[] {
  const layers: LayerSpec[] = [];
  const visit = (n: Node): void => {
    if (n.type === 'function_definition' || n.type === 'class_definition' || n.type === 'lambda') return;
    if (n.type === 'assignment') {
      const left = n.childForFieldName('left');
      const right = n.childForFieldName('right');
      // `A(...)`, `(A(...))`, and `A(...) if c else B(...)` (type `A | B`)
      const calls: Node[] = [];
      const collect = (e: Node | null): void => {
        if (!e) return;
        if (e.type === 'call') calls.push(e);
        else if (e.type === 'parenthesized_expression') collect(e.namedChildren.find((c) => c && c.type !== 'comment') ?? null);
        else if (e.type === 'conditional_expression') {
          collect(e.namedChild(0));
          collect(e.namedChild(2));
        }
      };
      collect(right);
      if (left?.type === 'attribute' && left.childForFieldName('object')?.text === 'self' && calls.length) {
        layers.push({
          attribute: left.childForFieldName('attribute')?.text ?? '',
          type: calls.map((c) => c.childForFieldName('function')?.text ?? '').join(' | '),
          args: short(calls[0].childForFieldName('arguments')?.text ?? '()'),
        });
      }
    }
    for (const c of n.namedChildren) if (c) visit(c);
  };
  for (const c of init?.childForFieldName('body')?.namedChildren ?? []) if (c) visit(c);
  return layers;
}

/** Parameters and layers from the class's own text (dedented, parsed alone). */
export function shapeOfClass(
  parser: PythonParser,
  classText: string,
): { init: ParamSpec[]; forward: ParamSpec[]; returns: string | null; layers: LayerSpec[] } {
  const lines = classText.split('\n');
  const indent = Math.min(...lines.filter((l) => l.trim()).map((l) => /^\s*/.exec(l)![0].length));
  const text = lines.map((l) => l.slice(indent)).join('\n');
  return parser.withTree(text, (root) => {
    const cls = root.namedChildren
      .map((c) => (c?.type === 'decorated_definition' ? c.childForFieldName('definition') : c))
      .find((c) => c?.type === 'class_definition');
    const methods = new Map<string, Node>();
    for (const stmt of cls?.childForFieldName('body')?.namedChildren ?? []) {
      const def = stmt?.type === 'decorated_definition' ? stmt.childForFieldName('definition') : stmt;
      if (def?.type === 'function_definition') methods.set(def.childForFieldName('name')?.text ?? '', def);
    }
    const init = methods.get('__init__') ?? null;
    const forward = methods.get('forward') ?? null;
    return {
      init: paramsOf(init?.childForFieldName('parameters') ?? null, true),
      forward: paramsOf(forward?.childForFieldName('parameters') ?? null, true),
      returns: forward?.childForFieldName('return_type')?.text ?? null,
      layers: layersOf(init),
    };
  });
}

export async function blockSpec(
  db: IndexDb,
  ref: ClassRef,
  parser: PythonParser,
  session: PullSession = openPullSession(db, loadModuleTable(db)),
): Promise<BlockSpec> {
  const details = describeClass(db, ref, session.table);
  const { text, blob } = await readClassFile(db, ref);
  const classText = text
    .split('\n')
    .slice(ref.line - 1, ref.endLine)
    .join('\n');
  const shape = classText ? shapeOfClass(parser, classText) : { init: [], forward: [], returns: null, layers: [] };
  // the closure as a pull computes it, in memory (no file, no validation)
  const pulled = await pullBlock(session, ref, { parser, validate: false });
  const row = db.get('SELECT c.validation, c.dup_lex FROM classes c WHERE c.id = ?', [ref.id])!;
  const v = row.validation ? (JSON.parse(String(row.validation)) as Record<string, unknown>) : null;
  const group = row.dup_lex === null ? null : Number(row.dup_lex);
  const copies = group === null ? null : db.get('SELECT count(*) AS n, count(DISTINCT repo_id) AS r FROM classes WHERE is_block = 1 AND dup_lex = ?', [group]);
  const original = group === null ? null : db.get('SELECT repo, module, name FROM classes WHERE id = ?', [group]);
  return {
    schema: SPEC_SCHEMA,
    target: details.target,
    name: details.name,
    category: details.category,
    abstract: details.abstract,
    summary: short(details.doc.split(/\n\s*\n/)[0] ?? '', 400),
    bases: details.bases,
    constructor_params: shape.init,
    forward: { params: shape.forward, returns: shape.returns },
    layers: shape.layers,
    methods: details.methods,
    tensors: v
      ? {
          status: String(v.status ?? 'unknown'),
          tier: (v.tier as string | null) ?? null,
          args: (v.args as unknown[]) ?? null,
          kwargs: (v.kwargs as Record<string, unknown>) ?? null,
          inputs: v.input_shapes ?? null,
          outputs: v.output_shapes ?? null,
        }
      : null,
    dependencies: { ...(pulled.graph ?? { nodes: [], edges: [] }), third_party: pulled.imports },
    duplicates: {
      copies: Number(copies?.n ?? 1),
      repositories: Number(copies?.r ?? 1),
      original: original ? `${String(original.repo)}:${String(original.module)}.${String(original.name)}` : null,
    },
    provenance: {
      repository: details.repo,
      url: details.url,
      commit: details.commit,
      license: details.license,
      path: details.path,
      lines: [details.line, details.endLine],
      blob,
      swhid: `swh:1:cnt:${blob}`,
    },
  };
}
