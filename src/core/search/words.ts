/** Identifier splitting and the small vocabulary of abbreviations that PyTorch code bases use. */

/** `MultiHeadAttention` -> multi head attention; `conv_bn_act` -> conv bn act; `resnet50` -> resnet 50. */
export function splitIdentifier(name: string): string[] {
  const out: string[] = [];
  for (const part of name.split(/[^A-Za-z0-9]+/)) {
    const m = part.match(/[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+/g);
    if (m) out.push(...m.map((s) => s.toLowerCase()));
  }
  return out;
}

/** Abbreviations written in code, and the words a researcher types for them. */
const EXPANSIONS = new Map<string, string[]>(
  Object.entries({
    attn: ['attention'],
    mhsa: ['multi', 'head', 'self', 'attention'],
    mha: ['multi', 'head', 'attention'],
    conv: ['convolution'],
    dw: ['depthwise'],
    norm: ['normalization'],
    bn: ['batch', 'normalization'],
    ln: ['layer', 'normalization'],
    gn: ['group', 'normalization'],
    act: ['activation'],
    res: ['residual'],
    resnet: ['residual'],
    resnext: ['residual'],
    embed: ['embedding'],
    emb: ['embedding'],
    pos: ['position', 'positional'],
    mlp: ['perceptron', 'feed', 'forward'],
    ffn: ['feed', 'forward'],
    se: ['squeeze', 'excitation'],
    fc: ['fully', 'connected', 'linear'],
    pool: ['pooling'],
    upsample: ['up', 'sampling'],
    downsample: ['down', 'sampling'],
    bottleneck: ['residual', 'block'],
    vit: ['vision', 'transformer'],
    ca: ['channel', 'attention'],
    sa: ['spatial', 'attention'],
    cls: ['classifier'],
    proj: ['projection'],
    enc: ['encoder'],
    dec: ['decoder'],
    // the field's terms for language-model layers, said in full
    kv: ['key', 'value'],
    qkv: ['query', 'key', 'value'],
    moe: ['mixture', 'experts'],
    lora: ['low', 'rank', 'adaptation'],
    rms: ['root', 'mean', 'square'],
    ff: ['feed', 'forward'],
    glu: ['gated', 'linear', 'unit'],
    swiglu: ['swish', 'silu', 'gated', 'glu'],
    geglu: ['gelu', 'gated', 'glu'],
    rope: ['rotary', 'position'],
  }),
);

/** Split words plus their expansions, deduplicated, for the `words` search column. */
export function searchWords(name: string, extra: string[] = []): string {
  const words = new Set<string>();
  // two adjacent words of the name as one (`DepthWiseConv2d`: depthwise, `FeedForward`: feedforward)
  const own = splitIdentifier(name);
  for (let i = 0; i + 1 < own.length; i++) if (/^[a-z]{2,}$/.test(own[i]) && /^[a-z]{2,}$/.test(own[i + 1])) words.add(own[i] + own[i + 1]);
  // a dimension suffix as written (`LayerNorm2d`: 2d)
  for (const m of name.matchAll(/\d[dD](?![a-z])/g)) words.add(m[0].toLowerCase());
  for (const w of [...own, ...extra.flatMap(splitIdentifier)]) {
    words.add(w);
    // a Map: identifiers such as `constructor` must not reach Object.prototype
    for (const e of EXPANSIONS.get(w) ?? []) words.add(e);
  }
  return [...words].join(' ');
}

/** What an abbreviation written in code stands for (`attn` -> attention), or nothing. */
export function expansionsOf(word: string): string[] {
  return EXPANSIONS.get(word) ?? [];
}

/** The words from `words[i]` on whose beginnings spell `a` in order (`gat`: graph attentional), at most one a letter. */
function spelled(a: string, words: string[], i: number): string[] | undefined {
  if (!a) return [];
  const w = words[i];
  if (w === undefined) return undefined;
  for (let k = Math.min(a.length, w.length); k >= 1; k--) {
    if (!w.startsWith(a.slice(0, k))) continue;
    const rest = spelled(a.slice(k), words, i + 1);
    if (rest) return [w, ...rest];
  }
  return undefined;
}

/**
 * What the capital-letter abbreviations of a class name stand for, learned from the class's own docstring and
 * parameter names: `RMSNorm` documented as "Root Mean Square Layer Normalization" gives root mean square; `GATConv`
 * documented as a "graph attentional operator" gives graph attentional (each word gives the abbreviation's next
 * letters from its beginning). Two words or more, in one phrase.
 */
export function acronymMeanings(name: string, text: string): string[] {
  const out: string[] = [];
  const acronyms = new Set<string>();
  for (const m of name.matchAll(/[A-Z]{2,6}(?=[A-Z][a-z]|[^A-Za-z]|$)/g)) acronyms.add(m[0].toLowerCase());
  if (!acronyms.size) return out;
  const words = text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w && !/^\d+$/.test(w));
  for (const a of acronyms) {
    for (let i = 0; i < words.length; i++) {
      const phrase = spelled(a, words, i);
      if (phrase && phrase.length >= 2 && phrase.some((w) => w.length > 2)) {
        out.push(...phrase);
        break;
      }
    }
  }
  return out;
}
