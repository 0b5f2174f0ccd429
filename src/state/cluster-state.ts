/**
 * The revisioned store: namespaces, pods and policies with the indexes the processor and the
 * configurator need — label sets, policy subjects, address groups. Applying a change returns a
 * StateDelta (before/after of what it touched and the groups whose members changed); the store
 * itself never decides what to recompute.
 *
 * Namespaces referenced by pods or policies but never defined exist implicitly with only their
 * name label, exactly as the manifest loader assumes, so full and incremental paths agree.
 */
import {
  NAMESPACE_NAME_LABEL,
  policyKey,
  type Cluster,
  type ClusterPolicy,
  type Endpoint,
  type Labels,
  type Namespace,
  type NetworkPolicy,
  type NodeInfo,
  type TierSpec,
} from '../model/types.ts';
import { clusterPolicyKey } from '../model/cluster-policy.ts';
import { ClusterPolicyStore } from './cluster-policy-store.ts';
import { GroupIndex } from './groups.ts';
import { LabelSetIndex } from './label-sets.ts';
import { policyGroupSpecs } from './policy-groups.ts';
import { lazyKeys, removeGone, upsertChanged } from './snapshot-diff.ts';
import { SubjectIndex } from './subjects.ts';
import { StateReader } from './state-reader.ts';
import { EMPTY_SELECTION, PolicySelections } from './policy-selections.ts';
import type {
  AddressGroup,
  CompilingStore,
  GroupSpec,
  PlanSelection,
  PodPlans,
  Selection,
  StateDelta,
  Touched,
  TouchedClusterPolicy,
  TouchedPolicy,
} from './types.ts';

/** What the per-object operations return while a resync runs (nobody reads it). */
const RESYNCING: StateDelta = Object.freeze({
  revision: 0,
  pods: [],
  policies: [],
  namespaces: [],
  clusterPolicies: [],
  nodes: [],
  groups: new Set<string>(),
  partitions: new Set<string>(),
  members: new Set<string>(),
  resync: false,
});

export class ClusterState implements CompilingStore {
  private revisionCounter = 0;
  private readonly namespaces = new Map<string, Namespace>();
  private readonly pods = new Map<string, Endpoint>();
  private readonly policies = new Map<string, NetworkPolicy>();
  private readonly selections = new PolicySelections(this.policies);
  private readonly podsByNamespace = new Map<string, Set<string>>();
  private readonly policiesByNamespace = new Map<string, Set<string>>();
  /** Group keys each policy holds a reference to. */
  private readonly policyGroups = new Map<string, string[]>();
  /** Namespaces in use (defined, or referenced by a pod or policy), with their effective labels. */
  private readonly effectiveNamespaces = new Map<string, Labels>();
  readonly podLabelSets = new LabelSetIndex();
  readonly namespaceLabelSets = new LabelSetIndex();
  private readonly subjects = new SubjectIndex(this.podLabelSets);
  private readonly groups: GroupIndex;
  private readonly cluster: ClusterPolicyStore;

  constructor() {
    const reader = new StateReader(
      this.pods,
      this.effectiveNamespaces,
      this.podsByNamespace,
      this.podLabelSets,
      this.namespaceLabelSets,
    );
    this.groups = new GroupIndex(reader);
    this.cluster = new ClusterPolicyStore(reader, this.groups);
  }

  get revision(): number {
    return this.revisionCounter;
  }

  // ---- lookups -------------------------------------------------------------------------------

  pod(id: string): Endpoint | undefined {
    return this.pods.get(id);
  }
  allPods(): IterableIterator<Endpoint> {
    return this.pods.values();
  }
  policy(key: string): NetworkPolicy | undefined {
    return this.policies.get(key);
  }
  allPolicies(): IterableIterator<NetworkPolicy> {
    return this.policies.values();
  }
  namespaceLabels(namespace: string): Labels | undefined {
    return this.effectiveNamespaces.get(namespace);
  }
  group(key: string): AddressGroup | undefined {
    return this.groups.get(key);
  }
  groupCount(): number {
    return this.groups.size();
  }
  groupKeys(): IterableIterator<string> {
    return this.groups.keys();
  }
  /** Group keys a policy's peers use. */
  groupsOfPolicy(key: string): readonly string[] {
    return this.policyGroups.get(key) ?? [];
  }
  policiesOfGroup(key: string): ReadonlySet<string> {
    return this.groups.policiesOf(key);
  }

  /** Policies (any direction) in the pod's namespace whose podSelector selects it. */
  policiesSelecting(pod: Endpoint): readonly NetworkPolicy[] {
    return this.selection(pod).all;
  }

