/**
 * Canonical tables: rules sorted by the seed's total order, duplicates removed, and identified
 * by a hash of their text, so equal policy sets give byte-identical tables that pods share.
 */
import { createHash } from 'node:crypto';
import { compareRules, ruleText, type Rule, type RuleTable } from '../model/rule.ts';

export function canonicalTable(rules: readonly Rule[]): RuleTable {
  const sorted = [...rules].sort(compareRules);
  const unique: Rule[] = [];
  const texts: string[] = [];
  for (const rule of sorted) {
    const text = ruleText(rule);
    if (text === texts[texts.length - 1]) continue;
    unique.push(rule);
    texts.push(text);
  }
  return { id: createHash('sha256').update(texts.join('\n')).digest('hex').slice(0, 16), rules: unique };
}
