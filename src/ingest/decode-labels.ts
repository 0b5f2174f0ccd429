/**
 * Label maps and label selectors: validated as the API server does, then made canonical.
 */
import { makeSelector, type LabelSelector, type SelectorOperator } from '../model/selector.ts';
import type { Labels } from '../model/types.ts';
import { valueAt, type DecodeContext } from './decode-context.ts';
import type { RawLabelSelector } from './schemas.ts';
import type { FieldPath } from './types.ts';
import { labelKeyProblem, labelValueProblem } from './validate-names.ts';

const OPERATORS: readonly SelectorOperator[] = ['In', 'NotIn', 'Exists', 'DoesNotExist'];

/** Validates a label map; invalid entries are reported (errors) and left out. */
export function decodeLabels(
  ctx: DecodeContext,
  labels: Record<string, string> | null | undefined,
  path: FieldPath,
): Labels {
  const result: Record<string, string> = {};
  for (const [key, value] of Object.entries(labels ?? {})) {
    if (labelIsValid(ctx, key, value, path)) result[key] = value;
  }
  reportProtoKey(ctx, labels, path);
  return result;
}

/**
 * Reports a label's key and value problems; true when it has none. A value that is not a string
 * (only a `__proto__` key's, which zod never looked at) has only its key judged: that is refused.
 */
function labelIsValid(ctx: DecodeContext, key: string, value: unknown, path: FieldPath): boolean {
  // Both are checked, as the API server does: one round of fixes, not two.
  const keyProblem = labelKeyProblem(key);
  if (keyProblem)
    ctx.report('LABEL_KEY_INVALID', `label key "${key}" is invalid: ${keyProblem}`, [...path, key], true);
  const text = typeof value === 'string' ? value : undefined;
  const valueProblem = text === undefined ? undefined : labelValueProblem(text);
  if (valueProblem) {
    ctx.report('LABEL_VALUE_INVALID', `label value "${text}" for "${key}" is invalid: ${valueProblem}`, [
      ...path,
      key,
    ]);
  }
  return !keyProblem && !valueProblem;
}

/**
 * zod's record leaves a `__proto__` key out of what it gives back (assigning it would set the
 * prototype), unchecked, so `matchLabels: {__proto__: x}` read through zod came out empty — a
 * selector of every pod, silently. The raw map still has the key as its own: judge it there (it
 * is never a valid label key, so the object is refused). A map read as it is (decode-shapes.ts)
 * is the raw one and never has such a key.
 */
function reportProtoKey(ctx: DecodeContext, labels: object | null | undefined, path: FieldPath): void {
  if (labels === null || labels === undefined) return;
  const raw = valueAt(ctx.raw.value, path);
  if (raw === labels || raw === null || typeof raw !== 'object' || !Object.hasOwn(raw, '__proto__')) return;
  labelIsValid(ctx, '__proto__', (raw as Record<string, unknown>)['__proto__'], path);
}

/**
 * A matchExpression's operator, with its values checked against it (In and NotIn need some,
 * Exists and DoesNotExist take none; each problem reported); undefined when it is no operator.
 */
export function checkedOperator(
  ctx: DecodeContext,
  expression: { readonly operator: string; readonly values?: readonly string[] | null | undefined },
  at: FieldPath,
): SelectorOperator | undefined {
  const operator = OPERATORS.find((op) => op === expression.operator);
  const values = expression.values ?? [];
  if (!operator) {
    ctx.report(
      'SELECTOR_OPERATOR_INVALID',
      `operator "${expression.operator}" is not one of In, NotIn, Exists, DoesNotExist`,
      [...at, 'operator'],
    );
    return undefined;
  }
  if ((operator === 'In' || operator === 'NotIn') && values.length === 0)
    ctx.report('SELECTOR_VALUES_REQUIRED', `operator ${operator} needs at least one value`, [
      ...at,
      'operator',
    ]);
  if ((operator === 'Exists' || operator === 'DoesNotExist') && values.length > 0)
    ctx.report('SELECTOR_VALUES_FORBIDDEN', `operator ${operator} takes no values`, [...at, 'values']);
  return operator;
}

/** Validates a selector; returns it in canonical form, or undefined after reporting errors. */
export function decodeSelector(
  ctx: DecodeContext,
  raw: RawLabelSelector | null | undefined,
  path: FieldPath,
): LabelSelector | undefined {
  let ok = true;
  const before = ctx.diagnostics.length;
  const matchLabels = decodeLabels(ctx, raw?.matchLabels, [...path, 'matchLabels']);
  if (ctx.diagnostics.length > before) ok = false;
  const expressions: { key: string; operator: SelectorOperator; values: string[] }[] = [];
  (raw?.matchExpressions ?? []).forEach((expression, index) => {
    const at = [...path, 'matchExpressions', index];
    const keyProblem = labelKeyProblem(expression.key);
    if (keyProblem) {
      ctx.report('LABEL_KEY_INVALID', `selector key "${expression.key}" is invalid: ${keyProblem}`, [
        ...at,
        'key',
      ]);
      ok = false;
    }
    const reported = ctx.diagnostics.length;
    const operator = checkedOperator(ctx, expression, at);
    if (ctx.diagnostics.length > reported) ok = false;
    if (!operator) return;
    const values = expression.values ?? [];
    values.forEach((value, valueIndex) => {
      const problem = labelValueProblem(value);
      if (problem) {
        ctx.report('LABEL_VALUE_INVALID', `selector value "${value}" is invalid: ${problem}`, [
          ...at,
          'values',
          valueIndex,
        ]);
        ok = false;
      }
    });
    expressions.push({ key: expression.key, operator, values });
  });
  return ok ? makeSelector(matchLabels, expressions) : undefined;
}