  /**
   * The pod's policies per direction with keys naming exactly those policy objects; shared by
   * every pod with the same label set until that set's selection changes.
   */
  selection(pod: Endpoint): Selection {
    // Without NetworkPolicies (Calico's or Cilium's policies alone) no label set needs looking up.
    if (pod.hostNetwork || this.policies.size === 0) return EMPTY_SELECTION;
    return this.selections.of(this.subjects.policiesFor(this.podLabelSets.entry(pod.namespace, pod.labels)));
  }

  clusterPolicy(key: string): ClusterPolicy | undefined {
    return this.cluster.get(key);
  }
  /** In precedence order. */
  allClusterPolicies(): readonly ClusterPolicy[] {
    return this.cluster.ordered();
  }
  /** Nodes by name (the same nodes always in the same order). */
  nodes(): readonly NodeInfo[] {
    return this.cluster.nodes();
  }
  /**
   * Changes whenever a node is added, changed or removed (nodes peers depend on them), and when a
   * host-network pod's address no node has comes or goes (outside blocks are cut by both).
   */
  get nodesVersion(): number {
    return this.cluster.nodesVersion;
  }
  /** Both sides' plans (see ClusterPolicyStore). */
  podPlans(pod: Endpoint): PodPlans {
    return this.cluster.podPlans(pod);
  }
  /** The tiers in the order a side visits them (model/tier-order.ts). */
  planSelection(pod: Endpoint, direction: 'ingress' | 'egress'): PlanSelection {
    return this.cluster.planSelection(pod, direction);
  }
  tierPlan(): readonly TierSpec[] {
    return this.cluster.tierPlan();
  }
  /** Pods a cluster policy's subject selects (never host-networked). */
  subjectsOf(policy: ClusterPolicy): string[] {
    return this.cluster.subjectsOf(policy);
  }
  /** A group a cluster policy's relative peer needs for a subject namespace: held until the policy changes. */
  acquireClusterGroup(policy: ClusterPolicy, spec: GroupSpec, key: string): string {
    return this.cluster.acquireGroup(policy, spec, key);
  }
  podsInNamespace(namespace: string): ReadonlySet<string> {
    return this.podsByNamespace.get(namespace) ?? new Set();
  }

  /** Changes whenever a named-port group gains or loses a port number. */
  get partitionVersion(): number {
    return this.groups.partitionVersion;
  }

  /** Pod ids a policy's podSelector selects (host-network pods excluded). */
  podsSelectedBy(policy: NetworkPolicy): string[] {
    return this.subjects
      .podsSelected(policy.namespace, policy.podSelector)
      .filter((id) => !this.pods.get(id)?.hostNetwork);
  }

  // ---- changes ---------------------------------------------------------------------------------

  upsertNamespace(namespace: Namespace): StateDelta {
    const before = this.namespaces.get(namespace.name);
    this.namespaces.set(namespace.name, namespace);
    const groups = this.refreshNamespace(namespace.name);
    if (this.resyncing) return RESYNCING;
    return this.delta({ namespaces: [touched(before, namespace)], groups });
  }

  deleteNamespace(name: string): StateDelta {
    const before = this.namespaces.get(name);
    if (!before) return this.delta({});
    this.namespaces.delete(name);
    const groups = this.refreshNamespace(name);
    return this.delta({ namespaces: [{ before }], groups });
  }

  upsertPod(pod: Endpoint): StateDelta {
    const before = this.pods.get(pod.id);
    const groups = this.ensureNamespace(pod.namespace);
    if (before) this.unlinkPod(before);
    this.pods.set(pod.id, pod);
    addTo(this.podsByNamespace, pod.namespace, pod.id);
    const { entry, created } = this.podLabelSets.add(pod.namespace, pod.labels, pod.id);
    if (created) this.subjects.labelSetCreated(entry);
    for (const g of this.groups.podChanged(before, pod)) groups.add(g);
    const hostAddresses = this.cluster.podChanged(before, pod);
    if (before && before.namespace !== pod.namespace)
      for (const g of this.releaseNamespace(before.namespace)) groups.add(g);
    if (this.resyncing) return RESYNCING;
    return this.delta({ pods: [touched(before, pod)], groups }, hostAddresses);
  }

  deletePod(id: string): StateDelta {
    const before = this.pods.get(id);
    if (!before) return this.delta({});
    this.unlinkPod(before);
    this.pods.delete(id);
    const groups = this.groups.podChanged(before, undefined);
    const hostAddresses = this.cluster.podChanged(before, undefined);
    for (const g of this.releaseNamespace(before.namespace)) groups.add(g);
    return this.delta({ pods: [{ before }], groups }, hostAddresses);
  }

