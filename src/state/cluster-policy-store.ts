/**
 * The store's half for ordered cluster policy: the policies (indexed by tier, direction and
 * subject selector), the nodes, the groups each policy holds, and which policies select a pod —
 * cached per namespace and label set, dropped when a policy or the namespace's labels change.
 * ClusterState owns the pods and namespaces it reads, and turns these changes into deltas.
 */
import { clusterPolicyKey, policySelects, policySubjects, type TierSpec } from '../model/cluster-policy.ts';
import { selectorMatches } from '../model/selector.ts';
import type { ClusterPolicy, Endpoint, Labels, NodeInfo } from '../model/types.ts';
import { ipKey, type IpAddress } from '../net/ip.ts';
import { canonicalNodes, clusterPolicyGroupUses } from './cluster-policy-groups.ts';
import { ClusterPolicyIndex, slotOf } from './cluster-policy-index.ts';
import type { GroupIndex } from './groups.ts';
import { labelSetKey } from './label-sets.ts';
import type { StateReader } from './state-reader.ts';
import type { GroupSpec, PlanSelection, PodPlans, TierSelection } from './types.ts';
import { HashBuckets, serialListHash } from '../util/serial-hash.ts';
import { exactArray } from '../util/exact-array.ts';
import { holdsPolicies, Plan, PolicySerials, Selection } from './cluster-policy-selections.ts';

/** Owner key of a cluster policy's groups (NetworkPolicy owners are `ns/name`, never with a colon). */
export const clusterPolicyOwner = (key: string): string => `cnp:${key}`;
const NO_TIER: TierSelection = { policies: [], key: '', serial: -1, policySerials: [] };
/** What `upsert` returns: the version a policy replaced, and the pods that version selected. */
type Replaced = Readonly<{ before?: ClusterPolicy; selectedBefore?: readonly string[] }>;
/** For a policy that replaced none (shared: callers only read it). */
const NOT_REPLACED: Replaced = Object.freeze({});
/** Candidates a slot's subsets are found by as a bit mask (a small integer). */
const MAX_MASKED = 30;
/** Distinct selections kept interned (a few hundred in a cluster; stale ones accumulate under churn). */
const MAX_INTERNED = 100_000;

interface SlotSelections {
  /** Its name (`tier|direction`). */
  readonly slot: string;
  /** The slot's policies whose subject namespace selector matches the namespace. */
  readonly candidates: TierSelection;
  /** Whether some candidate has a pod selector (else every pod of the namespace has them all). */
  readonly selective: boolean;
  /** Subsets of the candidates selecting some pod, by which select (`selectedFrom`). */
  subsets?: Map<number, TierSelection>;
}

/** A namespace's slot entries per direction in the plan's order, and its pods' plans by label set. */
interface NamespacePlans {
  readonly plan: readonly TierSpec[];
  readonly ingress: readonly SlotSelections[];
  readonly egress: readonly SlotSelections[];
  readonly byLabels: Map<string, PodPlans>;
}

/** What the store reads from the rest of ClusterState. */
type ClusterPolicyHost = Pick<StateReader, 'namespaceLabels' | 'pod' | 'podsByNamespace'>;

export class ClusterPolicyStore {
  private readonly policies = new ClusterPolicyIndex();
  /** Group keys each policy holds, including relative peers' groups acquired per namespace. */
  private readonly held = new Map<string, Set<string>>();
  private readonly nodeMap = new Map<string, NodeInfo>();
  private nodeRevision = 0;
  /**
   * Host-network pods' addresses, by pod: a node's, even where the input has no Node with them,
   * so never outside the cluster (the reference evaluator's `isClusterAddress`). Kept with the
   * nodes, in their version: an outside block is cut by both (cluster-policy-groups.ts).
   */
  private readonly hostNetworkAddresses = new Map<string, readonly IpAddress[]>();
  /** How many host-network pods have each address (`family:value`): a shared one cuts once. */
  private readonly hostAddressPods = new Map<string, number>();
  /** The nodes' addresses (`family:value`), made again when the nodes change. */
  private nodeAddresses: { readonly version: number; readonly keys: ReadonlySet<string> } | undefined;
  private sortedNodes: { readonly version: number; readonly nodes: readonly NodeInfo[] } | undefined;
  /**
   * Per namespace, its slot entries and its pods' plans by label set (`podPlans`): dropped for a
   * namespace when its labels change, and for all when a policy changes.
   */
  private readonly plans = new Map<string, NamespacePlans>();
  /** The empty plans of the current tier plan (`emptyPlans`). */
  private empty: PodPlans | undefined;
  /**
   * One selection object per slot and distinct list of policies (by key), so that callers can
   * memoize by the object: equal keys in 25,000 namespaces were 25,000 strings, each built into
   * a longer key and hashed per pod.
   */
  private readonly interned = new Map<string, HashBuckets<TierSelection, readonly ClusterPolicy[]>>();
  /** Selections interned so far: the next one's serial number (never reused). */
  private selectionCount = 0;
  private internedCount = 0;
  private readonly serials = new PolicySerials();

