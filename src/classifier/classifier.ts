/**
 * The classifier: every local endpoint's ingress and egress maps, and the verdict for a packet
 * — the source's egress maps and the destination's ingress maps must both allow it (an endpoint
 * no policy isolates in a direction has no maps there: the seed's enforce map says "not
 * enforced"). Endpoints that are selected by the same policies (and, for ingress, expose the
 * same ports) share their maps. Traffic between a pod and its own node is allowed first, as in
 * the datapaths.
 */
import { formatIp, type IpAddress } from '../net/ip.ts';
import type { Endpoint, Protocol } from '../model/types.ts';
import type { ClusterState } from '../state/index.ts';
import { buildDirectionTable } from './build.ts';
import type { DirectionTable } from './direction-table.ts';

const addressKey = (ip: IpAddress): number | string => (ip.family === 4 ? Number(ip.value) : formatIp(ip));

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
}

export class Classifier {
  /** IPv4 addresses by their number, IPv6 by their text: no string is made for an IPv4 lookup. */
  private readonly byV4 = new Map<number, EndpointMaps>();
  private readonly byV6 = new Map<string, EndpointMaps>();
  private readonly shared = new Map<string, DirectionTable | undefined>();
  private readonly nodeAddresses = new Map<string, Set<number | string>>();

  constructor(
    private readonly state: ClusterState,
    private readonly options: { readonly allowNodeLocal?: boolean } = {},
  ) {
    for (const pod of state.allPods()) {
      if (pod.hostNetwork && pod.node) {
        let set = this.nodeAddresses.get(pod.node);
        if (!set) this.nodeAddresses.set(pod.node, (set = new Set()));
        for (const ip of pod.ips) set.add(addressKey(ip));
      }
      if (pod.hostNetwork || pod.ips.length === 0) continue;
      const maps: EndpointMaps = {
        endpoint: pod,
        ingress: this.table(pod, 'ingress'),
        egress: this.table(pod, 'egress'),
      };
      for (const ip of pod.ips) this.index(ip, maps);
    }
  }

  /** Adds the addresses of a node (from the cluster's node list) for node-local traffic. */
  addNodeAddresses(node: string, addresses: readonly IpAddress[]): void {
    let set = this.nodeAddresses.get(node);
    if (!set) this.nodeAddresses.set(node, (set = new Set()));
    for (const ip of addresses) set.add(addressKey(ip));
  }

  /** Every endpoint's maps, once each. */
  endpoints(): EndpointMaps[] {
    return [...new Set([...this.byV4.values(), ...this.byV6.values()])];
  }

  /** Distinct direction tables built (shared ones counted once). */
  get tables(): number {
    return [...this.shared.values()].filter((t) => t !== undefined).length;
  }

  mapsOf(ip: IpAddress): EndpointMaps | undefined {
    return ip.family === 4 ? this.byV4.get(Number(ip.value)) : this.byV6.get(formatIp(ip));
  }

  private index(ip: IpAddress, maps: EndpointMaps): void {
    if (ip.family === 4) this.byV4.set(Number(ip.value), maps);
    else this.byV6.set(formatIp(ip), maps);
  }

  allows(packet: ClassifierPacket): boolean {
    const src = this.mapsOf(packet.src);
    const dst = this.mapsOf(packet.dst);
    return this.side(src, 'egress', packet.dst, packet) && this.side(dst, 'ingress', packet.src, packet);
  }

  /**
   * The same verdict for IPv4 addresses given as numbers — the form a datapath has them in;
   * no bigint and no string on this path.
   */
  allowsV4(src: number, dst: number, protocol: Protocol, port: number): boolean {
    const local = this.options.allowNodeLocal ?? true;
    const from = this.byV4.get(src);
    const egress = from?.egress;
    if (egress && !(local && from.endpoint.node && this.nodeAddresses.get(from.endpoint.node)?.has(dst)))
      if (!egress.allowsV4(dst, protocol, port)) return false;
    const to = this.byV4.get(dst);
    const ingress = to?.ingress;
    if (ingress && !(local && to.endpoint.node && this.nodeAddresses.get(to.endpoint.node)?.has(src)))
      if (!ingress.allowsV4(src, protocol, port)) return false;
    return true;
  }

  private side(
    maps: EndpointMaps | undefined,
    direction: 'ingress' | 'egress',
    remote: IpAddress,
    packet: ClassifierPacket,
  ): boolean {
    if (!maps) return true;
    const table = maps[direction];
    if (!table) return true;
    const node = maps.endpoint.node;
    if (
      (this.options.allowNodeLocal ?? true) &&
      node &&
      this.nodeAddresses.get(node)?.has(addressKey(remote))
    )
      return true;
    return table.allows(remote, packet.protocol, packet.port);
  }

  private table(pod: Endpoint, direction: 'ingress' | 'egress'): DirectionTable | undefined {
    const selection = this.state.selection(pod);
    const key =
      direction === 'ingress'
        ? `i|${selection.ingressKey}|${pod.ports.map((p) => `${p.name ?? ''}/${p.protocol}/${p.port}`).join(',')}`
        : `e|${selection.egressKey}`;
    if (this.shared.has(key)) return this.shared.get(key);
    const table = buildDirectionTable(this.state, pod, direction);
    this.shared.set(key, table);
    return table;
  }
}
