/** JSON Schema (2020-12) checks for tests, by Ajv: the error messages of a value against a schema, none when it fits. */
import Ajv2020 from 'ajv/dist/2020';

const ajv = new Ajv2020({ allErrors: true, strict: false });

export function validateSchema(schema: Record<string, unknown>, value: unknown): string[] {
  const check = ajv.getSchema(String(schema.$id ?? '')) ?? ajv.compile(schema);
  return check(value) ? [] : (check.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);
}
