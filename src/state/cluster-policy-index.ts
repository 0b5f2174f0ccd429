/**
 * The store's cluster policies in precedence order, grouped by tier, direction and subject
 * namespace selector — many policies share a selector, so finding a namespace's candidates
 * evaluates each distinct selector once. Rebuilt lazily after changes: a resync upserting a
 * thousand policies sorts once, not a thousand times.
 */
import { selectorMatches } from '../model/selector.ts';
import { comparePolicies } from '../model/precedence.ts';
import type { ClusterPolicy, LabelSelector, Labels, Tier } from '../model/types.ts';

interface SelectorGroup {
  readonly selector: LabelSelector;
  readonly policies: ClusterPolicy[];
}

export class ClusterPolicyIndex {
  private readonly byKey = new Map<string, ClusterPolicy>();
  private built:
    | {
        readonly ordered: readonly ClusterPolicy[];
        readonly position: ReadonlyMap<ClusterPolicy, number>;
        readonly groups: ReadonlyMap<string, readonly SelectorGroup[]>;
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

  /** Policies of a tier with rules in the direction whose subject namespace selector matches, in order. */
  candidates(
    tier: Tier,
    direction: 'ingress' | 'egress',
    namespaceLabels: Labels | undefined,
  ): ClusterPolicy[] {
    if (!namespaceLabels) return [];
    const { groups, position } = this.build();
    const found: ClusterPolicy[] = [];
    for (const group of groups.get(`${tier}|${direction}`) ?? [])
      if (selectorMatches(group.selector, namespaceLabels))
        for (const policy of group.policies) found.push(policy);
    return found.sort((a, b) => (position.get(a) as number) - (position.get(b) as number));
  }

  private build() {
    if (this.built) return this.built;
    const ordered = [...this.byKey.values()].sort(comparePolicies);
    const position = new Map(ordered.map((p, i) => [p, i] as const));
    const bySlot = new Map<string, Map<string, SelectorGroup>>();
    for (const policy of ordered) {
      for (const direction of ['ingress', 'egress'] as const) {
        if (policy[direction].length === 0) continue;
        const slot = `${policy.tier}|${direction}`;
        const groups = bySlot.get(slot) ?? new Map<string, SelectorGroup>();
        const selector = policy.subject.namespaceSelector;
        const group = groups.get(selector.key) ?? { selector, policies: [] };
        group.policies.push(policy);
        groups.set(selector.key, group);
        bySlot.set(slot, groups);
      }
    }
    const groups = new Map([...bySlot].map(([slot, g]) => [slot, [...g.values()]] as const));
    return (this.built = { ordered, position, groups });
  }
}
