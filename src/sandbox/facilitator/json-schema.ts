/**
 * Enough JSON Schema 2020-12 to decide what the Bazaar's facilitator helper decides with Ajv:
 * whether a declared discovery extension's `info` matches the `schema` declared beside it.
 * Mirrors `validateDiscoveryExtension` of @x402/extensions 2.27.0 (dist/esm/chunk-SV2YHMOC.mjs,
 * from its src/bazaar/facilitator.ts), which runs
 * `new Ajv2020({strict: false, allErrors: true}).compile(schema)(info)`: a schema that would
 * not compile there — a keyword with a malformed value, a `$schema` other than 2020-12, a
 * `$ref` that does not resolve, a pattern that is not a regular expression — is refused like
 * a value that does not match; unknown keywords and `format` are ignored, as there.
 * Not evaluated here, so never a reason to refuse: `unevaluatedProperties`, `unevaluatedItems`,
 * `$dynamicRef`, and references by `$anchor` or `$id` (only `#` JSON pointers resolve). One
 * known difference the other way: Ajv 8.20 with `allErrors` misjudges `contains` under `items`
 * (`[[1], []]` passes `{items: {contains: {type: "number"}}}`); this module follows the spec.
 */

/** A schema Ajv would refuse to compile. */
class SchemaError extends Error {}

type SchemaObject = Record<string, unknown>;
type Check = (schema: unknown, value: unknown) => boolean;

const DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema";
const TYPES = new Set(["null", "boolean", "object", "array", "number", "integer", "string"]);

const isObject = (v: unknown): v is SchemaObject => typeof v === "object" && v !== null && !Array.isArray(v);
const has = (o: object, key: string): boolean => Object.hasOwn(o, key);
/** Whether a property is there as Ajv asks it (`data[key] !== undefined`: inherited names such as `constructor` count). */
const present = (o: SchemaObject, key: string): boolean => o[key] !== undefined;

/**
 * Whether a schema names anything outside itself: a `$ref` or `$id` not starting with `#`.
 * Mirrors `hasExternalSchemaReference` (src/bazaar/facilitator.ts).
 */
export function hasExternalSchemaReference(node: unknown): boolean {
  if (Array.isArray(node)) return node.some((item) => hasExternalSchemaReference(item));
  if (isObject(node)) {
    for (const [key, value] of Object.entries(node)) {
      if ((key === "$ref" || key === "$id") && (typeof value !== "string" || !value.startsWith("#"))) return true;
      if (hasExternalSchemaReference(value)) return true;
    }
  }
  return false;
}

/** Ajv's equality (fast-deep-equal) on JSON values. */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  }
  if (!isObject(a) || !isObject(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => has(b, k) && sameJson(a[k], b[k]));
}

function hasType(v: unknown, type: string): boolean {
  if (type === "null") return v === null;
  if (type === "array") return Array.isArray(v);
  if (type === "object") return isObject(v);
  if (type === "integer") return typeof v === "number" && Number.isInteger(v);
  return typeof v === type; // boolean, number, string
}

/** A pattern as Ajv compiles it (`unicodeRegExp`, unanchored). */
function regex(pattern: unknown): RegExp {
  if (typeof pattern !== "string") throw new SchemaError("a pattern must be a string");
  try {
    return new RegExp(pattern, "u");
  } catch {
    throw new SchemaError(`invalid pattern ${pattern}`);
  }
}