  upsertPolicy(policy: NetworkPolicy): StateDelta {
    return this.upsertPolicyAt(policyKey(policy), policy);
  }

  private upsertPolicyAt(key: string, policy: NetworkPolicy): StateDelta {
    const before = this.policies.get(key);
    const selectedBefore = before ? this.podsSelectedBy(before) : undefined;
    const groups = this.ensureNamespace(policy.namespace);
    if (before) this.unlinkPolicy(before);
    this.policies.set(key, policy);
    if (before !== policy) this.selections.renew(key);
    addTo(this.policiesByNamespace, policy.namespace, key);
    this.subjects.addPolicy(policy.namespace, policy.podSelector, key);
    this.policyGroups.set(
      key,
      policyGroupSpecs(policy).map((use) => this.groups.acquire(use.spec, key, use.key)),
    );
    if (before && before.namespace !== policy.namespace)
      for (const g of this.releaseNamespace(before.namespace)) groups.add(g);
    // Inside a resync nobody reads the delta: its arrays and objects are not built (175,000
    // objects at shape a ×1).
    if (this.resyncing) return RESYNCING;
    return this.delta({
      policies: [before ? { before, selectedBefore, after: policy } : { after: policy }],
      groups,
    });
  }

  deletePolicy(key: string): StateDelta {
    const before = this.policies.get(key);
    if (!before) return this.delta({});
    const selectedBefore = this.podsSelectedBy(before);
    this.unlinkPolicy(before);
    this.policies.delete(key);
    this.selections.forget(key);
    const groups = this.releaseNamespace(before.namespace);
    return this.delta({ policies: [{ before, selectedBefore }], groups });
  }

  upsertClusterPolicy(policy: ClusterPolicy): StateDelta {
    const { before, selectedBefore } = this.cluster.upsert(policy);
    // Inside a resync nobody reads the delta (as for NetworkPolicies): none is built.
    if (this.resyncing) return RESYNCING;
    return this.delta({
      clusterPolicies: [before ? { before, selectedBefore, after: policy } : { after: policy }],
    });
  }

  deleteClusterPolicy(key: string): StateDelta {
    const deleted = this.cluster.delete(key);
    return this.delta(deleted ? { clusterPolicies: [deleted] } : {});
  }

  upsertNode(node: NodeInfo): StateDelta {
    const before = this.cluster.upsertNode(node);
    return this.delta({ nodes: [{ ...(before ? { before } : {}), after: node }] });
  }

  deleteNode(name: string): StateDelta {
    const before = this.cluster.deleteNode(name);
    return this.delta(before ? { nodes: [{ before }] } : {});
  }

  /** Replaces everything with a snapshot; the delta lists every object before and after. */
  resync(cluster: Cluster): StateDelta {
    this.resyncing = true;
    try {
      return this.groups.batch(() => this.resyncObjects(cluster));
    } finally {
      this.resyncing = false;
    }
  }

  /** True while resync applies its objects one by one (their deltas are not wanted). */
  private resyncing = false;

  private resyncObjects(cluster: Cluster): StateDelta {
    const pods: Touched<Endpoint>[] = [];
    const policies: TouchedPolicy[] = [];
    const namespaces: Touched<Namespace>[] = [];
    const clusterPolicies: TouchedClusterPolicy[] = [];
    const nodes: Touched<NodeInfo>[] = [];
    // The per-object deltas are not needed: the resync delta lists everything itself (see delta).
    // Policies and pods go before namespaces change, and everything that goes before anything
    // new arrives, so no group or selection is built for an object about to leave.
    const policyKeys = lazyKeys(() => cluster.policies.map(policyKey));
    const podIds = lazyKeys(() => cluster.endpoints.map((e) => e.id));
    removeGone(
      policies,
      this.policies,
      (key) => policyKeys().has(key),
      (key) => this.deletePolicy(key),
    );
    removeGone(
      pods,
      this.pods,
      (id) => podIds().has(id),
      (id) => this.deletePod(id),
    );
    removeGone(
      namespaces,
      this.namespaces,
      (name) => cluster.namespaces.get(name)?.implicit === false,
      (name) => this.deleteNamespace(name),
    );
    upsertChanged(
      namespaces,
      [...cluster.namespaces.values()].filter((ns) => !ns.implicit),
      (ns) => ns.name,
      (name) => this.namespaces.get(name),
      (_, ns) => this.upsertNamespace(ns),
    );
    upsertChanged(
      pods,
      cluster.endpoints,
      (pod) => pod.id,
      (id) => this.pods.get(id),
      (_, pod) => this.upsertPod(pod),
    );
    upsertChanged(
      policies,
      cluster.policies,
      policyKey,
      (key) => this.policies.get(key),
      (key, policy) => this.upsertPolicyAt(key, policy),
    );
    const clusterPolicyKeys = lazyKeys(() => cluster.clusterPolicies.map(clusterPolicyKey));
    removeGone(
      clusterPolicies,
      this.cluster.entries(),
      (key) => clusterPolicyKeys().has(key),
      (key) => this.deleteClusterPolicy(key),
    );
    upsertChanged(
      clusterPolicies,
      cluster.clusterPolicies,
      clusterPolicyKey,
      (key) => this.cluster.get(key),
      (_, policy) => this.upsertClusterPolicy(policy),
    );
    removeGone(
      nodes,
      this.cluster.nodes().map((node) => [node.name, node] as const),
      (name) => cluster.nodes.has(name),
      (name) => this.deleteNode(name),
    );
    upsertChanged(
      nodes,
      cluster.nodes.values(),
      (node) => node.name,
      (name) => this.cluster.node(name),
      (_, node) => this.upsertNode(node),
    );
    // A resync re-renders everything: no list of pods whose memberships moved (it would be all).
    this.groups.drainPartitionChanges();
    this.groups.drainMemberChanges();
    const members = new Set<string>();
    const groups = new Set(this.groups.keys());
    return {
      revision: ++this.revisionCounter,
      pods,
      policies,
      namespaces,
      clusterPolicies,
      nodes,
      groups,
      partitions: groups,
      members,
      resync: true,
    };
  }

