/** Module names for pulled files: how a class name becomes one, and which names a pulled file must not take. */

/** Packages of the PyTorch world a pulled file must not shadow (besides the standard library). */
export const PROTECTED_PACKAGES: ReadonlySet<string> = new Set(['torch', 'torchvision', 'torchaudio', 'numpy', 'timm', 'transformers', 'einops', 'scipy', 'PIL', 'mmcv', 'mmdet', 'mmengine']);

/** `ResidualBlock` -> `residual_block`, `SEBlock` -> `se_block`. */
export function snakeCase(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase();
}
