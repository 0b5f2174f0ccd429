/**
 * Canonical tables: rules sorted by the seed's total order, duplicates removed, and identified
 * by a hash of their text, so equal policy sets give byte-identical tables that pods share.
 */
import { createHash } from 'node:crypto';
import { prepareRule, type PreparedRule, type Rule, type RuleTable } from '../model/rule.ts';

export function canonicalTable(rules: readonly Rule[]): RuleTable {
  return canonicalTableOf(rules.map(prepareRule));
}

/** The same for rules already prepared (text and sort key computed once and reused). */
export function canonicalTableOf(prepared: readonly PreparedRule[]): RuleTable {
  const sorted = [...prepared].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const rules: Rule[] = [];
  const hash = createHash('sha256');
  let previous = '';
  for (const { rule, text } of sorted) {
    if (text === previous) continue;
    rules.push(rule);
    hash.update(text).update('\n');
    previous = text;
  }
  return { id: hash.digest('hex').slice(0, 16), rules };
}
