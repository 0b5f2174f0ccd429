/**
 * The classifier: every local endpoint's ingress and egress maps, and the verdict for a packet
 * — the source's egress maps and the destination's ingress maps must both allow it (an endpoint
 * no policy isolates in a direction has no maps there: the seed's enforce map says "not
 * enforced"). Endpoints that are selected by the same policies (and, for ingress, expose the
 * same ports) share their maps. Traffic between a pod and its own node is allowed first, as in
 * the datapaths.
 *
 * Lookups run on flat copies: each built table packed into one shared typed array, and per
 * address one record of table handles, node and groups (address-records.ts). The objects stay
 * for rendering and for knowing what to rebuild.
 */
import { formatIp, type IpAddress, type IpFamily } from '../net/ip.ts';
import type { ClassifierOptions, ClassifierPacket, EndpointMaps } from './classifier-types.ts';
import type { Endpoint, Protocol } from '../model/types.ts';
import type { CompilingStore } from '../state/index.ts';
import { buildDirectionTable } from './build.ts';
import { PROTOCOL_INDEX, type DirectionTable } from './direction-table.ts';
import { beyondTwoTiers, portsKey, TierTables, UnsupportedPolicyError } from '../configurator/index.ts';
import { ACTION_ALLOW, ACTION_DENY, tierTable, type TierTable } from './tier-bitmap-table.ts';
import { StateGroupResolver } from './state-group-resolver.ts';
import {
  ADMIN_EGRESS,
  ADMIN_INGRESS,
  AddressRecords,
  BASELINE_EGRESS,
  BASELINE_INGRESS,
  EGRESS,
  EGRESS_PORTS,
  ENDPOINT_NODE,
  INGRESS_PORTS,
  TIERS,
  TIER_FORM,
  GROUP_COUNT,
  GROUPS,
  INLINE_GROUPS,
  OVERFLOW_AT,
  INGRESS,
  NODE_ADDRESS_OF,
  TIER_GROUPS,
} from './address-records.ts';
import { PackedTables, portBit } from './table-arena.ts';
import { addressWords } from './lpm-trie.ts';
import { NO_TABLE, SharedTables, type Shared, type SharedRef } from './shared-tables.ts';
import {
  NO_FORM,
  TIER_ALLOW,
  TIER_DENY,
  TIER_UNDECIDED,
  TIER_WALK,
  TierDecisions,
} from './tier-decisions.ts';

/** Tier answers (the fast form's codes; the rule walk answers the same way). */
const ALLOW = TIER_ALLOW;
const DENY = TIER_DENY;
const UNDECIDED = TIER_UNDECIDED;

export class Classifier {
  /** IPv4 addresses by their number, IPv6 by their text: no string is made for an IPv4 lookup. */
  private readonly byV4 = new Map<number, EndpointMaps>();
  private readonly byV6 = new Map<string, EndpointMaps>();
  /** Shared tables by selection key, with the pods using them (to rebuild when groups change). */
  private readonly shared = new SharedTables<DirectionTable>();
  private readonly pods = new Map<string, { maps: EndpointMaps; keys: SharedRef[]; tierKeys: SharedRef[] }>();
  /** Node numbers (from 1) for the records' node fields. */
  private readonly nodeNumbers = new Map<string, number>();
  /** What lookups read: per address a record, per table a packed block. */
  private readonly records = new AddressRecords();
  private readonly packed = new PackedTables((moves) => this.records.remapTables(moves));
  private readonly srcWords = new Uint32Array(4);
  private readonly allowNodeLocal: boolean;
  private readonly dstWords = new Uint32Array(4);
  /** Tier tables by content, with the pods using them (dropped with their last user). */
  private readonly tierTables = new SharedTables<TierTable>();
  /** Address → groups of NetworkPolicy tables, and of tier tables (two lists per record). */
  private readonly resolver: StateGroupResolver;
  private readonly tierResolver: StateGroupResolver;
  private readonly tierCompiler: TierTables | undefined;
  /** Tier verdicts per (table, peer class, port class); undefined without tiers (or when walking). */
  private readonly decisions: TierDecisions | undefined;