  constructor(
    private readonly host: ClusterPolicyHost,
    /** Where the policies' peers' groups are held. */
    private readonly groups: GroupIndex,
  ) {}

  get(key: string): ClusterPolicy | undefined {
    return this.policies.get(key);
  }
  /** In precedence order. */
  ordered(): readonly ClusterPolicy[] {
    return this.policies.ordered();
  }
  entries(): IterableIterator<[string, ClusterPolicy]> {
    return this.policies.entries();
  }
  node(name: string): NodeInfo | undefined {
    return this.nodeMap.get(name);
  }
  /** Nodes by name (the same nodes always in the same order). */
  nodes(): readonly NodeInfo[] {
    if (this.sortedNodes?.version !== this.nodeRevision) {
      const nodes = [...this.nodeMap.values()].sort((a, b) =>
        a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
      );
      this.sortedNodes = {
        version: this.nodeRevision,
        nodes: canonicalNodes(nodes, [...this.hostNetworkAddresses.values()].flat()),
      };
    }
    return this.sortedNodes.nodes;
  }
  get nodesVersion(): number {
    return this.nodeRevision;
  }

  /** Every tier's selection for the pod side, in the plan's order (see `podPlans`). */
  planSelection(pod: Endpoint, direction: 'ingress' | 'egress'): PlanSelection {
    return this.podPlans(pod)[direction];
  }

  /**
   * Both of the pod's sides' plans: every tier's policies selecting the pod for the direction,
   * in precedence order, in the plan's order of tiers. Found once per namespace and pod label set,
   * both sides at once (as NetworkPolicy's selection is): a lookup per side was most of what
   * Calico's and Cilium's compile paid over NetworkPolicy's. Namespace selectors are evaluated
   * once per namespace (its slot entries); pod selectors once per label set and policy.
   */
  podPlans(pod: Endpoint): PodPlans {
    // Without cluster policy (or for a host-network pod) every side's plan is the same empty one,
    // remembered nowhere else: a plan per namespace and label set held 57 MB at shape (a) ×1, and
    // pushed its compile into a full garbage collection (0.9 s).
    if (pod.hostNetwork || this.policies.size === 0) return this.emptyPlans();
    const byNamespace = this.plans.get(pod.namespace) ?? this.namespacePlans(pod.namespace);
    const labels = labelSetKey(pod.labels);
    let found = byNamespace.byLabels.get(labels);
    if (!found) {
      const namespaceLabels = this.host.namespaceLabels(pod.namespace);
      found = {
        ingress: this.planOf(byNamespace.plan, byNamespace.ingress, namespaceLabels, pod),
        egress: this.planOf(byNamespace.plan, byNamespace.egress, namespaceLabels, pod),
      };
      byNamespace.byLabels.set(labels, found);
    }
    return found;
  }

  /** A namespace's slot entries, per direction in the plan's order: found once per namespace. */
  private namespacePlans(namespace: string): NamespacePlans {
    const plan = this.tierPlan();
    const namespaceLabels = this.host.namespaceLabels(namespace);
    const slots = (direction: 'ingress' | 'egress'): SlotSelections[] =>
      plan.map((tier) => {
        const slot = slotOf(tier.name, direction);
        const candidates = this.selectionOf(
          slot,
          this.policies.candidates(tier.name, direction, namespaceLabels),
        );
        const selective = candidates.policies.some((p) => p.subject.podSelector || p.moreSubjects);
        return { slot, candidates, selective };
      });
    const plans: NamespacePlans = {
      plan,
      ingress: slots('ingress'),
      egress: slots('egress'),
      byLabels: new Map(),
    };
    this.plans.set(namespace, plans);
    return plans;
  }

  /** One side's plan: each slot's candidates that select the pod. */
  private planOf(
    plan: readonly TierSpec[],
    slots: readonly SlotSelections[],
    namespaceLabels: Labels | undefined,
    pod: Endpoint,
  ): Plan {
    // One plan per pod label set, kept: an array of the exact size (util/exact-array.ts).
    const selections = new Array<TierSelection>(slots.length);
    for (let i = 0; i < slots.length; i++) {
      const entry = slots[i] as SlotSelections;
      selections[i] = entry.selective ? this.selectedFrom(entry, namespaceLabels, pod) : entry.candidates;
    }
    return new Plan(plan, selections);
  }

