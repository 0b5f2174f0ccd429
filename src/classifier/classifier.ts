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
import { TierTables } from '../configurator/index.ts';
import { ACTION_ALLOW, ACTION_DENY, tierTable, type TierTable } from './tier-table.ts';
import { StateGroupResolver } from './state-group-resolver.ts';

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
}

export class Classifier {
  /** IPv4 addresses by their number, IPv6 by their text: no string is made for an IPv4 lookup. */
  private readonly byV4 = new Map<number, EndpointMaps>();
  private readonly byV6 = new Map<string, EndpointMaps>();
  /** Shared tables by selection key, with the pods using them (to rebuild when groups change). */
  private readonly shared = new Map<string, Shared<DirectionTable | undefined>>();
  private readonly pods = new Map<string, { maps: EndpointMaps; keys: string[]; tierKeys: string[] }>();
  private readonly nodeAddresses = new Map<string, Set<number | string>>();
  /** Tier tables by content, with the pods using them (dropped with their last user). */
  private readonly tierTables = new Map<string, Shared<TierTable | undefined>>();
  /** Address → groups, shared by every NetworkPolicy and tier table. */
  private readonly resolver: StateGroupResolver;
  private readonly tierCompiler: TierTables | undefined;

  constructor(
    private readonly state: ClusterState,
    private readonly options: ClassifierOptions = {},
  ) {
    this.resolver = new StateGroupResolver(state);
    if (options.tiers) this.tierCompiler = new TierTables(state);
    for (const pod of state.allPods()) {
      if (pod.hostNetwork && pod.node) {
        let set = this.nodeAddresses.get(pod.node);
        if (!set) this.nodeAddresses.set(pod.node, (set = new Set()));
        for (const ip of pod.ips) set.add(addressKey(ip));
      }
      this.setPod(pod.id, pod);
    }
  }

  /**
   * Brings one pod up to date with the store (undefined or host network: it is no endpoint any
   * more): its maps are looked up or built and its addresses re-indexed.
   */
  setPod(id: string, pod: Endpoint | undefined): void {
    const before = this.pods.get(id);
    if (before) {
      for (const ip of before.maps.endpoint.ips) if (this.mapsOf(ip) === before.maps) this.unindex(ip);
      for (const key of before.keys) releaseShared(this.shared, key, id);
      for (const key of before.tierKeys) releaseShared(this.tierTables, key, id);
      this.pods.delete(id);
    }
    if (!pod || pod.hostNetwork || pod.ips.length === 0) return;
    const ingress = this.table(pod, 'ingress');
    const egress = this.table(pod, 'egress');
    const tierKeys: string[] = [];
    const maps: EndpointMaps = {
      endpoint: pod,
      ingress: ingress.table,
      egress: egress.table,
      ...this.tiersOf(pod, tierKeys),
    };
    this.pods.set(id, { maps, keys: [ingress.key, egress.key], tierKeys });
    for (const ip of pod.ips) this.index(ip, maps);
  }

  /**
   * Group members changed: every shared table whose slots expand one of these groups is rebuilt,
   * for the pods that use it. Work is proportional to the tables that reference the groups.
   */
  groupsChanged(groups: ReadonlySet<string>): void {
    // Members live in the group layer: only tables whose slots depend on named-port numbers rebuild.
    this.resolver.groupsChanged(groups);
    const stale = new Set<string>();
    for (const [key, entry] of this.shared)
      if (entry.table && [...entry.table.groups].some((g) => groups.has(g))) {
        for (const user of entry.users) stale.add(user);
        this.shared.delete(key);
      }
    for (const id of stale) this.setPod(id, this.state.pod(id));
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
    return [...this.shared.values()].filter((entry) => entry.table !== undefined).length;
  }

  mapsOf(ip: IpAddress): EndpointMaps | undefined {
    return ip.family === 4 ? this.byV4.get(Number(ip.value)) : this.byV6.get(formatIp(ip));
  }

  private index(ip: IpAddress, maps: EndpointMaps): void {
    if (ip.family === 4) this.byV4.set(Number(ip.value), maps);
    else this.byV6.set(formatIp(ip), maps);
  }

  private unindex(ip: IpAddress): void {
    if (ip.family === 4) this.byV4.delete(Number(ip.value));
    else this.byV6.delete(formatIp(ip));
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
    if (from) {
      const admin =
        from.admin?.egress &&
        tierVerdict(from.admin.egress, from.admin.egress.table.firstMatchV4(dst, protocol, port));
      if (admin === false) return false;
      if (admin === undefined) {
        const egress = from.egress;
        if (egress) {
          if (!(local && from.endpoint.node && this.nodeAddresses.get(from.endpoint.node)?.has(dst)))
            if (!egress.allowsV4(dst, protocol, port)) return false;
        } else if (from.baseline?.egress) {
          const t = from.baseline.egress;
          if (tierVerdict(t, t.table.firstMatchV4(dst, protocol, port)) === false) return false;
        }
      }
    }
    const to = this.byV4.get(dst);
    if (to) {
      const admin =
        to.admin?.ingress &&
        tierVerdict(to.admin.ingress, to.admin.ingress.table.firstMatchV4(src, protocol, port));
      if (admin !== undefined) return admin;
      const ingress = to.ingress;
      if (ingress) {
        if (local && to.endpoint.node && this.nodeAddresses.get(to.endpoint.node)?.has(src)) return true;
        return ingress.allowsV4(src, protocol, port);
      }
      if (to.baseline?.ingress) {
        const t = to.baseline.ingress;
        return tierVerdict(t, t.table.firstMatchV4(src, protocol, port)) !== false;
      }
    }
    return true;
  }

