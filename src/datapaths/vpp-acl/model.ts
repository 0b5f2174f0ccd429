/**
 * The ligato vpp-agent ACL model (northbound `acl.ACL`), as JSON: what the ACL renderer
 * produces and the interpreter reads.
 */
interface PortRange {
  readonly lower_port: number;
  readonly upper_port: number;
}

export interface L4Match {
  readonly source_port_range: PortRange;
  readonly destination_port_range: PortRange;
}

export interface AclRule {
  readonly action: 'PERMIT' | 'DENY' | 'REFLECT';
  readonly ip_rule: {
    /** Empty network: any address. `protocol` 0 (omitted): any protocol; 132 is SCTP. */
    readonly ip: {
      readonly source_network: string;
      readonly destination_network: string;
      readonly protocol?: number;
    };
    readonly tcp?: L4Match;
    readonly udp?: L4Match;
  };
}

export interface Acl {
  readonly name: string;
  readonly rules: readonly AclRule[];
  readonly interfaces: { readonly egress: readonly string[]; readonly ingress: readonly string[] };
}

/** The interfaces through which a node's traffic leaves for the rest of the cluster (seed). */
export const UPLINK_INTERFACES: readonly string[] = ['GigabitEthernet0/8/0', 'vxlanBVI', 'tap-vpp2'];

/** The TAP interface connecting VPP with a pod. */
export const podInterface = (pod: string): string => `tap-${pod.replace('/', '-')}`;

export const REFLECTION_ACL = 'REFLECTION';
export const GLOBAL_ACL = 'global';
export const localAclName = (tableId: string): string => `local-${tableId}`;
