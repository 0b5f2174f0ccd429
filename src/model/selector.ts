/**
 * Label selectors in canonical form. matchLabels are folded into `In` requirements, requirements
 * are sorted and de-duplicated, and the canonical `key` string identifies equal selectors — the
 * state layer indexes selectors by it.
 */
import type { Labels } from './basics.ts';
import { exactArray } from '../util/exact-array.ts';

export type SelectorOperator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';

export interface LabelRequirement {
  readonly key: string;
  readonly operator: SelectorOperator;
  /** Sorted and unique; empty for Exists and DoesNotExist. */
  readonly values: readonly string[];
}

export interface LabelSelector {
  /** Conjunction; empty means "everything". */
  readonly requirements: readonly LabelRequirement[];
  /** Canonical text, equal for selectors that are equal after normalization. */
  readonly key: string;
}

const OPERATOR_ORDER: Record<SelectorOperator, number> = { In: 0, NotIn: 1, Exists: 2, DoesNotExist: 3 };

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
    }
  }
  return true;
}

/** kubectl-style text (`app=web,tier in (a,b)`); `(all)` for the empty selector. */
export function selectorText(selector: LabelSelector): string {
  return selector.key === '' ? '(all)' : selector.key;
}
