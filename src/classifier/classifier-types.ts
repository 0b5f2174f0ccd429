/**
 * What the classifier (classifier.ts) is asked and answers with: a packet, an endpoint's maps,
 * and how it is built — apart from how it finds the answer.
 */
import type { IpAddress } from '../net/ip.ts';
import type { Endpoint, Protocol } from '../model/types.ts';
import type { DirectionTable } from './direction-table.ts';
import type { TierTable } from './tier-bitmap-table.ts';

export interface ClassifierPacket {
  readonly src: IpAddress;
  readonly dst: IpAddress;
  readonly protocol: Protocol;
  readonly port: number;
}

export interface EndpointMaps {
  readonly endpoint: Endpoint;
  readonly ingress: DirectionTable | undefined;
  readonly egress: DirectionTable | undefined;
  /** Cluster-policy tier tables, when the classifier has tiers and a policy of the tier selects the pod. */
  readonly admin?: { readonly ingress?: TierTable; readonly egress?: TierTable };
  readonly baseline?: { readonly ingress?: TierTable; readonly egress?: TierTable };
}

export interface ClassifierOptions {
  readonly allowNodeLocal?: boolean;
  /**
   * Cluster policy (AdminNetworkPolicy, BaselineAdminNetworkPolicy, ClusterNetworkPolicy) from
   * the store: the Admin tier decides first, NetworkPolicy next, then the Baseline tier.
   */
  readonly tiers?: boolean;
  /**
   * Only this node's pods get maps (a node's datapath); pods elsewhere are still group members
   * and node addresses. Default: every pod.
   */
  readonly node?: string;
  /**
   * Tier verdicts by walking each tier table's rules (groups and bitmaps) instead of the
   * decisions kept per peer and port class: the slower form, kept for comparing the two.
   */
  readonly tierRuleWalk?: boolean;
}
