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
  sortByKey(prepared);
  let kept = 0;
  for (const rule of prepared) {
    const last = kept > 0 ? prepared[kept - 1] : undefined;
    if (last && last.key === rule.key && last.rule.precedence === rule.rule.precedence) continue;
    prepared[kept++] = rule;
  }
  prepared.length = kept;
  return prepared;
}

/** Tables this short are sorted by insertion, without the temporary array a built-in sort makes. */
const INSERTION_SORT_MAX = 24;

/** Sorts by key, in place; equal keys keep their order (as the built-in sort does). */
function sortByKey(rules: PreparedRule[]): void {
  if (rules.length > INSERTION_SORT_MAX) {
    rules.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return;
  }
  for (let i = 1; i < rules.length; i++) {
    const rule = rules[i] as PreparedRule;
    let j = i - 1;
    while (j >= 0 && (rules[j] as PreparedRule).key > rule.key) {
      rules[j + 1] = rules[j] as PreparedRule;
      j--;
    }
    rules[j + 1] = rule;
  }
}

/** A table of rules already in canonical order; its id is the hash of their text, made on first use. */
export function tableOf(rules: readonly Rule[]): RuleTable {
  return new CanonicalTable(rules);
}

/** The id getter lives on the prototype: a table is two fields, not an object with its own accessor. */
class CanonicalTable implements RuleTable {
  /** A #private field: not an own property, so equal tables stay deep-equal whether hashed or not. */
  #hashed: string | undefined;

  constructor(readonly rules: readonly Rule[]) {}

  get id(): string {
    return (this.#hashed ??= tableIdOf(this.rules));
  }
}

/** The start of the sha256 of a table's text, one rule per line. */
function tableIdOf(rules: readonly Rule[]): string {
  let text = '';
  for (const rule of rules) text += ruleText(rule) + '\n';
  return hash('sha256', text).slice(0, 16);
}