  /**
   * The slot's candidates that select the pod. When all of them do, their own selection; else the
   * namespace's selection of that subset, found by which candidates select (one bit each): the
   * pods of a namespace fall into a few subsets, and interning each pod's list was a third of
   * finding its plans.
   */
  private selectedFrom(
    entry: SlotSelections,
    namespaceLabels: Labels | undefined,
    pod: Endpoint,
  ): TierSelection {
    const candidates = entry.candidates.policies;
    if (candidates.length > MAX_MASKED) return this.selectedByList(entry, namespaceLabels, pod);
    let mask = 0;
    for (let i = 0; i < candidates.length; i++)
      if (policySelects(candidates[i] as ClusterPolicy, namespaceLabels, pod)) mask |= 1 << i;
    if (mask === (1 << candidates.length) - 1) return entry.candidates;
    const subsets = (entry.subsets ??= new Map<number, TierSelection>());
    let selection = subsets.get(mask);
    if (!selection) {
      const selected: ClusterPolicy[] = [];
      for (let i = 0; i < candidates.length; i++)
        if (mask & (1 << i)) selected.push(candidates[i] as ClusterPolicy);
      subsets.set(mask, (selection = this.selectionOf(entry.slot, selected)));
    }
    return selection;
  }

  /** `selectedFrom` for more candidates than a mask holds: the list made and interned. */
  private selectedByList(
    entry: SlotSelections,
    namespaceLabels: Labels | undefined,
    pod: Endpoint,
  ): TierSelection {
    const candidates = entry.candidates.policies;
    let selected: ClusterPolicy[] | undefined;
    for (let i = 0; i < candidates.length; i++) {
      const policy = candidates[i] as ClusterPolicy;
      const selecting = policySelects(policy, namespaceLabels, pod);
      if (selected) {
        if (selecting) selected.push(policy);
      } else if (!selecting) selected = candidates.slice(0, i);
    }
    return selected ? this.selectionOf(entry.slot, selected) : entry.candidates;
  }

  /** The plans of a pod no cluster policy selects: every tier's selection empty. */
  private emptyPlans(): PodPlans {
    const plan = this.tierPlan();
    if (this.empty?.ingress.plan !== plan) {
      const none = new Plan(
        plan,
        plan.map(() => NO_TIER),
      );
      this.empty = { ingress: none, egress: none };
    }
    return this.empty;
  }

  /** The tiers in the order a side visits them. */
  tierPlan(): readonly TierSpec[] {
    return this.policies.tierPlan();
  }

  /** Pods a policy's subject selects (never host-networked). */
  subjectsOf(policy: ClusterPolicy): string[] {
    const ids: string[] = [];
    const subjects = policySubjects(policy);
    for (const [namespace, members] of this.host.podsByNamespace()) {
      const labels = this.host.namespaceLabels(namespace);
      if (!labels) continue;
      const here = subjects.filter((s) => selectorMatches(s.namespaceSelector, labels));
      if (here.length === 0) continue;
      for (const id of members) {
        const pod = this.host.pod(id);
        if (!pod || pod.hostNetwork) continue;
        if (here.some((s) => !s.podSelector || selectorMatches(s.podSelector, pod.labels))) ids.push(id);
      }
    }
    return ids;
  }

  /**
   * A group a relative peer needs for a subject namespace (`group`: its key, made with the spec):
   * held until the policy changes.
   */
  acquireGroup(policy: ClusterPolicy, spec: GroupSpec, group: string): string {
    const key = clusterPolicyKey(policy);
    const held = this.held.get(key) ?? new Set<string>();
    if (!held.has(group)) {
      this.groups.acquire(spec, clusterPolicyOwner(key), group);
      held.add(group);
      this.held.set(key, held);
    }
    return group;
  }

  /** Adds or replaces a policy; returns the version it replaced and that version's subjects. */
  upsert(policy: ClusterPolicy): Replaced {
    const key = clusterPolicyKey(policy);
    const before = this.policies.get(key);
    const selectedBefore = before ? this.subjectsOf(before) : undefined;
    if (before) this.release(key);
    this.policies.set(key, policy);
    const held = new Set<string>();
    const owner = clusterPolicyOwner(key);
    for (const use of clusterPolicyGroupUses(policy)) {
      this.groups.acquire(use.spec, owner, use.key);
      held.add(use.key);
    }
    this.held.set(key, held);
    this.forgetSelections();
    return before ? { before, selectedBefore } : NOT_REPLACED;
  }