  constructor(
    private readonly state: CompilingStore,
    private readonly options: ClassifierOptions = {},
  ) {
    this.allowNodeLocal = options.allowNodeLocal ?? true;
    this.resolver = new StateGroupResolver(state, this.records);
    this.tierResolver = new StateGroupResolver(state, this.records, TIER_GROUPS);
    if (options.tiers) this.tierCompiler = new TierTables(state);
    const resolver = this.tierResolver;
    this.decisions =
      options.tiers && !options.tierRuleWalk
        ? new TierDecisions(this.records, (group) => resolver.addressesOf(group))
        : undefined;
    for (const pod of state.allPods()) {
      if (pod.hostNetwork && pod.node) this.addNodeAddresses(pod.node, pod.ips);
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
      for (const ref of before.keys) this.shared.release(ref, id, this.free);
      for (const ref of before.tierKeys) this.tierTables.release(ref, id, this.freeTier);
      this.pods.delete(id);
    }
    if (!pod || pod.hostNetwork || pod.ips.length === 0) return;
    if (this.options.node !== undefined && pod.node !== this.options.node) return;
    const ingress = this.table(pod, 'ingress');
    const egress = this.table(pod, 'egress');
    const tierKeys: SharedRef[] = [];
    const tiers = this.tiersOf(pod, tierKeys);
    const maps: EndpointMaps = {
      endpoint: pod,
      ingress: ingress.entry.table,
      egress: egress.entry.table,
      ...tiers.maps,
    };
    this.pods.set(id, { maps, keys: [ingress.ref, egress.ref], tierKeys });
    // Offsets now, after every table was packed: packing one may have compacted the others.
    const blocks = [ingress.entry.handle, egress.entry.handle, ...tiers.handles].map((handle) =>
      handle === NO_TABLE ? NO_TABLE : this.packed.offsetOf(handle),
    );
    // The tier tables' form numbers follow their offsets (-1: walk the table's rules).
    const decisions = this.decisions;
    for (const handle of tiers.handles)
      blocks.push(handle === NO_TABLE || !decisions ? NO_FORM : decisions.formOf(handle));
    const signature = (block: number): number => (block === NO_TABLE ? 0 : this.packed.portSignature(block));
    const signatures: [number, number] = [signature(blocks[0] as number), signature(blocks[1] as number)];
    const node = pod.node ? this.nodeNumber(pod.node) : 0;
    for (const ip of pod.ips) this.index(ip, maps, blocks, signatures, node);
  }

  /**
   * Group members changed: every shared table whose slots expand one of these groups is rebuilt,
   * for the pods that use it. Work is proportional to the tables that reference the groups.
   */
  groupsChanged(groups: ReadonlySet<string>): void {
    // Members live in the group layer: only tables whose slots depend on named-port numbers rebuild.
    this.resolver.groupsChanged(groups);
    this.tierResolver.groupsChanged(groups);
    const stale = this.shared.evict((table) => [...table.groups].some((g) => groups.has(g)), this.free);
    for (const id of stale) this.setPod(id, this.state.pod(id));
  }

  /** Adds the addresses of a node (from the cluster's node list) for node-local traffic. */
  addNodeAddresses(node: string, addresses: readonly IpAddress[]): void {
    const number = this.nodeNumber(node);
    for (const ip of addresses) this.records.setNodeAddress(ip, number);
  }

  private nodeNumber(node: string): number {
    let number = this.nodeNumbers.get(node);
    if (number === undefined) this.nodeNumbers.set(node, (number = this.nodeNumbers.size + 1));
    return number;
  }

  /** Every endpoint's maps, once each. */
  endpoints(): EndpointMaps[] {
    return [...new Set([...this.byV4.values(), ...this.byV6.values()])];
  }

