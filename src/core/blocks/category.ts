/** A category guess for a block from its name, bases and path words. */
import { splitIdentifier } from '../search/words';

export const CATEGORIES = [
  'attention',
  'convolution',
  'normalization',
  'loss',
  'pooling',
  'activation',
  'embedding',
  'head',
  'backbone',
  'model',
  'transform',
  'other',
] as const;
export type Category = (typeof CATEGORIES)[number];

const RULES: [Category, RegExp][] = [
  ['loss', /^(loss|criterion|nll|bce|ce|focal|dice|triplet|contrastive)$/],
  ['attention', /^(attention|attn|mhsa|mha|transformer|self|cross|qkv|se|squeeze|excitation|cbam|gate|gated)$/],
  ['normalization', /^(norm|normalization|batchnorm|layernorm|groupnorm|instancenorm|bn|ln|gn|rmsnorm|whitening|frozen)$/],
  ['pooling', /^(pool|pooling|avgpool|maxpool|gap|gem|spp|sppf|roi|roialign)$/],
  ['embedding', /^(embed|embedding|embeddings|emb|positional|pos|patch|token|tokenizer|rope|rotary|sincos)$/],
  ['head', /^(head|heads|classifier|cls|decoder|predictor|neck|fpn|detect|detection|segmentation)$/],
  ['activation', /^(relu|gelu|silu|swish|mish|sigmoid|tanh|softmax|activation|act|hardswish|hardsigmoid|elu|prelu|glu|softplus)$/],
  ['convolution', /^(conv|convolution|conv1d|conv2d|conv3d|depthwise|separable|deform|dw|pw|pointwise|bottleneck|residual|inverted)$/],
  [
    'backbone',
    /^(net|network|model|backbone|encoder|resnet|resnext|vgg|vit|efficientnet|mobilenet|densenet|inception|googlenet|regnet|convnext|swin|unet|alexnet|shufflenet|squeezenet|mnasnet|wide|darknet|yolo|raft|ssd|rcnn|retinanet|fcn|deeplabv3|lraspp)$/,
  ],
];

/** Name words of parts of a model that take a class count too (a classification head is a head). */
const PART_WORDS = /^(head|heads|predictor|classifier|decoder|loss|block|layer)$/;

/**
 * Name words weigh more than base and path words; the first rule to match a name word wins. A class of a
 * `transforms` module is a data transform; one whose constructor takes `num_classes` (and is not a head or a
 * loss) is a whole model.
 */
export function guessCategory(name: string, bases: string[], modulePath: string, signature = ''): Category {
  const nameWords = splitIdentifier(name);
  if (/(^|\.)(transforms?|augmentations?)(\.|$)|(^|\.)_?transforms_/.test(modulePath)) return 'transform';
  if (/\bnum_classes\b/.test(signature) && !nameWords.some((w) => PART_WORDS.test(w))) return 'model';
  // a conv with its norm and activation (ConvBNAct, Conv2dNormActivation) is a convolution block
  if (nameWords.some((w) => /^conv(\d?d)?$/.test(w)) && !nameWords.includes('loss') && !nameWords.includes('net')) return 'convolution';
  const baseWords = bases.flatMap((b) => splitIdentifier(b.split('.').pop() ?? b));
  const pathWords = splitIdentifier(modulePath.split('.').pop() ?? '');
  for (const words of [nameWords, baseWords, pathWords]) {
    // later words in a name are the noun: AttentionPool is a pooling
    for (const w of [...words].reverse()) {
      for (const [cat, re] of RULES) {
        // a module named resnet.py holds blocks as well as the network: the path alone never says backbone
        if (re.test(w) && !(words === pathWords && cat === 'backbone')) return cat;
      }
    }
  }
  return 'other';
}
