/**
 * Contracts of the semantic diff and the set queries: connections that differ between two
 * inputs, and why. `palisade diff -o json` prints a `ConnectivityDiff` as documented in
 * docs/commands/diff.md; the web view reads the same fields.
 */
import type { SourceLocation } from '../../model/types.ts';
import type { IpInterval } from '../../net/intervals.ts';
import type { PortSet } from '../../semantics/index.ts';

/** One end of a connection: a workload (its pods together), a pod, or addresses outside the cluster. */
export type DiffPeer =
  | {
      readonly type: 'endpoint';
      /** `ns/name`: the workload's or the pod's name (as matrix -o json prints it). */
      readonly id: string;
      /** As text prints it: `ns/name[Kind]` for a workload, `ns/name` for a pod in the pod view. */
      readonly label: string;
      /** `Pod`, or the workload's kind. */
      readonly kind: string;
      readonly namespace: string;
    }
  | {
      readonly type: 'addresses';
      /** The ranges, e.g. `0.0.0.0-9.255.255.255,11.0.0.0-255.255.255.255`. */
      readonly id: string;
      readonly label: string;
      readonly intervals: readonly IpInterval[];
    };

/** A changed object of the input: a policy, a namespace's labels, an endpoint's labels or ports. */
export interface ObjectChange {
  /** `NetworkPolicy shop/api`, `AdminNetworkPolicy x`, `Namespace shop`, `Deployment shop/web`. */
  readonly object: string;
  readonly change: 'added' | 'removed' | 'modified';
  /** What changed, for endpoints and namespaces: `labels`, `addresses`, `ports`… */
  readonly fields?: readonly string[];
  /** Where the object is in the new input (the old one for removed objects). */
  readonly location?: SourceLocation;
}

export interface ConnectionChange {
  readonly from: DiffPeer;
  readonly to: DiffPeer;
  /** `added`: nothing was allowed before; `removed`: nothing is allowed after; `changed`: both allow some ports. */
  readonly change: 'added' | 'removed' | 'changed';
  /** Ports every pod pair of the two ends may use, before and after. */
  readonly before: PortSet;
  readonly after: PortSet;
  /** Ports only some of the pod pairs may use (workloads whose pods differ), when there are such. */
  readonly partialBefore?: PortSet;
  readonly partialAfter?: PortSet;
  /** The changed objects this connection's change comes from (`object` of an ObjectChange). */
  readonly causes: readonly string[];
}

export interface ConnectivityDiff {
  readonly endpoints: {
    readonly added: readonly DiffPeer[];
    readonly removed: readonly DiffPeer[];
  };
  readonly objects: readonly ObjectChange[];
  /** Sorted by from, then to. */
  readonly connections: readonly ConnectionChange[];
  readonly stats: {
    /** Pairs whose two sides were compared (the rest provably did not change). */
    readonly comparedPairs: number;
    readonly millis: number;
  };
}