  /** Times the packed tables were compacted (blocks moved under the records). */
  get compactions(): number {
    return this.packed.compactions;
  }

  /**
   * Bytes of the lookup structures: address records (with group lists), packed tables
   * (`tablesUsed`: the live blocks, without the arena's free room), the tier decisions kept so
   * far (index, rows, port classes) and the tier forms they are computed from.
   */
  get memory(): {
    records: number;
    tables: number;
    tablesUsed: number;
    tierDecisions: number;
    tierForms: number;
  } {
    const tier = this.decisions?.bytes ?? { lookups: 0, forms: 0 };
    return {
      records: this.records.bytes,
      tables: this.packed.bytes,
      tablesUsed: this.packed.usedBytes,
      tierDecisions: tier.lookups,
      tierForms: tier.forms,
    };
  }

  /** Tier decision rows held, peer classes and port classes (zeros without the fast form). */
  get tierDecisionSizes(): { rows: number; peerClasses: number; portClasses: number } {
    return this.decisions?.sizes ?? { rows: 0, peerClasses: 0, portClasses: 0 };
  }

  /** Distinct direction tables built (shared ones counted once). */
  get tables(): number {
    return this.shared.tables;
  }

  mapsOf(ip: IpAddress): EndpointMaps | undefined {
    return ip.family === 4 ? this.byV4.get(Number(ip.value)) : this.byV6.get(formatIp(ip));
  }

  private index(
    ip: IpAddress,
    maps: EndpointMaps,
    blocks: readonly number[],
    signatures: readonly [number, number],
    node: number,
  ): void {
    if (ip.family === 4) this.byV4.set(Number(ip.value), maps);
    else this.byV6.set(formatIp(ip), maps);
    this.records.setEndpoint(ip, blocks, signatures, node);
  }

  private unindex(ip: IpAddress): void {
    if (ip.family === 4) this.byV4.delete(Number(ip.value));
    else this.byV6.delete(formatIp(ip));
    this.records.clearEndpoint(ip);
  }

  allows(packet: ClassifierPacket): boolean {
    const { src, dst } = packet;
    // No packet carries addresses of two families (callers pair addresses by family).
    if (src.family !== dst.family) return false;
    const srcWords = addressWords(src.family, src.value, this.srcWords);
    const dstWords = addressWords(dst.family, dst.value, this.dstWords);
    const records = this.records;
    const from = src.family === 4 ? records.findV4(srcWords[0] as number) : records.findV6(srcWords);
    const to = dst.family === 4 ? records.findV4(dstWords[0] as number) : records.findV6(dstWords);
    return this.decide(from, to, src.family, protocolIndex(packet.protocol), packet.port);
  }

  /**
   * The same verdict for IPv4 addresses given as numbers — the form a datapath has them in;
   * no bigint and no string on this path.
   */
  allowsV4(src: number, dst: number, protocol: Protocol, port: number): boolean {
    return this.allowsV4Indexed(src, dst, protocolIndex(protocol), port);
  }

  /**
   * The same with the protocol as an index (PROTOCOL_INDEX: 0 TCP, 1 UDP, 2 SCTP), as a
   * datapath has it from the header: no string comparison per packet.
   */
  allowsV4Indexed(src: number, dst: number, protocol: number, port: number): boolean {
    this.srcWords[0] = src;
    this.dstWords[0] = dst;
    const records = this.records;
    return this.decide(records.findV4(src), records.findV4(dst), 4, protocol, port);
  }

