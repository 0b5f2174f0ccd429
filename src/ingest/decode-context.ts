/**
 * Per-object decoding context: turns field paths into located diagnostics and remembers whether
 * the object had an error (an object with an error is reported and skipped as a whole).
 */
import type { z } from 'zod';
import { makeDiagnostic, type Diagnostic, type DiagnosticCode } from '../model/diagnostics.ts';
import type { FieldPath, RawObject } from './types.ts';
import { closest } from '../util/closest.ts';

/** Field names of the strict (NetworkPolicy) schemas, for typo suggestions. */
const KNOWN_FIELDS = [
  'apiVersion',
  'kind',
  'metadata',
  'spec',
  'status',
  'podSelector',
  'namespaceSelector',
  'ipBlock',
  'cidr',
  'except',
  'matchLabels',
  'matchExpressions',
  'key',
  'operator',
  'values',
  'protocol',
  'port',
  'endPort',
  'policyTypes',
  'ingress',
  'egress',
  'from',
  'to',
  'ports',
];

export function formatPath(path: FieldPath): string {
  let text = '';
  for (const part of path) text += typeof part === 'number' ? `[${part}]` : text === '' ? part : `.${part}`;
  return text;
}

export class DecodeContext {
  readonly diagnostics: Diagnostic[] = [];
  private errorCount = 0;

  constructor(
    readonly raw: RawObject,
    /** `Kind ns/name` for messages. */
    readonly objectName: string,
    /** The namespace of namespaced objects that name none (`default`, or `-n`'s, as kubectl). */
    readonly defaultNamespace = 'default',
  ) {}

  get failed(): boolean {
    return this.errorCount > 0;
  }

  /** Reports a problem at the value (or, with `atKey`, the key) found at `path` inside the object. */
  report(code: DiagnosticCode, message: string, path: FieldPath, atKey = false): void {
    const full = [...this.raw.basePath, ...path];
    const where = atKey ? this.raw.locator.keyAt(full) : this.raw.locator.valueAt(full);
    const diagnostic = makeDiagnostic(code, message, {
      ...where,
      object: this.objectName,
      ...(path.length > 0 ? { path: formatPath(path) } : {}),
    });
    if (diagnostic.severity === 'error') this.errorCount++;
    this.diagnostics.push(diagnostic);
  }

  /**
   * Reports a problem at character `index` of the string at `path` (a Calico selector's mistake
   * where it is), or at the string itself when its source does not spell it out character for
   * character.
   */
  reportInString(code: DiagnosticCode, message: string, path: FieldPath, index: number): void {
    const full = [...this.raw.basePath, ...path];
    const where = this.raw.locator.stringCharAt?.(full, index) ?? this.raw.locator.valueAt(full);
    const diagnostic = makeDiagnostic(code, message, {
      ...where,
      object: this.objectName,
      ...(path.length > 0 ? { path: formatPath(path) } : {}),
    });
    if (diagnostic.severity === 'error') this.errorCount++;
    this.diagnostics.push(diagnostic);
  }

  /** Whether an error was reported since there were `count` diagnostics (no list made per call). */
  errorSince(count: number): boolean {
    for (let i = count; i < this.diagnostics.length; i++)
      if (this.diagnostics[i]?.severity === 'error') return true;
    return false;
  }

  /** Forgets the diagnostics reported since `index` that `drop` picks (see prune-mistyped.ts). */
  dropSince(index: number, drop: (diagnostic: Diagnostic) => boolean): void {
    const kept = this.diagnostics.slice(index).filter((d) => !drop(d));
    this.diagnostics.length = index;
    this.diagnostics.push(...kept);
  }

  /** How the number at `path` inside the object was written, when not as a decimal integer. */
  numberFormAt(path: FieldPath): string | undefined {
    return this.raw.locator.numberFormAt?.([...this.raw.basePath, ...path]);
  }

  /** Turns zod's structural issues into located diagnostics; `knownFields` are the schema's, for typo hints. */
  reportSchemaIssues(
    issues: readonly z.core.$ZodIssue[],
    knownFields: readonly string[] = KNOWN_FIELDS,
  ): void {
    for (const issue of issues) {
      const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
      if (issue.code === 'unrecognized_keys') {
        for (const key of issue.keys) {
          const suggestion = suggest(key, knownFields);
          const hint = suggestion ? ` (did you mean "${suggestion}"?)` : '';
          const message = `unknown field "${formatPath([...path, key])}"${hint}`;
          this.report('SCHEMA_UNKNOWN_FIELD', message, [...path, key], true);
        }
      } else if (issue.code === 'invalid_type' && valueAt(this.raw.value, path) === undefined) {
        this.report('SCHEMA_REQUIRED', `missing required field "${formatPath(path)}"`, path, true);
      } else if (issue.code === 'invalid_type') {
        const actual = describeType(valueAt(this.raw.value, path));
        this.report(
          'SCHEMA_TYPE',
          `"${formatPath(path)}" must be ${article(issue.expected)}, not ${actual}`,
          path,
        );
      } else if (issue.code === 'invalid_union') {
        const actual = describeType(valueAt(this.raw.value, path));
        this.report('SCHEMA_TYPE', `"${formatPath(path)}" must be a number or a string, not ${actual}`, path);
      } else {
        this.report('SCHEMA_TYPE', `"${formatPath(path)}": ${issue.message}`, path);
      }
    }
  }
}

/** Fields of every object's metadata (ObjectMeta; `clusterName` and `initializers` from older clusters). */
const OBJECT_META_FIELDS = [
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
  'clusterName',
  'initializers',
];

/**
 * Reports fields of the metadata at `path` that ObjectMeta does not have — `lables:` would
 * otherwise leave a pod without labels and every policy's answer about it silently wrong (kubectl
 * rejects the object). True when there was one.
 */
export function reportUnknownMetadata(ctx: DecodeContext, path: FieldPath): boolean {
  const metadata = valueAt(ctx.raw.value, path);
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) return false;
  let found = false;
  for (const key of Object.keys(metadata)) {
    if (OBJECT_META_FIELDS.includes(key)) continue;
    const suggestion = suggest(key, OBJECT_META_FIELDS);
    const hint = suggestion ? ` (did you mean "${suggestion}"?)` : '';
    ctx.report(
      'SCHEMA_UNKNOWN_FIELD',
      `unknown field "${formatPath([...path, key])}"${hint}`,
      [...path, key],
      true,
    );
    found = true;
  }
  return found;
}

/** The closest known field, for keys short enough to be typos (edit distance is quadratic). */
function suggest(key: string, known: readonly string[]): string | undefined {
  return key.length <= 64 ? closest(key, known) : undefined;
}

/** The value at `path` inside `root`, or undefined when the path leaves the value. */
export function valueAt(root: unknown, path: FieldPath): unknown {
  let value = root;
  for (const part of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string | number, unknown>)[part];
  }
  return value;
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  // As YAML writes them: JSON has no spelling for these (it would say null).
  if (typeof value === 'number' && !Number.isFinite(value))
    return Number.isNaN(value) ? '.nan' : value > 0 ? '.inf' : '-.inf';
  return `the ${typeof value} ${JSON.stringify(value)}`;
}

function article(expected: string): string {
  // A label map is zod's `record`: to the user it is a mapping like any other.
  if (expected === 'object' || expected === 'record') return 'a mapping';
  if (expected === 'array') return 'a list';
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
}
