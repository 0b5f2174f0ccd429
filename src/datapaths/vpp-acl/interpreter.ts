/**
 * Matches packets against rendered ACLs the way VPP's ACL plugin does: the ACLs on an
 * interface's side are tried in order, rules first match, no match denies. The path of a packet
 * through the vswitches (seed): towards a pod, the egress ACL of its TAP; leaving a node for the
 * rest of the cluster, the global ACL on the uplinks. Replies pass through the reflective ACL's
 * sessions, so only the first packet of a connection is judged here.
 */
import { cidrContains, parseCidr, type IpAddress } from '../../net/ip.ts';
import type { Protocol } from '../../model/types.ts';
import { UPLINK_INTERFACES, type Acl, type AclRule } from './model.ts';

interface AclPacket {
  readonly src: IpAddress;
  readonly dst: IpAddress;
  readonly protocol: Protocol;
  readonly port: number;
}

function networkMatches(network: string, ip: IpAddress): boolean {
  if (network === '') return true;
  const cidr = parseCidr(network);
  return cidr.ok && cidrContains(cidr.value, ip);
}

function ruleMatches(rule: AclRule, packet: AclPacket): boolean {
  const { ip, tcp, udp } = rule.ip_rule;
  if (!networkMatches(ip.source_network, packet.src) || !networkMatches(ip.destination_network, packet.dst))
    return false;
  const l4 = tcp ?? udp;
  if (tcp && packet.protocol !== 'TCP') return false;
  if (udp && packet.protocol !== 'UDP') return false;
  if (ip.protocol === 132 && packet.protocol !== 'SCTP') return false;
  if (l4)
    return (
      packet.port >= l4.destination_port_range.lower_port &&
      packet.port <= l4.destination_port_range.upper_port
    );
  return true;
}

/** The verdict of the ACLs attached to one side of an interface (none attached: permit). */
export function interfaceAllows(
  acls: readonly Acl[],
  iface: string,
  side: 'egress' | 'ingress',
  packet: AclPacket,
): boolean {
  const attached = acls.filter((acl) => acl.interfaces[side].includes(iface));
  for (const acl of attached) {
    // PERMIT and REFLECT let the packet through (REFLECT also opens a session for replies).
    const first = acl.rules.find((rule) => ruleMatches(rule, packet));
    if (!first || first.action === 'DENY') return false;
  }
  return true;
}

/** Leaving a node towards the rest of the cluster: the global ACL on the uplinks. */
export function uplinkAllows(acls: readonly Acl[], packet: AclPacket): boolean {
  return interfaceAllows(acls, UPLINK_INTERFACES[0] as string, 'egress', packet);
}

/**
 * Reflection, as VPP's ACL plugin does it: a packet leaving a pod through an ingress ACL whose
 * matching rule is REFLECT opens a session, and packets of the reverse direction that belong to
 * it pass whatever the ACLs on their way say. Sessions are keyed by addresses, protocol and the
 * connection's destination port (the model does not carry source ports).
 */
export class ReflectionSessions {
  private readonly sessions = new Set<string>();

  private static key(client: IpAddress, server: IpAddress, protocol: Protocol, port: number): string {
    return `${client.family}:${client.value}|${server.family}:${server.value}|${protocol}|${port}`;
  }

  /** A connection's first packet entering VPP from a pod's TAP; true when a session opened. */
  leavePod(acls: readonly Acl[], iface: string, packet: AclPacket): boolean {
    const reflecting = acls.some(
      (acl) =>
        acl.interfaces.ingress.includes(iface) &&
        acl.rules.find((rule) => ruleMatches(rule, packet))?.action === 'REFLECT',
    );
    if (reflecting)
      this.sessions.add(ReflectionSessions.key(packet.src, packet.dst, packet.protocol, packet.port));
    return reflecting;
  }

  /** A reply (server → client, of a connection to `port`) towards the client's TAP. */
  replyAllowed(
    acls: readonly Acl[],
    clientIface: string,
    reply: { server: IpAddress; client: IpAddress; protocol: Protocol; port: number },
  ): boolean {
    if (this.sessions.has(ReflectionSessions.key(reply.client, reply.server, reply.protocol, reply.port)))
      return true;
    return interfaceAllows(acls, clientIface, 'egress', {
      src: reply.server,
      dst: reply.client,
      protocol: reply.protocol,
      port: reply.port,
    });
  }
}
