/**
 * The store's cluster policies in precedence order, grouped by tier, direction and subject
 * namespace selector — many policies share a selector, so finding a namespace's candidates
 * evaluates each distinct selector once. Rebuilt lazily after changes: a resync upserting a
 * thousand policies sorts once, not a thousand times.
 */
import { selectorMatches } from '../model/selector.ts';
import { sortByPrecedence } from '../model/precedence.ts';
import { policyApplies, type TierSpec } from '../model/cluster-policy.ts';
import { tierOrder } from '../model/tier-order.ts';
import { exactArray } from '../util/exact-array.ts';
import type { ClusterPolicy, LabelSelector, Labels, Tier } from '../model/types.ts';

interface SelectorGroup {
  readonly selector: LabelSelector;
  /** In precedence order; never changed once built (candidates hand it out as is). */
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
const DIRECTIONS = ['ingress', 'egress'] as const;

/** A slot's name (`tier|direction`), made once per tier and direction rather than per lookup. */
const slotNames = new Map<Tier, { readonly ingress: string; readonly egress: string }>();
export function slotOf(tier: Tier, direction: 'ingress' | 'egress'): string {
  let names = slotNames.get(tier);
  if (!names) slotNames.set(tier, (names = { ingress: `${tier}|ingress`, egress: `${tier}|egress` }));
  return names[direction];
}

function indexSelectors(groups: Iterable<SelectorGroup>): SlotIndex {
  const index: SlotIndex = { byValue: new Map(), byKey: new Map(), rest: [] };
  for (const built of groups) {
    // Kept until the policies change: each list at its exact size (util/exact-array.ts).
    const group: SelectorGroup = { selector: built.selector, policies: exactArray(built.policies) };
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
        /** Each policy's place in `ordered`: made when first needed (`positions`). */
        position?: ReadonlyMap<ClusterPolicy, number>;
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
  ): readonly ClusterPolicy[] {
    if (!namespaceLabels) return [];
    const { slots } = this.build();
    const slot = slots.get(slotOf(tier, direction));
    if (!slot) return [];
    // Only the selectors that can match: those requiring one of the namespace's labels (by
    // value, or by key for Exists), and those requiring none. Each group's policies are in
    // precedence order already: one matching group (the usual case) is the answer as is.
    let first: SelectorGroup | undefined;
    let more: SelectorGroup[] | undefined;
    const visit = (groups: readonly SelectorGroup[] | undefined): void => {
      for (const group of groups ?? NO_GROUPS) {
        if (!selectorMatches(group.selector, namespaceLabels)) continue;
        if (!first) first = group;
        else (more ??= []).push(group);
      }
    };
    for (const label in namespaceLabels) {
      visit(slot.byValue.get(label)?.get(namespaceLabels[label] as string));
      visit(slot.byKey.get(label));
    }
    visit(slot.rest);
    if (!first) return [];
    if (!more) return first.policies;
    const found: ClusterPolicy[] = [...first.policies];
    for (const group of more) for (const policy of group.policies) found.push(policy);
    // A policy whose subjects have several namespace selectors can be found under more than one.
    const unique = [...new Set(found)];
    const position = this.positions();
    return unique.sort((a, b) => (position.get(a) as number) - (position.get(b) as number));
  }

  /**
   * Each policy's place in precedence order, for merging several selector groups' lists: made
   * only when a namespace first needs that (a Map set per policy was half of building the index).
   */
  private positions(): ReadonlyMap<ClusterPolicy, number> {
    const built = this.build();
    if (!built.position) {
      const position = new Map<ClusterPolicy, number>();
      built.ordered.forEach((policy, i) => position.set(policy, i));
      built.position = position;
    }
    return built.position;
  }

  private build() {
    if (this.built) return this.built;
    const ordered = sortByPrecedence([...this.byKey.values()]);
    // Per slot, its policies grouped by namespace selector key: a resync builds this for every
    // policy, so no per-policy Map or key string (the slot names are made once per tier).
    const bySlot = new Map<string, Map<string, SelectorGroup>>();
    const add = (slot: string, selector: LabelSelector, policy: ClusterPolicy): void => {
      let groups = bySlot.get(slot);
      if (!groups) bySlot.set(slot, (groups = new Map<string, SelectorGroup>()));
      const group = groups.get(selector.key);
      if (group) {
        // A policy whose subjects repeat a namespace selector is listed under it once.
        if (group.policies[group.policies.length - 1] !== policy) group.policies.push(policy);
      } else groups.set(selector.key, { selector, policies: [policy] });
    };
    for (const policy of ordered) {
      for (const direction of DIRECTIONS) {
        if (!policyApplies(policy, direction)) continue;
        const slot = slotOf(policy.tier, direction);
        add(slot, policy.subject.namespaceSelector, policy);
        for (const subject of policy.moreSubjects ?? []) add(slot, subject.namespaceSelector, policy);
      }
    }
    const slots = new Map<string, SlotIndex>();
    for (const [slot, groups] of bySlot) slots.set(slot, indexSelectors(groups.values()));
    return (this.built = { ordered, slots, tiers: tierOrder(ordered) });
  }
}
