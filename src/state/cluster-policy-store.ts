/**
 * The store's half for ordered cluster policy: the policies (indexed by tier, direction and
 * subject selector), the nodes, the groups each policy holds, and which policies select a pod —
 * cached per namespace and label set, dropped when a policy or the namespace's labels change.
 * ClusterState owns the pods and namespaces it reads, and turns these changes into deltas.
 */
import { clusterPolicyKey, policySelects, policySubjects, type TierSpec } from '../model/cluster-policy.ts';
import { selectorMatches } from '../model/selector.ts';
import type { ClusterPolicy, Endpoint, Labels, NodeInfo, Tier } from '../model/types.ts';
import { ipKey, type IpAddress } from '../net/ip.ts';
import { clusterPolicyGroupSpecs, withHostNetworkAddresses } from './cluster-policy-groups.ts';
import { ClusterPolicyIndex, slotOf } from './cluster-policy-index.ts';
import { sharedGroupKey } from './group-key.ts';
import type { GroupIndex } from './groups.ts';
import { labelSetKey } from './label-sets.ts';
import type { GroupSpec, PlanSelection, TierSelection } from './types.ts';
import { HashBuckets, serialListHash } from '../util/serial-hash.ts';

/** Owner key of a cluster policy's groups (NetworkPolicy owners are `ns/name`, never with a colon). */
export const clusterPolicyOwner = (key: string): string => `cnp:${key}`;
const NO_TIER: TierSelection = { policies: [], key: '' };
/** What `upsert` returns: the version a policy replaced, and the pods that version selected. */
type Replaced = Readonly<{ before?: ClusterPolicy; selectedBefore?: readonly string[] }>;
/** For a policy that replaced none (shared: callers only read it). */
const NOT_REPLACED: Replaced = Object.freeze({});
/** Distinct selections kept interned (a few hundred in a cluster; stale ones accumulate under churn). */
const MAX_INTERNED = 100_000;

/** A namespace's selections by slot (`tier|direction`). */
type NamespaceSelections = Map<string, SlotSelections>;

interface SlotSelections {
  /** Its name (`tier|direction`). */
  readonly slot: string;
  /** The slot's policies whose subject namespace selector matches the namespace. */
  readonly candidates: TierSelection;
  /** By pod label set, when some candidate has a pod selector. */
  readonly byLabels: Map<string, TierSelection> | undefined;
}

/** A namespace's plans per direction and pod label set, and its slot entries in the plan's order. */
interface NamespacePlans {
  readonly ingress: Map<string, PlanSelection>;
  readonly egress: Map<string, PlanSelection>;
  readonly slots: { ingress?: readonly SlotSelections[]; egress?: readonly SlotSelections[] };
}