  // ---- internals ---------------------------------------------------------------------------------

  private delta(
    parts: Partial<Omit<StateDelta, 'revision' | 'resync' | 'partitions' | 'hostAddresses'>>,
    hostAddresses = false,
  ): StateDelta {
    // Inside a resync the per-object deltas are thrown away: do not drain the change sets (the
    // resync drains them once at the end) nor build anything.
    if (this.resyncing) return RESYNCING;
    const delta: StateDelta = {
      revision: ++this.revisionCounter,
      pods: parts.pods ?? [],
      policies: parts.policies ?? [],
      namespaces: parts.namespaces ?? [],
      clusterPolicies: parts.clusterPolicies ?? [],
      nodes: parts.nodes ?? [],
      groups: parts.groups ?? new Set(),
      partitions: this.groups.drainPartitionChanges(),
      members: this.groups.drainMemberChanges(),
      resync: false,
    };
    // Only when so: every other delta keeps its shape.
    return hostAddresses ? { ...delta, hostAddresses } : delta;
  }

  private unlinkPod(pod: Endpoint): void {
    this.podsByNamespace.get(pod.namespace)?.delete(pod.id);
    const { entry, deleted } = this.podLabelSets.remove(pod.namespace, pod.labels, pod.id);
    if (deleted && entry) this.subjects.labelSetDeleted(entry);
  }

  private unlinkPolicy(policy: NetworkPolicy): void {
    const key = policyKey(policy);
    this.policiesByNamespace.get(policy.namespace)?.delete(key);
    this.subjects.removePolicy(policy.namespace, policy.podSelector, key);
    for (const group of this.policyGroups.get(key) ?? []) this.groups.release(group, key);
    this.policyGroups.delete(key);
  }

  /** Makes sure a namespace a pod or policy refers to exists (implicitly if not defined). */
  private ensureNamespace(name: string): Set<string> {
    return this.effectiveNamespaces.has(name) ? new Set() : this.refreshNamespace(name);
  }

  /** Drops an implicit namespace nothing refers to any more. */
  private releaseNamespace(name: string): Set<string> {
    const used =
      (this.podsByNamespace.get(name)?.size ?? 0) + (this.policiesByNamespace.get(name)?.size ?? 0);
    return used === 0 && !this.namespaces.has(name) ? this.refreshNamespace(name, true) : new Set();
  }

  /** Recomputes a namespace's effective labels and everything that depends on them. */
  private refreshNamespace(name: string, drop = false): Set<string> {
    const previous = this.effectiveNamespaces.get(name);
    const defined = this.namespaces.get(name);
    const next: Labels | undefined = drop ? undefined : (defined?.labels ?? { [NAMESPACE_NAME_LABEL]: name });
    this.cluster.namespaceChanged(name);
    if (previous) this.namespaceLabelSets.remove('', previous, name);
    if (next) {
      this.effectiveNamespaces.set(name, next);
      this.namespaceLabelSets.add('', next, name);
    } else this.effectiveNamespaces.delete(name);
    return this.groups.namespaceChanged(name, next, previous);
  }
}

/** A change's before and after, built by assignment (a spread in a literal takes the slow path). */
function touched<T>(before: T | undefined, after: T): Touched<T> {
  return before ? { before, after } : { after };
}

function addTo<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(value);
}