  /**
   * Both ends, from their records (-1: an address the classifier knows nothing of): the source's
   * egress, then the destination's ingress. Each side: the Admin tier, then NetworkPolicy
   * (isolated pods end there), then the Baseline tier.
   */
  private decide(from: number, to: number, family: IpFamily, protocol: number, port: number): boolean {
    const data = family === 4 ? this.records.v4 : this.records.v6;
    const tiers = this.records.tiers;
    const local = this.allowNodeLocal;
    const dstWords = this.dstWords;
    const srcWords = this.srcWords;
    const bit = portBit(protocol, port);
    if (from >= 0) {
      const tiered = data[from + TIERS] as number;
      const admin =
        tiered < 0 || tiers[tiered + ADMIN_EGRESS] === NO_TABLE
          ? UNDECIDED
          : this.tier(tiers, tiered + ADMIN_EGRESS, family, dstWords, data, to, protocol, port);
      if (admin === DENY) return false;
      if (admin === UNDECIDED) {
        const egress = data[from + EGRESS] as number;
        if (egress !== NO_TABLE) {
          // A port the table names nowhere (its signature says so) is denied without reading it.
          if (
            !(local && nodeLocal(data, from, to)) &&
            (((data[from + EGRESS_PORTS] as number) & bit) === 0 ||
              this.slot(egress, family, dstWords, data, to, protocol, port, false) < 0)
          )
            return false;
        } else {
          if (
            tiered >= 0 &&
            tiers[tiered + BASELINE_EGRESS] !== NO_TABLE &&
            this.tier(tiers, tiered + BASELINE_EGRESS, family, dstWords, data, to, protocol, port) === DENY
          )
            return false;
        }
      }
    }
    if (to < 0) return true;
    const tiered = data[to + TIERS] as number;
    if (tiered >= 0 && tiers[tiered + ADMIN_INGRESS] !== NO_TABLE) {
      const admin = this.tier(tiers, tiered + ADMIN_INGRESS, family, srcWords, data, from, protocol, port);
      if (admin !== UNDECIDED) return admin === ALLOW;
    }
    const ingress = data[to + INGRESS] as number;
    if (ingress !== NO_TABLE) {
      if (local && nodeLocal(data, to, from)) return true;
      return (
        ((data[to + INGRESS_PORTS] as number) & bit) !== 0 &&
        this.slot(ingress, family, srcWords, data, from, protocol, port, false) >= 0
      );
    }
    return (
      tiered < 0 ||
      tiers[tiered + BASELINE_INGRESS] === NO_TABLE ||
      this.tier(tiers, tiered + BASELINE_INGRESS, family, srcWords, data, from, protocol, port) !== DENY
    );
  }

  /**
   * A tier table's answer: ALLOW, DENY, or UNDECIDED (nothing matched, or Pass) — from the
   * decisions kept per peer and port class when the remote has a record, else by walking the
   * table's rules.
   */
  private tier(
    tiers: Int32Array,
    field: number,
    family: IpFamily,
    words: Uint32Array,
    data: Int32Array,
    remote: number,
    protocol: number,
    port: number,
  ): number {
    const decisions = this.decisions;
    const form = tiers[field + TIER_FORM] as number;
    if (decisions && remote >= 0 && form !== NO_FORM) {
      const decided = decisions.decide(form, data, remote, family, words, protocol, port);
      if (decided !== TIER_WALK) return decided;
    }
    const table = tiers[field] as number;
    // Tier tables name the groups of the remote's tier list (in the overflow arena).
    const at = remote < 0 ? -1 : this.records.tierListAt(data, remote);
    const overflow = this.records.overflow;
    const count = at < 0 ? 0 : (overflow[at] as number);
    const slot = this.packed.match(table, family, words, overflow, at + 2, count, protocol, port, true);
    if (slot < 0) return UNDECIDED;
    const action = this.packed.action(table, slot);
    return action === ACTION_ALLOW ? ALLOW : action === ACTION_DENY ? DENY : UNDECIDED;
  }

  /** The table's matching slot for the remote address (its record in `data`, or -1). */
  private slot(
    table: number,
    family: IpFamily,
    words: Uint32Array,
    data: Int32Array,
    remote: number,
    protocol: number,
    port: number,
    first: boolean,
  ): number {
    const count = remote < 0 ? 0 : (data[remote + GROUP_COUNT] as number);
    // Up to INLINE_GROUPS groups sit in the record; more are in the overflow arena.
    const inline = count <= INLINE_GROUPS;
    const groups = inline ? data : this.records.overflow;
    const at = inline ? remote + GROUPS : (data[remote + OVERFLOW_AT] as number);
    return this.packed.match(table, family, words, groups, at, count, protocol, port, first);
  }

