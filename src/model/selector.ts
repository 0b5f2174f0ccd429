/**
 * Label selectors in canonical form. matchLabels are folded into `In` requirements, requirements
 * are sorted and de-duplicated, and the canonical `key` string identifies equal selectors — the
 * state layer indexes selectors by it. Besides Kubernetes' four operators, Calico's selector
 * language has substring matches (`k starts with 's'`, `ends with`, `contains`) and their
 * negations; Calico selectors are turned into disjunctions of these conjunctions at ingest.
 */
import type { Labels } from './basics.ts';
import { exactArray } from '../util/exact-array.ts';

export type SelectorOperator =
  | 'In'
  | 'NotIn'
  | 'Exists'
  | 'DoesNotExist'
  /** Calico's `k starts with 's'`: the label exists and its value starts with `values[0]`. */
  | 'StartsWith'
  | 'EndsWith'
  | 'Contains'
  /** The negation of StartsWith: the label is absent, or its value does not start with `values[0]`. */
  | 'NotStartsWith'
  | 'NotEndsWith'
  | 'NotContains';

export interface LabelRequirement {
  readonly key: string;
  readonly operator: SelectorOperator;
  /** Sorted and unique; empty for Exists and DoesNotExist; one substring for the substring operators. */
  readonly values: readonly string[];
}

export interface LabelSelector {
  /** Conjunction; empty means "everything". */
  readonly requirements: readonly LabelRequirement[];
  /** Canonical text, equal for selectors that are equal after normalization. */
  readonly key: string;
}

const OPERATOR_ORDER: Record<SelectorOperator, number> = {
  In: 0,
  NotIn: 1,
  Exists: 2,
  DoesNotExist: 3,
  StartsWith: 4,
  EndsWith: 5,
  Contains: 6,
  NotStartsWith: 7,
  NotEndsWith: 8,
  NotContains: 9,
};

/** How the substring operators read in a selector's text (Calico's words). */
const SUBSTRING_WORDS: Partial<Record<SelectorOperator, string>> = {
  StartsWith: 'starts with',
  EndsWith: 'ends with',
  Contains: 'contains',
  NotStartsWith: 'not starts with',
  NotEndsWith: 'not ends with',
  NotContains: 'not contains',
};

function requirementText(r: LabelRequirement): string {
  switch (r.operator) {
    case 'In':
      return r.values.length === 1 ? `${r.key}=${r.values[0]}` : `${r.key} in (${r.values.join(',')})`;
    case 'NotIn':
      return `${r.key} notin (${r.values.join(',')})`;
    case 'Exists':
      return r.key;
    case 'DoesNotExist':
      return `!${r.key}`;
    default:
      return `${r.key} ${SUBSTRING_WORDS[r.operator] ?? r.operator} ${JSON.stringify(r.values[0] ?? '')}`;
  }
}

/** Builds a canonical selector from validated matchLabels and requirements. */
export function makeSelector(
  matchLabels: Labels,
  expressions: readonly { key: string; operator: SelectorOperator; values: readonly string[] }[],
): LabelSelector {
  const all: LabelRequirement[] = [
    ...Object.entries(matchLabels).map(([key, value]) => ({
      key,
      operator: 'In' as const,
      values: [value],
    })),
    ...expressions.map((e) => ({ key: e.key, operator: e.operator, values: [...new Set(e.values)].sort() })),
  ];
  all.sort(
    (a, b) =>
      compareStrings(a.key, b.key) ||
      OPERATOR_ORDER[a.operator] - OPERATOR_ORDER[b.operator] ||
      compareStrings(a.values.join('\u0000'), b.values.join('\u0000')),
  );
  const requirements = exactArray(
    all.filter((r, i) => i === 0 || requirementText(r) !== requirementText(all[i - 1] as LabelRequirement)),
  );
  return { requirements, key: requirements.map(requirementText).join(',') };
}

export const MATCH_ALL: LabelSelector = { requirements: [], key: '' };

export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function selectorMatches(selector: LabelSelector, labels: Labels): boolean {
  for (const r of selector.requirements) {
    const has = Object.prototype.hasOwnProperty.call(labels, r.key);
    const value = has ? labels[r.key] : undefined;
    switch (r.operator) {
      case 'In':
        if (value === undefined || !r.values.includes(value)) return false;
        break;
      case 'NotIn':
        if (value !== undefined && r.values.includes(value)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        if (substringMatches(r.operator, r.values[0] ?? '', value) !== isPositive(r.operator)) return false;
    }
  }
  return true;
}

function isPositive(operator: SelectorOperator): boolean {
  return operator === 'StartsWith' || operator === 'EndsWith' || operator === 'Contains';
}

/** Whether the label value has the substring the operator asks about (an absent label has none). */
function substringMatches(operator: SelectorOperator, text: string, value: string | undefined): boolean {
  if (value === undefined) return false;
  if (operator === 'StartsWith' || operator === 'NotStartsWith') return value.startsWith(text);
  if (operator === 'EndsWith' || operator === 'NotEndsWith') return value.endsWith(text);
  return value.includes(text);
}

/** kubectl-style text (`app=web,tier in (a,b)`); `(all)` for the empty selector. */
export function selectorText(selector: LabelSelector): string {
  return selector.key === '' ? '(all)' : selector.key;
}
