/**
 * Contracts of the state layer: the revisioned store of namespaces, endpoints and policies, and
 * address groups — the shared sets of pod addresses that policy peers select.
 */
import type { IpAddress } from '../net/ip.ts';
import type { Cidr } from '../net/ip.ts';
import type {
  ClusterPolicy,
  Endpoint,
  LabelSelector,
  Labels,
  Namespace,
  NetworkPolicy,
  NodeInfo,
  Protocol,
  TierSpec,
} from '../model/types.ts';

/** What a group selects. Canonical: equal specs have equal keys (see `groupKey`). */
export interface GroupSpec {
  /** Pods of this namespace only (a peer without namespaceSelector). */
  readonly namespace?: string;
  /** Pods of every namespace this selects. */
  readonly namespaceSelector?: LabelSelector;
  /** Absent: every pod in scope. */
  readonly podSelector?: LabelSelector;
  /**
   * Pods whose address lies in this block (named-port egress through an ipBlock or "anywhere");
   * `podsOnly` leaves host-network pods out (Calico's and Cilium's named ports never resolve on
   * them: they are the host's, not endpoints').
   */
  readonly ipBlock?: { readonly cidr: readonly Cidr[]; readonly podsOnly?: true };
  /** Only pods exposing this named port; members are partitioned by the number it resolves to. */
  readonly namedPort?: { readonly name: string; readonly protocol: Protocol };
}

export interface GroupMember {
  readonly pod: string;
  readonly ips: readonly IpAddress[];
  /** The number the group's named port resolves to for this pod, when the group has one. */
  readonly port?: number;
}

export interface AddressGroup {
  readonly key: string;
  readonly spec: GroupSpec;
  readonly members: ReadonlyMap<string, GroupMember>;
  /** For named-port groups: how many members resolve the name to each port number. */
  readonly ports: ReadonlyMap<number, number>;
  /** Whether a member has this address (with this named-port number, when given). O(1). */
  contains(ip: IpAddress, port?: number): boolean;
}

/** Before and after of one object touched by a change. */
export interface Touched<T> {
  readonly before?: T;
  readonly after?: T;
}

/** A touched policy, with the pods its previous version selected (taken before the change). */
export interface TouchedPolicy extends Touched<NetworkPolicy> {
  readonly selectedBefore?: readonly string[];
}

/** A touched cluster policy, with the pods its previous version applied to (taken before the change). */
export interface TouchedClusterPolicy extends Touched<ClusterPolicy> {
  readonly selectedBefore?: readonly string[];
}

/** The cluster policies of one tier selecting a pod for one direction, in precedence order. */
export interface TierSelection {
  readonly policies: readonly ClusterPolicy[];
  /** Names exactly these policy objects (a changed policy is a new object). */
  readonly key: string;
  /**
   * A number for this selection, unique in its store (-1: the empty one), and each policy's
   * number in the store, in the same order: callers memoize by integers, not by objects (a
   * table keyed by objects costs about a microsecond for each one it first takes).
   */
  readonly serial: number;
  readonly policySerials: readonly number[];
}

/** Every tier's selection for a pod side, in the plan's order, with one key naming them all. */
export interface PlanSelection {
  readonly plan: readonly TierSpec[];
  readonly selections: readonly TierSelection[];
  /** `tier:selection key` per tier of the plan (one string per distinct side: memo keys use it as is). */
  readonly key: string;
}

/** A pod's two sides' plans (the same objects for every pod of its namespace and label set). */
export interface PodPlans {
  readonly ingress: PlanSelection;
  readonly egress: PlanSelection;
}

