/**
 * An object with a field of the wrong type cannot be decoded, so the API server (and Palisade)
 * stopped at its type errors, and the user fixed them only to meet the object's other problems
 * in a second round. To report those too, every kind's decoder parses through
 * `decodeReportingAll`: the unknown and mistyped fields are left out of a copy (a required one is
 * stood in for by an empty value of its type, as is a missing required field, and a mistyped list
 * element in its place), which is then checked as usual. What that check says about such a field or
 * element (the stand-in speaking) or its parent, and what it says of a sibling for the field's
 * absence, is dropped, since it may only be the removal speaking (an `endPort` "without a port"
 * whose port was mistyped, a peer "naming no selector" whose only one was).
 */
import type { z } from 'zod';
import type { Diagnostic, DiagnosticCode } from '../model/diagnostics.ts';
import { formatPath, valueAt, type DecodeContext } from './decode-context.ts';
import type { FieldPath } from './types.ts';

/** The schema a value is read with, and the field names for its "did you mean" hints. */
export interface Reading<S extends z.ZodType> {
  readonly schema: S;
  /** The schema's field names, for "did you mean" hints on unknown fields (default NetworkPolicy's). */
  readonly knownFields?: readonly string[];
}

/**
 * `decode` of `value` (found at `at` inside the context's object) parsed with `reading.schema`.
 * When that parse fails, its issues are reported; then a copy of the value without its unknown
 * fields — and without its mistyped ones, stood in for where required — is read again and
 * decoded for the diagnostics alone: the result is undefined, as the value is invalid either way.
 */
export function decodeReportingAll<S extends z.ZodType, R>(
  ctx: DecodeContext,
  value: unknown,
  reading: Reading<S>,
  decode: (data: z.output<S>) => R,
  at: FieldPath = [],
): R | undefined {
  const parsed = reading.schema.safeParse(value);
  if (parsed.success) return decode(parsed.data);
  const issues = parsed.error.issues;
  ctx.reportSchemaIssues(
    at.length === 0 ? issues : issues.map((i) => ({ ...i, path: [...at, ...i.path] })),
    reading.knownFields,
  );
  const copy = structuredClone(value);
  removeUnknownFields(copy, issues);
  const unknownOnly = issues.every((issue) => issue.code === 'unrecognized_keys');
  const reread = unknownOnly
    ? readAsIs(reading.schema, copy)
    : readWithoutMistyped(reading.schema, copy, issues, at);
  if (!reread) return undefined;
  const before = ctx.diagnostics.length;
  decode(reread.data as z.output<S>);
  if (reread.causedByRemoval) ctx.dropSince(before, reread.causedByRemoval);
  return undefined;
}

/**
 * Deletes the fields the issues call unknown (reported already), so that the strict schema reads
 * what is left: what they held is not checked, as the API server would not read it either.
 */
function removeUnknownFields(copy: unknown, issues: readonly z.core.$ZodIssue[]): void {
  for (const issue of issues) {
    if (issue.code !== 'unrecognized_keys') continue;
    const parent = valueAt(copy, pathOf(issue));
    if (!isMapping(parent)) continue;
    for (const key of issue.keys) delete (parent as Record<string, unknown>)[key];
  }
}

/** Every field name a schema knows, at any depth: what an unknown field may be a typo of. */
export function fieldNamesOf(schema: z.ZodType): readonly string[] {
  const found = new Set<string>();
  collectFieldNames(schema, found, new Set());
  return [...found];
}

function collectFieldNames(schema: z.ZodType, found: Set<string>, visited: Set<z.ZodType>): void {
  if (visited.has(schema)) return;
  visited.add(schema);
  const def = schema.def as { type: string } & Record<string, unknown>;
  const inner = (key: string): void => collectFieldNames(def[key] as z.ZodType, found, visited);
  switch (def.type) {
    case 'object':
      for (const [name, field] of Object.entries(def.shape as Record<string, z.ZodType>)) {
        found.add(name);
        collectFieldNames(field, found, visited);
      }
      return;
    case 'optional':
    case 'nullable':
      return inner('innerType');
    case 'array':
      return inner('element');
    case 'record':
      return inner('valueType');
    case 'union':
      for (const option of def.options as z.ZodType[]) collectFieldNames(option, found, visited);
  }
}

interface Reread {
  readonly data: unknown;
  /** Whether a diagnostic may only be the removal of a field speaking; absent when none was removed. */
  readonly causedByRemoval?: (diagnostic: Diagnostic) => boolean;
}

function readAsIs(schema: z.ZodType, value: unknown): Reread | undefined {
  const parsed = schema.safeParse(value);
  return parsed.success ? { data: parsed.data } : undefined;
}

