/**
 * The store's cluster policies in precedence order, grouped by tier, direction and subject
 * namespace selector — many policies share a selector, so finding a namespace's candidates
 * evaluates each distinct selector once. Rebuilt lazily after changes: a resync upserting a
 * thousand policies sorts once, not a thousand times.
 */
import { selectorMatches } from '../model/selector.ts';
import { comparePolicies } from '../model/precedence.ts';
import { policyApplies, policySubjects, type TierSpec } from '../model/cluster-policy.ts';
import { tierOrder } from '../model/tier-order.ts';
import type { ClusterPolicy, LabelSelector, Labels, Tier } from '../model/types.ts';

interface SelectorGroup {
  readonly selector: LabelSelector;
  readonly policies: ClusterPolicy[];
}

/**
 * A slot's subject selectors by a label they require: a matchLabels pair (`key`, `value`), else
 * an Exists (`key`); `rest` require no label. A namespace only tests those its labels reach.
 */
interface SlotIndex {
  readonly byValue: Map<string, Map<string, SelectorGroup[]>>;
  readonly byKey: Map<string, SelectorGroup[]>;
  readonly rest: SelectorGroup[];
}

const NO_GROUPS: readonly SelectorGroup[] = [];

function indexSelectors(groups: Iterable<SelectorGroup>): SlotIndex {
  const index: SlotIndex = { byValue: new Map(), byKey: new Map(), rest: [] };
  for (const group of groups) {
    const requirements = group.selector.requirements;
    const pair = requirements.find((r) => r.operator === 'In' && r.values.length === 1);
    const exists = requirements.find((r) => r.operator === 'Exists');
    if (pair) {
      let byValue = index.byValue.get(pair.key);
      if (!byValue) index.byValue.set(pair.key, (byValue = new Map<string, SelectorGroup[]>()));
      const list = byValue.get(pair.values[0] as string);
      if (list) list.push(group);
      else byValue.set(pair.values[0] as string, [group]);
    } else if (exists) {
      const list = index.byKey.get(exists.key);
      if (list) list.push(group);
      else index.byKey.set(exists.key, [group]);
    } else index.rest.push(group);
  }
  return index;
}

export class ClusterPolicyIndex {
  private readonly byKey = new Map<string, ClusterPolicy>();
  private built:
    | {
        readonly ordered: readonly ClusterPolicy[];
        readonly position: ReadonlyMap<ClusterPolicy, number>;
        readonly slots: ReadonlyMap<string, SlotIndex>;
        readonly tiers: readonly TierSpec[];
      }
    | undefined;

  get(key: string): ClusterPolicy | undefined {
    return this.byKey.get(key);
  }

  set(key: string, policy: ClusterPolicy): void {
    this.byKey.set(key, policy);
    this.built = undefined;
  }

  delete(key: string): void {
    if (this.byKey.delete(key)) this.built = undefined;
  }

  entries(): IterableIterator<[string, ClusterPolicy]> {
    return this.byKey.entries();
  }

  get size(): number {
    return this.byKey.size;
  }

  ordered(): readonly ClusterPolicy[] {
    return this.build().ordered;
  }

  /** The tiers in the order a side visits them (model/tier-order.ts). */
  tierPlan(): readonly TierSpec[] {
    return this.build().tiers;
  }

  /** Policies of a tier with rules in the direction whose subject namespace selector matches, in order. */
  candidates(
    tier: Tier,
    direction: 'ingress' | 'egress',
    namespaceLabels: Labels | undefined,
  ): ClusterPolicy[] {
    if (!namespaceLabels) return [];
    const { slots, position } = this.build();
    const slot = slots.get(`${tier}|${direction}`);
    if (!slot) return [];
    const found: ClusterPolicy[] = [];
    const visit = (group: SelectorGroup): void => {
      if (selectorMatches(group.selector, namespaceLabels))
        for (const policy of group.policies) found.push(policy);
    };
    // Only the selectors that can match: those requiring one of the namespace's labels (by
    // value, or by key for Exists), and those requiring none.
    for (const label in namespaceLabels) {
      const byValue = slot.byValue.get(label);
      const value = namespaceLabels[label] as string;
      for (const group of byValue?.get(value) ?? NO_GROUPS) visit(group);
      for (const group of slot.byKey.get(label) ?? NO_GROUPS) visit(group);
    }
    for (const group of slot.rest) visit(group);
    // A policy whose subjects have several namespace selectors can be found under more than one.
    const unique = found.length > 1 ? [...new Set(found)] : found;
    return unique.sort((a, b) => (position.get(a) as number) - (position.get(b) as number));
  }

  private build() {
    if (this.built) return this.built;
    const ordered = [...this.byKey.values()].sort(comparePolicies);
    const position = new Map(ordered.map((p, i) => [p, i] as const));
    const bySlot = new Map<string, Map<string, SelectorGroup>>();
    for (const policy of ordered) {
      for (const direction of ['ingress', 'egress'] as const) {
        if (!policyApplies(policy, direction)) continue;
        const slot = `${policy.tier}|${direction}`;
        const groups = bySlot.get(slot) ?? new Map<string, SelectorGroup>();
        // Under each of its subjects' namespace selectors (once per distinct one).
        const selectors = new Map(
          policySubjects(policy).map((s) => [s.namespaceSelector.key, s.namespaceSelector]),
        );
        for (const [key, selector] of selectors) {
          const group = groups.get(key) ?? { selector, policies: [] };
          group.policies.push(policy);
          groups.set(key, group);
        }
        bySlot.set(slot, groups);
      }
    }
    const slots = new Map([...bySlot].map(([slot, g]) => [slot, indexSelectors(g.values())] as const));
    return (this.built = { ordered, position, slots, tiers: tierOrder(ordered) });
  }
}
