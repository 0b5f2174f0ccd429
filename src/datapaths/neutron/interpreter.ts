/**
 * Matches packets against rendered security groups as Neutron does: a port allows what any rule
 * of any of its groups allows (groups only allow), egress rules on the sender's port and ingress
 * rules on the receiver's; `remote_group_id` matches the addresses of the ports bound to that
 * group. Security groups are stateful, so only a connection's first packet is judged here.
 */
import { cidrContains, formatIp, parseCidr, type IpAddress } from '../../net/ip.ts';
import type { Protocol } from '../../model/types.ts';
import type { NeutronRendering, PortBinding, SecurityGroupRule } from './model.ts';

interface NeutronPacket {
  readonly src: IpAddress;
  readonly dst: IpAddress;
  readonly protocol: Protocol;
  readonly port: number;
}

export class NeutronModel {
  private readonly portByIp = new Map<string, PortBinding>();
  private readonly members = new Map<string, Set<string>>();
  private readonly rules = new Map<string, readonly SecurityGroupRule[]>();

  constructor(rendering: NeutronRendering) {
    for (const group of rendering.security_groups) this.rules.set(group.name, group.rules);
    for (const port of rendering.ports) {
      for (const ip of port.fixed_ips) this.portByIp.set(ip, port);
      for (const group of port.security_groups) {
        let set = this.members.get(group);
        if (!set) this.members.set(group, (set = new Set()));
        for (const ip of port.fixed_ips) set.add(ip);
      }
    }
  }

  /** The port that owns an address (undefined: not a Neutron port, so not policed). */
  portAt(ip: IpAddress): PortBinding | undefined {
    return this.portByIp.get(formatIp(ip));
  }

  /** Whether a port's groups allow the packet in one direction (`remote`: the other end). */
  allows(
    port: PortBinding,
    direction: 'ingress' | 'egress',
    remote: IpAddress,
    packet: NeutronPacket,
  ): boolean {
    const ethertype = remote.family === 4 ? 'IPv4' : 'IPv6';
    return port.security_groups.some((group) =>
      (this.rules.get(group) ?? []).some((rule) => {
        if (rule.direction !== direction || rule.ethertype !== ethertype) return false;
        if (rule.protocol !== null && rule.protocol !== packet.protocol.toLowerCase()) return false;
        if (
          rule.port_range_min !== undefined &&
          (packet.port < rule.port_range_min || packet.port > (rule.port_range_max ?? rule.port_range_min))
        )
          return false;
        if (rule.remote_ip_prefix !== undefined) {
          const cidr = parseCidr(rule.remote_ip_prefix);
          return cidr.ok && cidrContains(cidr.value, remote);
        }
        if (rule.remote_group_id !== undefined)
          return this.members.get(rule.remote_group_id)?.has(formatIp(remote)) ?? false;
        return true;
      }),
    );
  }

  /** The whole verdict: the sender's egress and the receiver's ingress. */
  packetAllowed(packet: NeutronPacket): boolean {
    const src = this.portAt(packet.src);
    const dst = this.portAt(packet.dst);
    return (
      (!src || this.allows(src, 'egress', packet.dst, packet)) &&
      (!dst || this.allows(dst, 'ingress', packet.src, packet))
    );
  }
}
