/**
 * The Neutron data model the renderer produces (after the Kuryr seed): security groups with
 * their rules, the peer groups that rules reference by `remote_group_id` (rule-less groups whose
 * member ports are the selected pods), and each pod's port with the groups bound to it.
 */
export interface SecurityGroupRule {
  readonly direction: 'ingress' | 'egress';
  readonly ethertype: 'IPv4' | 'IPv6';
  /** null: every protocol. */
  readonly protocol: 'tcp' | 'udp' | 'sctp' | null;
  readonly port_range_min?: number;
  readonly port_range_max?: number;
  readonly remote_ip_prefix?: string;
  /** The name of a peer group (its id once created). */
  readonly remote_group_id?: string;
  /** Kuryr's bookkeeping for named ports: the pods (IP → namespace) the number came from. */
  readonly remote_ip_prefixes?: Readonly<Record<string, string>>;
}

export interface SecurityGroup {
  readonly name: string;
  readonly description: string;
  /** The policy (`ns/name`) this group renders, when it renders one. */
  readonly policy?: string;
  /** The policy's generation as rendered (the seed's resync compares it). */
  readonly generation?: string;
  readonly rules: readonly SecurityGroupRule[];
}

export interface PortBinding {
  readonly pod: string;
  readonly fixed_ips: readonly string[];
  readonly security_groups: readonly string[];
}

export interface NeutronRendering {
  readonly security_groups: readonly SecurityGroup[];
  readonly ports: readonly PortBinding[];
}

export const ALLOW_ALL_INGRESS = 'allow-all-ingress';
export const ALLOW_ALL_EGRESS = 'allow-all-egress';
