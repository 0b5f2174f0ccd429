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
  Namespace,
  NetworkPolicy,
  NodeInfo,
  Protocol,
} from '../model/types.ts';

/** What a group selects. Canonical: equal specs have equal keys (see `groupKey`). */
export interface GroupSpec {
  /** Pods of this namespace only (a peer without namespaceSelector). */
  readonly namespace?: string;
  /** Pods of every namespace this selects. */
  readonly namespaceSelector?: LabelSelector;
  /** Absent: every pod in scope. */
  readonly podSelector?: LabelSelector;
  /** Pods whose address lies in this block (named-port egress through an ipBlock or "anywhere"). */
  readonly ipBlock?: { readonly cidr: readonly Cidr[] };
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
}