/** What one applied change did to the store, for the processor. */
export interface StateDelta {
  readonly revision: number;
  readonly pods: readonly Touched<Endpoint>[];
  readonly policies: readonly TouchedPolicy[];
  readonly namespaces: readonly Touched<Namespace>[];
  readonly clusterPolicies: readonly TouchedClusterPolicy[];
  readonly nodes: readonly Touched<NodeInfo>[];
  /** Groups whose members (or their named-port numbers) changed. */
  readonly groups: ReadonlySet<string>;
  /** Named-port groups whose set of port numbers changed (tables list one rule per number). */
  readonly partitions: ReadonlySet<string>;
  /** Pods that joined, left or changed in some group. */
  readonly members: ReadonlySet<string>;
  readonly resync: boolean;
  /**
   * A host-network pod's address came or went that no Node and no other such pod has: outside
   * blocks are cut anew (`nodesVersion` moved with it).
   */
  readonly hostAddresses?: boolean;
}

/** A pod's selecting policies, per direction, with stable keys for memoization. */
export interface Selection {
  readonly all: readonly NetworkPolicy[];
  readonly ingress: readonly NetworkPolicy[];
  readonly egress: readonly NetworkPolicy[];
  /** Names exactly the selecting policy objects of a direction (one string per label set). */
  readonly ingressKey: string;
  readonly egressKey: string;
}

/**
 * The store as every layer outside `state/` reads it: lookups and the indexes' answers, no
 * changes. The processor, the configurator, the classifier and the renderers take this, so only
 * the wiring that owns a store (the pipeline, entry points) knows the concrete `ClusterState`.
 */
export interface ReadonlyStore {
  /** Bumped by every applied change. */
  readonly revision: number;
  pod(id: string): Endpoint | undefined;
  allPods(): IterableIterator<Endpoint>;
  policy(key: string): NetworkPolicy | undefined;
  allPolicies(): IterableIterator<NetworkPolicy>;
  /** A namespace's effective labels (an implicit namespace has only its name label). */
  namespaceLabels(namespace: string): Labels | undefined;
  podsInNamespace(namespace: string): ReadonlySet<string>;
  group(key: string): AddressGroup | undefined;
  groupCount(): number;
  groupKeys(): IterableIterator<string>;
  /** Group keys a policy's peers use. */
  groupsOfPolicy(key: string): readonly string[];
  /** Keys of the policies whose peers use a group. */
  policiesOfGroup(key: string): ReadonlySet<string>;
  /** Changes whenever a named-port group gains or loses a port number. */
  readonly partitionVersion: number;
  /**
   * The pod's policies per direction with keys naming exactly those policy objects; shared by
   * every pod with the same label set until that set's selection changes.
   */
  selection(pod: Endpoint): Selection;
  /** Pod ids a policy's podSelector selects (host-network pods excluded). */
  podsSelectedBy(policy: NetworkPolicy): string[];
  clusterPolicy(key: string): ClusterPolicy | undefined;
  /** Cluster policies in precedence order. */
  allClusterPolicies(): readonly ClusterPolicy[];
  /** Nodes by name (the same nodes always in the same order). */
  nodes(): readonly NodeInfo[];
  /**
   * Changes whenever a node is added, changed or removed (nodes peers depend on them), and when a
   * host-network pod's address no node has comes or goes (outside blocks are cut by both).
   */
  readonly nodesVersion: number;
  /** The tiers in the order a side visits them (model/tier-order.ts). */
  tierPlan(): readonly TierSpec[];
  /**
   * Each tier of `tierPlan`'s cluster policies selecting the pod, in precedence order, for both
   * directions: found once per namespace and pod label set.
   */
  podPlans(pod: Endpoint): PodPlans;
  /** One direction of `podPlans`. */
  planSelection(pod: Endpoint, direction: 'ingress' | 'egress'): PlanSelection;
  /** Pods a cluster policy's subject selects (never host-networked). */
  subjectsOf(policy: ClusterPolicy): string[];
}

/**
 * What the configurator needs beyond reading: v0.1.1's relative peers (sameLabels,
 * notSameLabels) become groups only once a subject's namespace is known, so compiling acquires
 * them; the store holds them until the policy changes.
 */
export interface CompilingStore extends ReadonlyStore {
  /** `key`: the spec's group key, as the net made with the spec carries it. */
  acquireClusterGroup(policy: ClusterPolicy, spec: GroupSpec, key: string): string;
}
