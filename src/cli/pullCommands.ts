import { NnragError } from '../core/errors';
import type { CliEnv } from './cli';
export async function pullCommand(_a: string[], _e: CliEnv): Promise<number> { throw new NnragError('usage', 'pull: not yet'); }
export async function validateCommand(_a: string[], _e: CliEnv): Promise<number> { throw new NnragError('usage', 'validate: not yet'); }
