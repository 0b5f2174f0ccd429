/**
 * Canonical tables: rules sorted by the seed's total order, duplicates removed, and identified
 * by a hash of their text, so equal policy sets give byte-identical tables that pods share.
 */
import { hash } from 'node:crypto';
import { prepareRule, type PreparedRule, type Rule, type RuleTable } from '../model/rule.ts';

/** Sorts a fresh array, so callers' arrays are never reordered. */
export function canonicalTable(rules: readonly Rule[]): RuleTable {
  return canonicalTableOf(rules.map(prepareRule));
}

/**
 * The same for rules already prepared (text and sort key computed once and reused). Sorts the
 * given array in place: callers pass a fresh one.
 */
export function canonicalTableOf(prepared: PreparedRule[]): RuleTable {
  prepared.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const rules: Rule[] = [];
  let text = '';
  let previous = '';
  for (const rule of prepared) {
    if (rule.text === previous) continue;
    rules.push(rule.rule);
    text += rule.text + '\n';
    previous = rule.text;
  }
  return { id: hash('sha256', text).slice(0, 16), rules };
}
