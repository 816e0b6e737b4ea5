/** The version `nn-rag --version` prints: package.json's, bundled by esbuild (one source of truth). */
import { version } from '../../package.json';

export const VERSION: string = version;
