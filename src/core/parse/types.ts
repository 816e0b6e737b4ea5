import type { Fingerprint } from './fingerprint';
/** Module facts: what one pass over a Python file learns. Stored (lean) in the index, used by every layer. */

export type Timing = 'def' | 'call';

/** One import statement (or one name of it), wherever it stands in the file. */
export interface ImportFact {
  kind: 'import' | 'from' | 'star';
  /** Dotted module as written, without the leading dots of a relative import. */
  module: string;
  /** Number of leading dots (0 for absolute imports). */
  level: number;
  /** For `from`: the imported name; for `import a.b`: undefined. */
  name?: string;
  /** The name bound in the importing scope (`as` alias, or the first part of a plain dotted import). */
  bound?: string;
  line: number;
  /** Inside a function body: runs at call time. */
  inFunction: boolean;
  /** Under `if TYPE_CHECKING:`: never runs. */
  typeChecking: boolean;
  /** Under a top-level `try` or `if`. */
  guarded: boolean;
  /** The top-level unit that holds the import. */
  unit: number;
}

export type UnitKind = 'class' | 'function' | 'assign' | 'import' | 'expr' | 'compound' | 'main' | 'other';

/** A top-level statement of a module: the smallest piece the emitter copies. */
export interface Unit {
  kind: UnitKind;
  /** Name of the class or function (also for decorated ones). */
  name?: string;
  /** Names this statement binds at module level. */
  binds: string[];
  /** Free (module-scope or builtin) names the statement needs when it runs at import time. */
  defNames: string[];
  /** Free names needed only when a function defined here is called. */
  callNames: string[];
  /** Offsets in UTF-16 code units of the decoded text, end exclusive. */
  start: number;
  end: number;
  /** 1-based lines, inclusive. */
  startLine: number;
  endLine: number;
  /** For compound statements: which kind of guard. */
  guard?: 'try' | 'if' | 'type-checking';
}

/** A reference from a unit to a module-scope name, with the attribute chain that follows it. */
export interface Ref {
  name: string;
  start: number;
  end: number;
  timing: Timing;
  /** `a.b.c` gives attrs ['b', 'c'] and attrEnds the end offset of `a.b` and `a.b.c`. */
  attrs: string[];
  attrEnds: number[];
}

export interface BindSite {
  name: string;
  start: number;
  end: number;
}

/** A string literal that may name a registered class (`dict(type="MLPHead")`). */
export interface StringRef {
  value: string;
  timing: Timing;
  /** Offset of the literal. */
  at: number;
}

/** A method of a top-level class (with its decorators): a piece a pulled file may leave out. */
export interface Member {
  name: string;
  start: number;
  end: number;
}

/** The body of a top-level class: its methods, and how many statements it has in all (comments aside). */
export interface ClassBody {
  statements: number;
  methods: Member[];
}

export interface RegistryUse {
  /** The registry expression, e.g. `MODELS`. */
  registry: string;
  /** The name it is registered under (`name=...`), else the class's own name. */
  alias?: string;
  /** For `X.register_module(module=C)` calls: the class (dotted when it is another module's: `nn.GELU`). */
  target?: string;
  /** For calls: the top-level statement that makes them (an `if`, a `for` over the classes, or the call itself). */
  unit?: number;
}

export interface ClassFact {
  name: string;
  /** Index of the unit that holds the class. */
  unit: number;
  startLine: number;
  endLine: number;
  /** Base expressions as written (`nn.Module`, `Base`, `torch.nn.Sequential`). */
  bases: string[];
  decorators: string[];
  docstring: string;
  /** Comment lines at the top of the class body (torchvision documents classes that way). */
  comments: string;
  /** `__init__` parameters without `self`, as written. */
  signature: string;
  forwardSignature: string;
  methods: string[];
  abstract: boolean;
  /** What the code does, in researchers' words (codeWords.ts): searched with the class's name. */
  does?: string[];
  registry?: RegistryUse;
  /** Duplicate-detection fingerprints (stored in the classes table, not with the facts). */
  dup?: Fingerprint;
}

export interface FunctionFact {
  name: string;
  unit: number;
  startLine: number;
  endLine: number;
  signature: string;
  docstring: string;
}

/** A literal argument value; `{ $name }` for a dotted name (`nn.ReLU`); null when not a literal. */
export type Literal = number | string | boolean | null | Literal[] | { $name: string } | { $unknown: true };

/** A call of a class-like name with literal arguments: how the repository itself builds a block. */
export interface CallSite {
  callee: string;
  unit: number;
  args: Literal[];
  kwargs: Record<string, Literal>;
}

export interface ModuleFacts {
  docstring: string;
  /** `__all__` when the module declares it as literals. */
  all: string[] | null;
  futureAnnotations: boolean;
  imports: ImportFact[];
  units: Unit[];
  classes: ClassFact[];
  functions: FunctionFact[];
  /** Module-level `X.register_module(module=C)` calls. */
  registrations: RegistryUse[];
  /** Calls of capitalised names with at least one literal argument. */
  calls: CallSite[];
}

/** The full result of a parse: facts plus the positions that only the emitter needs (never stored). */
export interface ParsedModule {
  facts: ModuleFacts;
  text: string;
  /** Per unit: references to module-scope names. */
  refs: Ref[][];
  /** Per unit: where the unit binds module-level names (def/class names, assignment targets). */
  bindSites: BindSite[][];
  /** Per unit: identifier-like string literals. */
  strings: StringRef[][];
  /** Per unit: the import statements inside it that reach other modules (byte ranges for rewriting). */
  importRanges: { unit: number; start: number; end: number; imports: number[] }[];
  /** Per unit: the body of the class it defines (null for other units). */
  bodies: (ClassBody | null)[];
}

export type ParseFailure = {
  ok: false;
  reason: 'binary' | 'encoding' | 'too-large' | 'syntax' | 'python2' | 'too-deep' | 'empty' | 'error';
  detail: string;
};

export type ParseOutcome = ({ ok: true } & ParsedModule) | ParseFailure;