/** A `#` JSON pointer (`#`, `#/$defs/x`) resolved against the root schema. */
function resolveRef(root: unknown, ref: string): unknown {
  if (!/^#(\/|$)/.test(ref)) throw new SchemaError(`unresolvable $ref ${ref}`);
  let node = root;
  for (const raw of ref === "#" ? [] : ref.slice(2).split("/")) {
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (!(isObject(node) || Array.isArray(node)) || !has(node, key)) throw new SchemaError(`unresolvable $ref ${ref}`);
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

/** Value checks of a keyword, as the meta-schema makes them (Ajv refuses to compile otherwise). */
const shapes = {
  count(v: unknown): void {
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0) throw new SchemaError("expected a count");
  },
  number(v: unknown): void {
    if (typeof v !== "number") throw new SchemaError("expected a number");
  },
  string(v: unknown): void {
    if (typeof v !== "string") throw new SchemaError("expected a string");
  },
  boolean(v: unknown): void {
    if (typeof v !== "boolean") throw new SchemaError("expected a boolean");
  },
  strings(v: unknown): void {
    if (!Array.isArray(v) || !v.every((s) => typeof s === "string") || new Set(v).size !== v.length) {
      throw new SchemaError("expected distinct strings");
    }
  },
};

interface Keyword {
  /** Throws when the meta-schema refuses the keyword's value: Ajv checks every subschema so, `$defs` too. */
  shape?: (kw: unknown) => void;
  /** Throws when Ajv's code for the keyword refuses its value: only in the subschemas it compiles. */
  compile?: (kw: unknown) => void;
  /** The subschemas the keyword holds. */
  subschemas?: (kw: unknown) => unknown[];
  /** Whether Ajv compiles them: not `$defs` (only what a `$ref` reaches), not a lone `if`, `then` or `else`. */
  compiled?: (s: SchemaObject) => boolean;
  /** What the keyword says of a value; `s` is the schema it sits in. */
  test: (kw: unknown, v: unknown, s: SchemaObject, check: Check) => boolean;
}

const one = (kw: unknown) => [kw];
const list = (kw: unknown) => {
  if (!Array.isArray(kw) || kw.length === 0) throw new SchemaError("expected a non-empty array of schemas");
  return kw;
};
const map = (kw: unknown) => {
  if (!isObject(kw)) throw new SchemaError("expected an object of schemas");
  return Object.values(kw);
};
const length = (s: string) => [...s].length; // code points, as Ajv's ucs2length
const always = () => true;
/**
 * Whether every verdict is true, each computed first: Ajv's `allErrors` evaluates every branch,
 * so a reference loop in a branch that would not change the answer still fails the whole (the
 * stack overflows), as it does there.
 */
const all = (verdicts: boolean[]) => verdicts.every(Boolean);

/** Properties of an object that neither `properties` nor `patternProperties` name. */
function additional(v: SchemaObject, s: SchemaObject): string[] {
  const named = isObject(s.properties) ? s.properties : {};
  const patterns = isObject(s.patternProperties) ? Object.keys(s.patternProperties).map(regex) : [];
  return Object.keys(v).filter((k) => !has(named, k) && !patterns.some((p) => p.test(k)));
}

const KEYWORDS: Record<string, Keyword> = {
  // core
  $schema: { shape: shapes.string, test: always },
  $defs: { subschemas: map, compiled: () => false, test: always },
  definitions: { subschemas: map, compiled: () => false, test: always }, // its 2019 name, still in the meta-schema
  $ref: { shape: shapes.string, test: always }, // evaluated in `compile`, which holds the root
  format: { shape: shapes.string, test: always }, // Ajv without ajv-formats ignores it
  // any instance
  type: {
    shape(kw) {
      const types = Array.isArray(kw) ? kw : [kw];
      const named = types.every((t) => typeof t === "string" && TYPES.has(t));
      if (types.length === 0 || !named || new Set(types).size !== types.length) {
        throw new SchemaError("type must name JSON types");
      }
    },
    test: (kw, v) => (Array.isArray(kw) ? kw : [kw]).some((t) => hasType(v, t as string)),
  },
  const: { test: (kw, v) => sameJson(kw, v) },
  enum: {
    shape(kw) {
      if (!Array.isArray(kw)) throw new SchemaError("enum must be an array");
    },
    compile(kw) {
      if ((kw as unknown[]).length === 0) throw new SchemaError("enum must have non-empty array");
    },
    test: (kw, v) => (kw as unknown[]).some((x) => sameJson(x, v)),
  },
  allOf: { subschemas: list, test: (kw, v, _s, check) => all((kw as unknown[]).map((s) => check(s, v))) },
  anyOf: { subschemas: list, test: (kw, v, _s, check) => (kw as unknown[]).map((s) => check(s, v)).some(Boolean) },
  oneOf: { subschemas: list, test: (kw, v, _s, check) => (kw as unknown[]).filter((s) => check(s, v)).length === 1 },
  not: { subschemas: one, test: (kw, v, _s, check) => !check(kw, v) },
  if: {
    subschemas: one,
    compiled: (s) => s.then !== undefined || s.else !== undefined,
    test(kw, v, s, check) {
      if (s.then === undefined && s.else === undefined) return true;
      return check(kw, v) ? s.then === undefined || check(s.then, v) : s.else === undefined || check(s.else, v);
    },
  },
  then: { subschemas: one, compiled: (s) => s.if !== undefined, test: always },
  else: { subschemas: one, compiled: (s) => s.if !== undefined, test: always },
  // numbers
  minimum: { shape: shapes.number, test: (kw, v) => typeof v !== "number" || v >= (kw as number) },
  maximum: { shape: shapes.number, test: (kw, v) => typeof v !== "number" || v <= (kw as number) },
  exclusiveMinimum: { shape: shapes.number, test: (kw, v) => typeof v !== "number" || v > (kw as number) },
  exclusiveMaximum: { shape: shapes.number, test: (kw, v) => typeof v !== "number" || v < (kw as number) },
  multipleOf: {
    shape(kw) {
      if (typeof kw !== "number" || kw <= 0) throw new SchemaError("multipleOf must be positive");
    },
    test(kw, v) {
      if (typeof v !== "number") return true;
      const quotient = v / (kw as number);
      return quotient === parseInt(String(quotient)); // Ajv's test, without multipleOfPrecision
    },
  },
  // strings
  minLength: { shape: shapes.count, test: (kw, v) => typeof v !== "string" || length(v) >= (kw as number) },
  maxLength: { shape: shapes.count, test: (kw, v) => typeof v !== "string" || length(v) <= (kw as number) },
  pattern: {
    shape: shapes.string,
    compile: (kw) => void regex(kw),
    test: (kw, v) => typeof v !== "string" || regex(kw).test(v),
  },
  // arrays
  minItems: { shape: shapes.count, test: (kw, v) => !Array.isArray(v) || v.length >= (kw as number) },
  maxItems: { shape: shapes.count, test: (kw, v) => !Array.isArray(v) || v.length <= (kw as number) },
  uniqueItems: {
    shape: shapes.boolean,
    test: (kw, v) => !Array.isArray(v) || !kw || v.every((x, i) => v.findIndex((y) => sameJson(x, y)) === i),
  },
  prefixItems: {
    subschemas: list,
    test: (kw, v, _s, check) =>
      !Array.isArray(v) || all((kw as unknown[]).map((s, i) => i >= v.length || check(s, v[i]))),
  },
  items: {
    subschemas: one,
    test(kw, v, s, check) {
      const from = Array.isArray(s.prefixItems) ? s.prefixItems.length : 0;
      return !Array.isArray(v) || all(v.slice(from).map((x) => check(kw, x)));
    },
  },
  contains: {
    subschemas: one,
    test(kw, v, s, check) {
      if (!Array.isArray(v)) return true;
      const n = v.filter((x) => check(kw, x)).length;
      const min = s.minContains === undefined ? 1 : (s.minContains as number);
      return n >= min && (s.maxContains === undefined || n <= (s.maxContains as number));
    },
  },
  minContains: { shape: shapes.count, test: always },
  maxContains: { shape: shapes.count, test: always },
  // objects
  required: { shape: shapes.strings, test: (kw, v) => !isObject(v) || (kw as string[]).every((k) => present(v, k)) },
  minProperties: { shape: shapes.count, test: (kw, v) => !isObject(v) || Object.keys(v).length >= (kw as number) },
  maxProperties: { shape: shapes.count, test: (kw, v) => !isObject(v) || Object.keys(v).length <= (kw as number) },
  properties: {
    subschemas: map,
    test: (kw, v, _s, check) =>
      !isObject(v) || all(Object.entries(kw as SchemaObject).map(([k, s]) => !present(v, k) || check(s, v[k]))),
  },
  patternProperties: {
    subschemas: map,
    compile: (kw) => Object.keys(kw as SchemaObject).forEach(regex),
    test: (kw, v, _s, check) =>
      !isObject(v) ||
      all(
        Object.entries(kw as SchemaObject).flatMap(([p, s]) =>
          Object.keys(v)
            .filter((k) => regex(p).test(k))
            .map((k) => check(s, v[k])),
        ),
      ),
  },
  additionalProperties: {
    subschemas: one,
    test: (kw, v, s, check) => !isObject(v) || all(additional(v, s).map((k) => check(kw, v[k]))),
  },
  propertyNames: {
    subschemas: one,
    test: (kw, v, _s, check) => !isObject(v) || all(Object.keys(v).map((k) => check(kw, k))),
  },
  dependentRequired: {
    shape(kw) {
      if (!isObject(kw)) throw new SchemaError("dependentRequired must be an object");
      Object.values(kw).forEach(shapes.strings);
    },
    test: (kw, v) =>
      !isObject(v) ||
      Object.entries(kw as Record<string, string[]>).every(
        ([k, needs]) => !present(v, k) || needs.every((n) => present(v, n)),
      ),
  },
  dependencies: {
    shape(kw) {
      if (!isObject(kw)) throw new SchemaError("dependencies must be an object");
      Object.values(kw).forEach((d) => Array.isArray(d) && shapes.strings(d));
    },
    subschemas: (kw) => Object.values(kw as SchemaObject).filter((d) => !Array.isArray(d)),
    test: (kw, v, _s, check) =>
      !isObject(v) ||
      all(
        Object.entries(kw as SchemaObject).map(([k, d]) =>
          !present(v, k) ? true : Array.isArray(d) ? d.every((n) => present(v, n as string)) : check(d, v),
        ),
      ),
  },
  unevaluatedProperties: { subschemas: one, test: always }, // compiled by Ajv, not evaluated here
  unevaluatedItems: { subschemas: one, test: always },
  dependentSchemas: {
    subschemas: map,
    test: (kw, v, _s, check) =>
      !isObject(v) || all(Object.entries(kw as SchemaObject).map(([k, s]) => !present(v, k) || check(s, v))),
  },
};

/** Checks every keyword of every subschema against the meta-schema's rules; throws SchemaError. */
function metaCheck(schema: unknown): void {
  if (typeof schema === "boolean") return;
  if (!isObject(schema)) throw new SchemaError("a schema must be an object or a boolean");
  for (const [name, kw] of Object.entries(schema)) {
    const keyword = KEYWORDS[name];
    if (!keyword) continue; // unknown keywords are ignored (Ajv's strict: false)
    keyword.shape?.(kw);
    for (const sub of keyword.subschemas?.(kw) ?? []) metaCheck(sub);
  }
}

/** Checks what Ajv's code generation checks, in the subschemas it compiles (and those `$ref`s reach); throws SchemaError. */
function compileCheck(root: unknown, schema: unknown, seen: Set<unknown>): void {
  if (!isObject(schema) || seen.has(schema)) return;
  seen.add(schema);
  for (const [name, kw] of Object.entries(schema)) {
    const keyword = KEYWORDS[name];
    if (!keyword) continue;
    keyword.compile?.(kw);
    if (keyword.compiled?.(schema) === false) continue;
    for (const sub of keyword.subschemas?.(kw) ?? []) compileCheck(root, sub, seen);
  }
  if (typeof schema.$ref === "string") compileCheck(root, refTarget(root, schema.$ref), seen);
}

/**
 * Where a `$ref` leads once Ajv has followed the schemas on the way that are nothing but a
 * `$ref` (to anything but the root): a chain of them that comes back on itself never ends,
 * and Ajv's compilation overflows the stack — a SchemaError here.
 */
function refTarget(root: unknown, ref: string): unknown {
  const chain = new Set<unknown>();
  let target = resolveRef(root, ref);
  while (
    isObject(target) &&
    Object.keys(target).length === 1 &&
    typeof target.$ref === "string" &&
    target.$ref !== "#"
  ) {
    if (chain.has(target)) throw new SchemaError(`a $ref loop through ${ref}`);
    chain.add(target);
    target = resolveRef(root, target.$ref);
  }
  return target;
}

/**
 * Whether `value` matches `schema`, or false when the schema would not compile. A schema
 * that recurses without end fails (the stack overflows), as it does under Ajv.
 */
export function matchesSchema(schema: unknown, value: unknown): boolean {
  try {
    if (isObject(schema) && schema.$schema !== undefined && schema.$schema !== DRAFT_2020) return false;
    metaCheck(schema);
    compileCheck(schema, schema, new Set());
    const check: Check = (s, v) => {
      if (typeof s === "boolean") return s;
      const node = s as SchemaObject;
      const ref = typeof node.$ref === "string" ? check(resolveRef(schema, node.$ref), v) : true;
      return all([ref, ...Object.entries(node).map(([name, kw]) => KEYWORDS[name]?.test(kw, v, node, check) ?? true)]);
    };
    return check(schema, value);
  } catch {
    return false;
  }
}
