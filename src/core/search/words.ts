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
  }),
);

/** Split words plus their expansions, deduplicated, for the `words` search column. */
export function searchWords(name: string, extra: string[] = []): string {
  const words = new Set<string>();
  for (const w of [...splitIdentifier(name), ...extra.flatMap(splitIdentifier)]) {
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