/** What the store reads from the rest of ClusterState. */
interface ClusterPolicyHost {
  readonly groups: GroupIndex;
  namespaceLabels(namespace: string): Labels | undefined;
  pod(id: string): Endpoint | undefined;
  podsByNamespace(): Iterable<[string, ReadonlySet<string>]>;
}

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
   * Tier selections per namespace and slot (tier and direction); the namespace's entry is dropped
   * when its labels change. A slot whose candidates have pod selectors keeps one per label set.
   */
  private readonly selections = new Map<string, NamespaceSelections>();
  /**
   * Per namespace, direction and pod label set, every tier's selection in the plan's order:
   * compiling asked each tier's selection of every pod side, building a slot and a key each time.
   * Dropped with `selections`.
   */
  private readonly plans = new Map<string, NamespacePlans>();
  /** The empty plan of the current tier plan (`emptyPlan`). */
  private empty: Plan | undefined;
  /**
   * One selection object per slot and distinct list of policies (by key), so that callers can
   * memoize by the object: equal keys in 25,000 namespaces were 25,000 strings, each built into
   * a longer key and hashed per pod.
   */
  private readonly interned = new Map<string, HashBuckets<TierSelection, readonly ClusterPolicy[]>>();
  private internedCount = 0;
  private readonly serials = new WeakMap<ClusterPolicy, number>();
  private nextSerial = 0;

  constructor(private readonly host: ClusterPolicyHost) {}

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
      if (this.hostNetworkAddresses.size > 0)
        withHostNetworkAddresses(nodes, [...this.hostNetworkAddresses.values()].flat());
      this.sortedNodes = { version: this.nodeRevision, nodes };
    }
    return this.sortedNodes.nodes;
  }
  get nodesVersion(): number {
    return this.nodeRevision;
  }

  /**
   * The policies of a tier selecting the pod for a direction, in precedence order, with a key
   * naming exactly those objects. Namespace selectors are evaluated once per namespace; pod
   * selectors per label set.
   */
  tierSelection(pod: Endpoint, tier: Tier, direction: 'ingress' | 'egress'): TierSelection {
    if (pod.hostNetwork || this.policies.size === 0) return NO_TIER;
    return this.selectionIn(this.slotEntry(pod.namespace, tier, direction), pod);
  }

  /** A namespace's slot: the slot's policies whose namespace selector matches it. */
  private slotEntry(namespace: string, tier: Tier, direction: 'ingress' | 'egress'): SlotSelections {
    const slot = slotOf(tier, direction);
    let byNamespace = this.selections.get(namespace);
    if (!byNamespace) this.selections.set(namespace, (byNamespace = new Map<string, SlotSelections>()));
    let entry = byNamespace.get(slot);
    if (!entry) {
      const namespaceLabels = this.host.namespaceLabels(namespace);
      const list = this.policies.candidates(tier, direction, namespaceLabels);
      const candidates = this.selectionOf(slot, list);
      entry = {
        slot,
        candidates,
        byLabels: candidates.policies.some((p) => p.subject.podSelector || p.moreSubjects)
          ? new Map()
          : undefined,
      };
      byNamespace.set(slot, entry);
    }
    return entry;
  }

  /** The slot's policies selecting the pod (its namespace's slot entry): found once per label set. */
  private selectionIn(entry: SlotSelections, pod: Endpoint): TierSelection {
    if (!entry.byLabels) return entry.candidates;
    const key = labelSetKey(pod.labels);
    let selection = entry.byLabels.get(key);
    if (!selection) {
      selection = this.selectedFrom(entry, pod);
      entry.byLabels.set(key, selection);
    }
    return selection;
  }

  /**
   * The slot's candidates that select the pod. When all of them do, their own selection: a list
   * is made only where some candidate does not select the pod.
   */
  private selectedFrom(entry: SlotSelections, pod: Endpoint): TierSelection {
    const candidates = entry.candidates.policies;
    const namespaceLabels = this.host.namespaceLabels(pod.namespace);
    let selected: ClusterPolicy[] | undefined;
    for (let i = 0; i < candidates.length; i++) {
      const policy = candidates[i] as ClusterPolicy;
      const selects = policySelects(policy, namespaceLabels, pod);
      if (selected) {
        if (selects) selected.push(policy);
      } else if (!selects) selected = candidates.slice(0, i);
    }
    return selected ? this.selectionOf(entry.slot, selected) : entry.candidates;
  }

  /** Every tier's selection for the pod side, in the plan's order (see `plans`). */
  planSelection(pod: Endpoint, direction: 'ingress' | 'egress'): PlanSelection {
    // Without cluster policy (or for a host-network pod) every side's plan is the same empty one,
    // remembered nowhere else: a plan per namespace and label set held 57 MB at shape (a) ×1, and
    // pushed its compile into a full garbage collection (0.9 s).
    if (pod.hostNetwork || this.policies.size === 0) return this.emptyPlan();
    let byNamespace = this.plans.get(pod.namespace);
    if (!byNamespace)
      this.plans.set(pod.namespace, (byNamespace = { ingress: new Map(), egress: new Map(), slots: {} }));
    const labels = labelSetKey(pod.labels);
    let found = byNamespace[direction].get(labels);
    if (!found) {
      const plan = this.tierPlan();
      const selections: TierSelection[] = [];
      // The namespace's slots in the plan's order, found once per namespace and direction:
      // each side asked the namespace's and the slot's entries anew for every tier.
      const slots = (byNamespace.slots[direction] ??= plan.map((t) =>
        this.slotEntry(pod.namespace, t.name, direction),
      ));
      for (const entry of slots) selections.push(this.selectionIn(entry, pod));
      found = new Plan(plan, selections);
      byNamespace[direction].set(labels, found);
    }
    return found;
  }

  /** The plan of a side no cluster policy selects: every tier's selection empty. */
  private emptyPlan(): Plan {
    const plan = this.tierPlan();
    if (this.empty?.plan !== plan)
      this.empty = new Plan(
        plan,
        plan.map(() => NO_TIER),
      );
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

  /** A group a relative peer needs for a subject namespace: held until the policy changes. */
  acquireGroup(policy: ClusterPolicy, spec: GroupSpec): string {
    const key = clusterPolicyKey(policy);
    const held = this.held.get(key) ?? new Set<string>();
    const group = sharedGroupKey(spec);
    if (!held.has(group)) {
      this.host.groups.acquire(spec, clusterPolicyOwner(key), group);
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
    for (const spec of clusterPolicyGroupSpecs(policy)) {
      const group = sharedGroupKey(spec);
      if (held.has(group)) continue;
      this.host.groups.acquire(spec, clusterPolicyOwner(key), group);
      held.add(group);
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
    if (this.selections.size > 0) this.selections.clear();
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
    this.selections.delete(name);
    this.plans.delete(name);
  }

  private selectionOf(slot: string, policies: readonly ClusterPolicy[]): TierSelection {
    if (policies.length === 0) return NO_TIER;
    // Found by a hash of the policies' serial numbers and confirmed object by object: a key
    // string built and hashed for every pod side was most of finding its selections.
    const hash = serialListHash(policies, this.serialOf);
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
    const selection = new Selection(policies, this.tokenOf);
    bySlot.add(hash, selection);
    this.internedCount++;
    return selection;
  }

  /** A number unique to this policy object (a changed policy is a new object). */
  private readonly serialOf = (policy: ClusterPolicy): number => {
    let serial = this.serials.get(policy);
    if (serial === undefined) this.serials.set(policy, (serial = this.nextSerial++));
    return serial;
  };

  /** `Kind/name#n`, n the policy object's serial number. */
  private readonly tokenOf = (policy: ClusterPolicy): string =>
    `${clusterPolicyKey(policy)}#${this.serialOf(policy)}`;

  private release(key: string): void {
    for (const group of this.held.get(key) ?? []) this.host.groups.release(group, clusterPolicyOwner(key));
    this.held.delete(key);
  }
}

/** Whether a selection holds exactly these policy objects, in this order. */
function holdsPolicies(selection: TierSelection, policies: readonly ClusterPolicy[]): boolean {
  const held = selection.policies;
  if (held.length !== policies.length) return false;
  for (let i = 0; i < held.length; i++) if (held[i] !== policies[i]) return false;
  return true;
}

/**
 * An interned selection. Its key — the policies' tokens, naming exactly these objects — is
 * written when first read: the sides compiled as tables (configurator/tier-tables.ts
 * `permitSide`) never read it.
 */
class Selection implements TierSelection {
  #key: string | undefined;
  readonly #tokenOf: (policy: ClusterPolicy) => string;

  constructor(
    readonly policies: readonly ClusterPolicy[],
    tokenOf: (policy: ClusterPolicy) => string,
  ) {
    this.#tokenOf = tokenOf;
  }

  get key(): string {
    return (this.#key ??= this.policies.map(this.#tokenOf).join('|'));
  }
}

/** A side's selections in the plan's order; its key (`tier:selection key` per tier) written when first read. */
class Plan implements PlanSelection {
  #key: string | undefined;

  constructor(
    readonly plan: readonly TierSpec[],
    readonly selections: readonly TierSelection[],
  ) {}

  get key(): string {
    return (this.#key ??= this.plan
      .map((t, i) => `${t.name}:${this.selections[i]?.key ?? ''}`)
      .join('\u0001'));
  }
}

function sameAddresses(a: readonly IpAddress[], b: readonly IpAddress[]): boolean {
  return a.length === b.length && a.every((ip, i) => ip.family === b[i]?.family && ip.value === b[i]?.value);
}