  /** One direction: the Admin tier, then NetworkPolicy (isolated pods end there), then the Baseline tier. */
  private side(
    maps: EndpointMaps | undefined,
    direction: 'ingress' | 'egress',
    remote: IpAddress,
    packet: ClassifierPacket,
  ): boolean {
    if (!maps) return true;
    const admin = maps.admin?.[direction];
    if (admin) {
      const verdict = tierVerdict(admin, admin.table.firstMatch(remote, packet.protocol, packet.port));
      if (verdict !== undefined) return verdict;
    }
    const table = maps[direction];
    if (table) {
      const node = maps.endpoint.node;
      if (
        (this.options.allowNodeLocal ?? true) &&
        node &&
        this.nodeAddresses.get(node)?.has(addressKey(remote))
      )
        return true;
      return table.allows(remote, packet.protocol, packet.port);
    }
    const baseline = maps.baseline?.[direction];
    if (baseline)
      return tierVerdict(baseline, baseline.table.firstMatch(remote, packet.protocol, packet.port)) !== false;
    return true;
  }

  /** The pod's tier tables: the configurator's tiered rule lists, one classifier table per list. */
  private tiersOf(pod: Endpoint, used: string[]): Pick<EndpointMaps, 'admin' | 'baseline'> {
    const compiler = this.tierCompiler;
    if (!compiler || this.state.allClusterPolicies().length === 0) return {};
    const tables = (direction: 'ingress' | 'egress') => {
      const tiered = compiler.tiers(pod, direction);
      if (!tiered) return { admin: undefined, baseline: undefined };
      const get = (tier: 'admin' | 'baseline'): TierTable | undefined => {
        const key = `${tiered.id}|${tier}|${direction}`;
        used.push(key);
        return acquireShared(this.tierTables, key, pod.id, () =>
          tierTable(tiered[tier], direction, this.resolver),
        );
      };
      return { admin: get('admin'), baseline: get('baseline') };
    };
    const ingress = tables('ingress');
    const egress = tables('egress');
    const admin = { ingress: ingress.admin, egress: egress.admin };
    const baseline = { ingress: ingress.baseline, egress: egress.baseline };
    return {
      ...(admin.ingress || admin.egress ? { admin: definedOnly(admin) } : {}),
      ...(baseline.ingress || baseline.egress ? { baseline: definedOnly(baseline) } : {}),
    };
  }

  private table(
    pod: Endpoint,
    direction: 'ingress' | 'egress',
  ): { key: string; table: DirectionTable | undefined } {
    const selection = this.state.selection(pod);
    const key =
      direction === 'ingress'
        ? `i|${selection.ingressKey}|${pod.ports.map((p) => `${p.name ?? ''}/${p.protocol}/${p.port}`).join(',')}`
        : `e|${selection.egressKey}`;
    const table = acquireShared(this.shared, key, pod.id, () =>
      buildDirectionTable(this.state, pod, direction, this.resolver),
    );
    return { key, table };
  }
}

/** A table shared by content, with the pods using it; dropped with its last user. */
interface Shared<T> {
  readonly table: T;
  readonly users: Set<string>;
}

function acquireShared<T>(map: Map<string, Shared<T>>, key: string, user: string, build: () => T): T {
  let entry = map.get(key);
  if (!entry) map.set(key, (entry = { table: build(), users: new Set() }));
  entry.users.add(user);
  return entry.table;
}

function releaseShared<T>(map: Map<string, Shared<T>>, key: string, user: string): void {
  const entry = map.get(key);
  if (!entry) return;
  entry.users.delete(user);
  if (entry.users.size === 0) map.delete(key);
}

/** A tier's answer for a matched slot: true (allow), false (deny), undefined (pass, or nothing matched). */
function tierVerdict(tier: TierTable, slot: number): boolean | undefined {
  if (slot < 0) return undefined;
  const action = tier.actions[slot];
  return action === ACTION_ALLOW ? true : action === ACTION_DENY ? false : undefined;
}

function definedOnly<T>(pair: { ingress: T | undefined; egress: T | undefined }): {
  ingress?: T;
  egress?: T;
} {
  return {
    ...(pair.ingress !== undefined ? { ingress: pair.ingress } : {}),
    ...(pair.egress !== undefined ? { egress: pair.egress } : {}),
  };
}
