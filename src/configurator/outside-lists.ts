/**
 * The Admin lists a permit side's blocks outside the cluster go to (configurator.ts
 * `permitTable`): permits only, no deny, visited before the side's table by every datapath.
 */
import { hash } from 'node:crypto';
import { ruleText, type Rule } from '../model/rule.ts';
import type { TieredTable } from './types.ts';

/**
 * The Admin list of one rule's outside blocks: permits only, no deny (no match goes on to the
 * table). Named by its content, as every list is; made once per rule and variant.
 */
export function outsideList(rules: readonly Rule[]): TieredTable {
  return new OutsideList(rules, () => `outside\u0002${rules.map(ruleText).join('\n')}`);
}

/** A side's rules' outside lists as one (one rule's, the usual case: that list itself, shared). */
export function joinedLists(lists: readonly TieredTable[]): TieredTable {
  if (lists.length === 1) return lists[0] as TieredTable;
  return new OutsideList(
    lists.flatMap((list) => list.admin),
    () => `outside\u0002${lists.map((list) => list.id).join('|')}`,
  );
}

/**
 * An outside list whose id (a hash of its content's text) is made when first asked, as a
 * table's is (table-id.ts): compiling does not read it, renderers do.
 */
class OutsideList implements TieredTable {
  readonly baseline: readonly Rule[] = [];
  #id: string | undefined;
  readonly #text: () => string;

  constructor(
    readonly admin: readonly Rule[],
    text: () => string,
  ) {
    this.#text = text;
  }

  get id(): string {
    return (this.#id ??= hash('sha256', this.#text()).slice(0, 16));
  }
}
