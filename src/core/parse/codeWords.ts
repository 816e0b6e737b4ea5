/**
 * Words for what a class's code does, for search: the layers it builds and the operations its methods call, said in
 * the words researchers type (`F.silu(a) * b` is a gated SiLU, `torch.tril` a causal mask, `groups=dim` a depthwise
 * convolution). Read from the class's source text with patterns, not run; each rule says one thing the code does.
 */

/** A pattern over a class's source, and the words that say what the code it matches does. */
const RULES: [RegExp, string][] = [
  [/\bnn\.Conv[123]d\s*\(|\bConv[123]d\s*\(/, 'convolution'],
  [/\bConv(?:Transpose)[123]d\s*\(/, 'transposed convolution upsample'],
  [/\bConv[123]d\s*\([^)]*\bgroups\s*=\s*(?!1\b)[\w.]+/, 'depthwise convolution'],
  [/\bMultihead(?:Attention)\s*\(/, 'multihead attention'],
  [/\bnn\.Embedding\s*\(/, 'embedding'],
  [/\bsoftmax\s*\(/, 'softmax'],
  [/\bscaled_dot_product_attention\s*\(|\bmemory_efficient_attention\s*\(|\bflash_attn/, 'attention'],
  [/\bmemory_efficient_attention\s*\(/, 'memory efficient attention'],
  [/\btril\s*\(|\btriu\s*\(|\bis_causal\b|\bcausal/i, 'causal mask'],
  [/\bmasked_fill_?\s*\(/, 'mask'],
  [/\bsilu\s*\([^()]*(?:\([^()]*\))?[^()]*\)\s*\*|\*\s*(?:F\.|nn\.functional\.)?silu\s*\(/, 'gated silu swiglu glu feed forward'],
  [/\bgelu\s*\([^()]*(?:\([^()]*\))?[^()]*\)\s*\*|\*\s*(?:F\.|nn\.functional\.)?gelu\s*\(/, 'gated gelu geglu glu feed forward'],
  [/\bsigmoid\s*\([^()]*(?:\([^()]*\))?[^()]*\)\s*\*|\*\s*(?:torch\.|F\.)?sigmoid\s*\(/, 'gated sigmoid gate'],
  [/\bpixel_shuffle\b|\bPixelShuffle\s*\(/, 'pixel shuffle upsample'],
  [/\bpixel_unshuffle\b|\bPixelUnshuffle\s*\(/, 'pixel unshuffle downsample'],
  // (a layer norm's variance is a mean of squares too: it subtracts the mean first, or calls var)
  [/^(?![\s\S]*(?:\(\s*\w+\s*-\s*\w+\s*\)\.pow\(\s*2|\bvar\s*\(|-\s*\w*mean\w*\s*\)))[\s\S]*\brsqrt\s*\(/, 'root mean square rms'],
  // (normalizing over dimension 1 of NCHW maps: the layer norm of convolutional features, ConvNeXt's and SAM's)
  [/\.mean\(\s*(?:1|dim\s*=\s*1)\s*,\s*keepdim|\bvar\([^)]*\bdim\s*=\s*1\b/, 'channels first layer norm conv features'],
  [/\btopk\s*\(/, 'top k routing'],
  [/\bexperts\b/, 'mixture of experts moe'],
  [/\blora_[AaBb]\b|\blora_/, 'low rank adaptation lora'],
  [/\b[kv]_cache\b|\bkv_cache\b|\bcache_[kv]\b/, 'key value cache'],
  [/\bdrop_path\b|\bbernoulli_?\s*\(/, 'stochastic depth drop path'],
  [/\badaptive_avg_pool\dd\s*\([^)]*\)|\bAdaptiveAvgPool\dd\s*\(/, 'pooling'],
  [/\bcos\s*\([^)]*\)[^\n]*\bsin\s*\(|\brotary|\brotate_half\b/, 'rotary position embedding rope'],
  // a learnable per-channel scale set from an initial value (`init_values`), the residual branch multiplied by it
  [
    /\binit_values\s*\*\s*torch\.ones\b|\bgamma\s*\*\s*x\b|\bconstant_\(\s*self\.\w+\s*,\s*self\.init_values\b|\blayer_scale_init_value\b/,
    'layer scale learnable channel',
  ],
  [/\bfrozen|\brequires_grad_?\(\s*False\s*\)/, 'frozen'],
];

/** The words of a class's source (its `class` statement whole): what it builds and computes. */
export function codeWordsOf(source: string): string[] {
  const words = new Set<string>();
  for (const [pattern, said] of RULES) if (pattern.test(source)) for (const w of said.split(' ')) words.add(w);
  return [...words];
}
