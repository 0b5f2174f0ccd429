/**
 * Canonical tables: rules sorted by the seed's total order, duplicates removed, and identified
 * by a hash of their text, so equal policy sets give byte-identical tables that pods share.
 */
import { hash } from 'node:crypto';
import { prepareRule, ruleText, type PreparedRule, type Rule, type RuleTable } from '../model/rule.ts';

/** Sorts a fresh array, so callers' arrays are never reordered. */
export function canonicalTable(rules: readonly Rule[]): RuleTable {
  return tableOf(canonicalRules(rules.map(prepareRule)).map((p) => p.rule));
}

/** Sorts prepared rules into canonical order (in place) and drops repeated ones; returns them. */
export function canonicalRules(prepared: PreparedRule[]): PreparedRule[] {
  prepared.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  let kept = 0;
  for (const rule of prepared) {
    const last = kept > 0 ? prepared[kept - 1] : undefined;
    if (last && last.key === rule.key && last.rule.precedence === rule.rule.precedence) continue;
    prepared[kept++] = rule;
  }
  prepared.length = kept;
  return prepared;
}

/** A table of rules already in canonical order; its id is the hash of their text, made on first use. */
export function tableOf(rules: readonly Rule[]): RuleTable {
  let id: string | undefined;
  return {
    get id(): string {
      return (id ??= hash('sha256', rules.map((rule) => ruleText(rule) + '\n').join('')).slice(0, 16));
    },
    rules,
  };
}
