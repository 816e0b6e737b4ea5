/**
 * A small JSON Schema (2020-12) checker for the keywords our schemas use: type, const, enum, properties,
 * required, additionalProperties (false), items, minItems, maxItems, minimum, maxLength, pattern, $ref to #/$defs.
 * It fails loudly on any other keyword, so a schema cannot silently use one it does not check.
 */
type Schema = Record<string, unknown>;

const KNOWN = new Set(['$schema', '$id', 'title', 'description', '$defs', 'type', 'const', 'enum', 'properties', 'required', 'additionalProperties', 'items', 'minItems', 'maxItems', 'minimum', 'maxLength', 'pattern', '$ref']);

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

export function validateSchema(root: Schema, value: unknown): string[] {
  const errors: string[] = [];
  const check = (schema: Schema, v: unknown, at: string): void => {
    for (const k of Object.keys(schema)) if (!KNOWN.has(k)) throw new Error(`schema keyword '${k}' at ${at} is not supported by this checker`);
    if (typeof schema.$ref === 'string') {
      const name = /^#\/\$defs\/(.+)$/.exec(schema.$ref)?.[1];
      const target = name ? (root.$defs as Record<string, Schema>)[name] : undefined;
      if (!target) throw new Error(`unresolvable $ref ${schema.$ref}`);
      check(target, v, at);
    }
    if (schema.type !== undefined) {
      const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
      const t = typeOf(v);
      if (!types.includes(t) && !(t === 'integer' && types.includes('number'))) {
        errors.push(`${at}: ${t} is not ${types.join(' or ')}`);
        return;
      }
    }
    if ('const' in schema && JSON.stringify(schema.const) !== JSON.stringify(v)) errors.push(`${at}: not ${JSON.stringify(schema.const)}`);
    if (Array.isArray(schema.enum) && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) errors.push(`${at}: ${JSON.stringify(v)} is not one of ${JSON.stringify(schema.enum)}`);
    if (typeof v === 'string') {
      if (typeof schema.maxLength === 'number' && [...v].length > schema.maxLength) errors.push(`${at}: longer than ${schema.maxLength}`);
      if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(v)) errors.push(`${at}: '${v}' does not match ${schema.pattern}`);
    }
    if (typeof v === 'number' && typeof schema.minimum === 'number' && v < schema.minimum) errors.push(`${at}: below ${schema.minimum}`);
    if (Array.isArray(v)) {
      if (typeof schema.minItems === 'number' && v.length < schema.minItems) errors.push(`${at}: fewer than ${schema.minItems} items`);
      if (typeof schema.maxItems === 'number' && v.length > schema.maxItems) errors.push(`${at}: more than ${schema.maxItems} items`);
      if (schema.items) v.forEach((x, i) => check(schema.items as Schema, x, `${at}[${i}]`));
    }
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      const obj = v as Record<string, unknown>;
      const props = (schema.properties ?? {}) as Record<string, Schema>;
      for (const r of (schema.required as string[] | undefined) ?? []) if (!(r in obj)) errors.push(`${at}: missing '${r}'`);
      for (const [k, x] of Object.entries(obj)) {
        if (props[k]) check(props[k], x, `${at}.${k}`);
        else if (schema.additionalProperties === false) errors.push(`${at}: unexpected property '${k}'`);
      }
    }
  };
  check(root, value, '$');
  return errors;
}