  /**
   * The pod's tier tables, and their packed handles in record order (Admin ingress, Admin
   * egress, Baseline ingress, Baseline egress).
   */
  private tiersOf(
    pod: Endpoint,
    used: SharedRef[],
  ): { maps: Pick<EndpointMaps, 'admin' | 'baseline'>; handles: number[] } {
    const compiler = this.tierCompiler;
    const none = [NO_TABLE, NO_TABLE, NO_TABLE, NO_TABLE];
    if (!compiler || this.state.allClusterPolicies().length === 0) return { maps: {}, handles: none };
    const tables = (direction: 'ingress' | 'egress') => {
      const tiered = compiler.tiers(pod, direction);
      if (!tiered) return { admin: undefined, baseline: undefined };
      const beyond = beyondTwoTiers(tiered);
      if (beyond)
        throw new UnsupportedPolicyError(
          `the classifier has one Admin and one Baseline table per pod side; it cannot express ${beyond} (pod ${pod.id}). The reference evaluator, nftables and the VPP targets handle them`,
        );
      const get = (tier: 'admin' | 'baseline'): Shared<TierTable> => {
        const ref = { key: tiered.id, variant: `${tier}|${direction}` };
        used.push(ref);
        return this.tierTables.acquire(
          ref,
          pod.id,
          () => tierTable(tiered[tier], direction, this.tierResolver),
          (t) => {
            const handle = this.packed.add(t.table, t.actions);
            this.decisions?.add(handle, t.form);
            return handle;
          },
        );
      };
      return { admin: get('admin'), baseline: get('baseline') };
    };
    const ingress = tables('ingress');
    const egress = tables('egress');
    const admin = { ingress: ingress.admin?.table, egress: egress.admin?.table };
    const baseline = { ingress: ingress.baseline?.table, egress: egress.baseline?.table };
    const handles = [ingress.admin, egress.admin, ingress.baseline, egress.baseline].map(
      (entry) => entry?.handle ?? NO_TABLE,
    );
    return {
      maps: {
        ...(admin.ingress || admin.egress ? { admin: definedOnly(admin) } : {}),
        ...(baseline.ingress || baseline.egress ? { baseline: definedOnly(baseline) } : {}),
      },
      handles,
    };
  }

  private table(
    pod: Endpoint,
    direction: 'ingress' | 'egress',
  ): { ref: SharedRef; entry: Shared<DirectionTable> } {
    const selection = this.state.selection(pod);
    // The selection key is used as it is: see shared-tables.ts for what a concatenation cost.
    const ref =
      direction === 'ingress'
        ? { key: selection.ingressKey, variant: `i|${portsKey(pod)}` }
        : { key: selection.egressKey, variant: 'e' };
    const entry = this.shared.acquire(
      ref,
      pod.id,
      () => buildDirectionTable(this.state, pod, direction, this.resolver),
      (table) => this.packed.add(table),
    );
    return { ref, entry };
  }

  private readonly free = (handle: number): void => this.packed.remove(handle);
  private readonly freeTier = (handle: number): void => {
    this.decisions?.remove(handle);
    this.packed.remove(handle);
  };
}

/** Whether the remote address (its record, or -1) belongs to the endpoint's own node. */
function nodeLocal(data: Int32Array, endpoint: number, remote: number): boolean {
  if (remote < 0) return false;
  const node = data[endpoint + ENDPOINT_NODE] as number;
  return node !== 0 && data[remote + NODE_ADDRESS_OF] === node;
}

function protocolIndex(protocol: Protocol): number {
  return PROTOCOL_INDEX[protocol];
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