/**
 * `copy` (the value without its unknown fields; changed here) without its mistyped fields too,
 * and with an empty stand-in for each mistyped list element (left in place, so the other
 * elements keep their index), read with `schema`; undefined when an issue is of another kind (a
 * value out of a literal's set), or the copy still does not read.
 */
function readWithoutMistyped(
  schema: z.ZodType,
  copy: unknown,
  issues: readonly z.core.$ZodIssue[],
  at: FieldPath,
): Reread | undefined {
  const fields: FieldPath[] = [];
  const elements: FieldPath[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') continue; // removed already
    if (issue.code !== 'invalid_type' && issue.code !== 'invalid_union') return undefined;
    const path = pathOf(issue);
    const last = path[path.length - 1];
    const parent = valueAt(copy, path.slice(0, -1));
    const stand = issue.code === 'invalid_type' ? STAND_INS[issue.expected] : undefined;
    if (typeof last === 'string' && isMapping(parent)) {
      fields.push(path);
      delete (parent as Record<string, unknown>)[last];
    } else if (typeof last === 'number' && Array.isArray(parent) && stand) {
      elements.push(path);
      parent[last] = stand();
    } else return undefined;
  }
  if (fields.length + elements.length === 0) return undefined;
  let parsed = schema.safeParse(copy);
  if (!parsed.success) {
    // Required fields get an empty value of their type: one missing, one just left out, or one
    // of an element's stand-in. One round only: a stand-in that needs fields of its own (an
    // empty `spec`) would have them judged, so the copy is given up instead.
    for (const issue of parsed.error.issues) {
      const stand = issue.code === 'invalid_type' ? STAND_INS[issue.expected] : undefined;
      const path = pathOf(issue);
      const field = path[path.length - 1];
      const standingIn =
        fields.some((p) => formatPath(p) === formatPath(path)) || elements.some((e) => isWithin(path, e));
      const parent = valueAt(copy, path.slice(0, -1));
      if (!stand || !standingIn || typeof field !== 'string' || !isMapping(parent)) return undefined;
      (parent as Record<string, unknown>)[field] = stand();
    }
    parsed = schema.safeParse(copy);
    if (!parsed.success) return undefined;
  }
  const inObject = (paths: FieldPath[]): FieldPath[] => paths.map((p) => [...at, ...p]);
  return { data: parsed.data, causedByRemoval: removalTest(inObject(fields), inObject(elements)) };
}

function pathOf(issue: z.core.$ZodIssue): FieldPath {
  return issue.path.filter((p): p is string | number => typeof p !== 'symbol');
}

/** Whether `path` is `outer` or lies inside it. */
function isWithin(path: FieldPath, outer: FieldPath): boolean {
  return outer.length <= path.length && outer.every((part, i) => path[i] === part);
}

/** Empty values by the type zod expected, to stand in for a required field. */
const STAND_INS: Readonly<Record<string, () => unknown>> = {
  string: () => '',
  number: () => 0,
  boolean: () => false,
  object: () => ({}),
  record: () => ({}),
  array: () => [],
};

function isMapping(value: unknown): boolean {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Codes reported at one field for what a sibling holds or lacks (`endPort` without a numeric
 * `port`, a range's end not above its start): next to a removed field they may only be the
 * removal speaking. Other codes at a sibling judge the sibling alone and are kept.
 */
const JUDGED_BY_SIBLINGS: ReadonlySet<DiagnosticCode> = new Set<DiagnosticCode>([
  'END_PORT_WITHOUT_NUMERIC_PORT',
  'END_PORT_BEFORE_PORT',
  'CLUSTER_PORT_INVALID',
]);

/**
 * True for a diagnostic the removal may have caused: at a removed field (about its stand-in), at
 * its parent (which judges its fields together: "a peer must set podSelector…" once its only
 * selector is gone), at a sibling with a code that judges fields together, or at or inside a
 * list element's stand-in.
 */
function removalTest(
  fields: readonly FieldPath[],
  elements: readonly FieldPath[],
): (diagnostic: Diagnostic) => boolean {
  const removed = new Set(fields.map((p) => formatPath(p)));
  const parents = new Set(fields.map((p) => formatPath(p.slice(0, -1))));
  const stoodIn = elements.map((p) => formatPath(p));
  return (diagnostic) => {
    const where = diagnostic.path ?? '';
    if (removed.has(where) || parents.has(where)) return true;
    if (stoodIn.some((e) => where === e || where.startsWith(`${e}.`) || where.startsWith(`${e}[`)))
      return true;
    if (!JUDGED_BY_SIBLINGS.has(diagnostic.code)) return false;
    const cut = Math.max(where.lastIndexOf('.'), where.lastIndexOf('['));
    // A direct field's parent: what comes before its last `.name`; a top-level field's is ''.
    return where[cut] === '.' ? parents.has(where.slice(0, cut)) : cut === -1 && parents.has('');
  };
}