  /** Removes a policy; returns it and its subjects, or undefined when it was not there. */
  delete(key: string): { before: ClusterPolicy; selectedBefore: string[] } | undefined {
    const before = this.policies.get(key);
    if (!before) return undefined;
    const selectedBefore = this.subjectsOf(before);
    this.release(key);
    this.policies.delete(key);
    this.forgetSelections();
    return { before, selectedBefore };
  }

  /**
   * Every namespace's selections, after a policy changed. Only when there are some: a resync
   * upserts ten thousand policies before any selection is made, and clearing a Map allocates
   * its table anew even when it is empty.
   */
  private forgetSelections(): void {
    if (this.plans.size > 0) this.plans.clear();
  }

  /** Adds or replaces a node; returns the one it replaced. */
  upsertNode(node: NodeInfo): NodeInfo | undefined {
    const before = this.nodeMap.get(node.name);
    this.nodeMap.set(node.name, node);
    this.nodeRevision++;
    return before;
  }

  deleteNode(name: string): NodeInfo | undefined {
    const before = this.nodeMap.get(name);
    if (!before) return undefined;
    this.nodeMap.delete(name);
    this.nodeRevision++;
    return before;
  }

  /**
   * A pod was added, changed or removed: true when the host-network addresses changed (a new
   * version of the nodes, whose outside blocks are cut anew).
   */
  podChanged(before: Endpoint | undefined, after: Endpoint | undefined): boolean {
    const id = (after ?? before)?.id;
    if (id === undefined) return false;
    const known = this.hostNetworkAddresses.get(id);
    const now = after?.hostNetwork && after.ips.length > 0 ? after.ips : undefined;
    if (known === now || (known && now && sameAddresses(known, now))) return false;
    if (now) this.hostNetworkAddresses.set(id, now);
    else if (known) this.hostNetworkAddresses.delete(id);
    else return false;
    // The cut moves only for an address no node has and no other host-network pod had (or has
    // still): the usual host-network pod has its node's address, and changes nothing.
    const nodes = this.nodeAddressKeys();
    let moved = false;
    for (const ip of known ?? []) {
      const key = ipKey(ip);
      const count = (this.hostAddressPods.get(key) ?? 1) - 1;
      if (count > 0) this.hostAddressPods.set(key, count);
      else {
        this.hostAddressPods.delete(key);
        moved ||= !nodes.has(key);
      }
    }
    for (const ip of now ?? []) {
      const key = ipKey(ip);
      const count = (this.hostAddressPods.get(key) ?? 0) + 1;
      this.hostAddressPods.set(key, count);
      if (count === 1) moved ||= !nodes.has(key);
    }
    if (moved) this.nodeRevision++;
    return moved;
  }

  private nodeAddressKeys(): ReadonlySet<string> {
    if (this.nodeAddresses?.version !== this.nodeRevision) {
      const keys = new Set<string>();
      for (const node of this.nodeMap.values()) for (const ip of node.addresses) keys.add(ipKey(ip));
      this.nodeAddresses = { version: this.nodeRevision, keys };
    }
    return this.nodeAddresses.keys;
  }

  /** A namespace's labels changed: its pods' selections are computed again. */
  namespaceChanged(name: string): void {
    this.plans.delete(name);
  }

  private selectionOf(slot: string, policies: readonly ClusterPolicy[]): TierSelection {
    if (policies.length === 0) return NO_TIER;
    // Found by a hash of the policies' serial numbers and confirmed object by object: a key
    // string built and hashed for every pod side was most of finding its selections.
    const hash = serialListHash(policies, this.serials);
    let bySlot = this.interned.get(slot);
    const known = bySlot?.find(hash, policies);
    if (known) return known;
    // Entries name exact policy objects, so they stay true; changed policies leave stale ones
    // behind, dropped all at once past a bound (callers then memoize anew).
    if (this.internedCount >= MAX_INTERNED) {
      this.interned.clear();
      this.internedCount = 0;
      bySlot = undefined;
    }
    if (!bySlot) this.interned.set(slot, (bySlot = new HashBuckets(holdsPolicies)));
    // Kept for the store's life: a list grown by push reserves room for 17 (util/exact-array.ts).
    const selection = new Selection(exactArray(policies), this.serials, this.selectionCount++);
    bySlot.add(hash, selection);
    this.internedCount++;
    return selection;
  }

  private release(key: string): void {
    for (const group of this.held.get(key) ?? []) this.groups.release(group, clusterPolicyOwner(key));
    this.held.delete(key);
  }
}

function sameAddresses(a: readonly IpAddress[], b: readonly IpAddress[]): boolean {
  return a.length === b.length && a.every((ip, i) => ip.family === b[i]?.family && ip.value === b[i]?.value);
}
