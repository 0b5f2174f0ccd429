/**
 * The eBPF maps interpreted the way bpf/palisade.bpf.c reads them, in-process: a packet's egress
 * side is judged with the maps of the source's node (the program on the source's interface),
 * its ingress side with those of the destination's node; each side through the local record's
 * tables — the Admin tier (lowest matching slot), then the NetworkPolicy table (any slot; a pod's
 * own node always passes) or the Baseline tier. Lookups are what the program does: one
 * longest-prefix match per CIDR kind and for port ranges, the exact port, the protocol's any-port
 * and the L3 entries, and the remote address's groups. The conformance suite holds this to the
 * reference evaluator; the kernel tests hold the program to it.
 */
import type { IpAddress } from '../../net/ip.ts';
import { PROTOCOL_INDEX } from '../../classifier/index.ts';
import { layout } from './kernel/index.ts';
import type { Rendered, VerdictPacket } from '../types.ts';
import { addressOf, type RecordModel } from './node-maps.ts';
import { and, andNot, emptyBitmap, isEmpty, lowestBit, orInto } from './bitmaps.ts';
import type { EbpfContent } from './output.ts';
import type { TableEntries } from './table-entries.ts';

const UNDECIDED = -1;

/** One node's maps, indexed for lookups. */
export class NodeView {
  private readonly records = new Map<string, RecordModel>();
  private readonly tables = new Map<number, TableEntries>();
  private readonly hashOf: Map<number, string>;

  constructor(
    content: EbpfContent,
    private readonly allowNodeLocal = true,
  ) {
    for (const r of content.records) if (r.record) this.records.set(r.text, r.record);
    for (const t of content.tables) this.tables.set(t.id, t.entries);
    this.hashOf = new Map([...content.groupIds].map(([hash, id]) => [id, hash]));
  }

  /** Whether the address is an endpoint this node enforces. */
  enforces(ip: IpAddress): boolean {
    return this.records.get(addressOf(ip).text)?.endpoint === true;
  }

  /** The local endpoint's side of a packet (undefined: not an endpoint here — the program drops it). */
  side(
    direction: 'egress' | 'ingress',
    local: IpAddress,
    remote: IpAddress,
    protocol: number,
    port: number,
  ): boolean {
    const record = this.records.get(addressOf(local).text);
    if (!record?.endpoint) return false;
    const remoteRecord = this.records.get(addressOf(remote).text);
    const egress = direction === 'egress';
    const admin = record.tables[egress ? layout.T_ADMIN_EGRESS : layout.T_ADMIN_INGRESS] as number;
    const np = record.tables[egress ? layout.T_EGRESS : layout.T_INGRESS] as number;
    const baseline = record.tables[egress ? layout.T_BASELINE_EGRESS : layout.T_BASELINE_INGRESS] as number;
    if (admin !== 0) {
      const action = this.tier(admin, remote, remoteRecord, protocol, port);
      if (action === layout.ACTION_ALLOW) return true;
      if (action === layout.ACTION_DENY) return false;
    }
    if (np !== 0) {
      if (this.allowNodeLocal && remoteRecord?.nodeAddress) return true;
      return this.match(np, remote, remoteRecord, protocol, port) >= 0;
    }
    if (baseline !== 0)
      return this.tier(baseline, remote, remoteRecord, protocol, port) !== layout.ACTION_DENY;
    return true;
  }

  private tier(
    table: number,
    remote: IpAddress,
    record: RecordModel | undefined,
    protocol: number,
    port: number,
  ): number {
    const slot = this.match(table, remote, record, protocol, port);
    if (slot < 0) return UNDECIDED;
    const action =
      this.tables.get(table)?.actions.find((a) => a.slot === slot)?.action ?? layout.ACTION_ALLOW;
    return action === layout.ACTION_DENY
      ? layout.ACTION_DENY
      : action === layout.ACTION_PASS
        ? UNDECIDED
        : action;
  }

  /** The lowest matching slot, or -1 (a missing table matches nothing). */
  private match(
    id: number,
    remote: IpAddress,
    record: RecordModel | undefined,
    protocol: number,
    port: number,
  ): number {
    const t = this.tables.get(id);
    if (!t) return -1;
    const ports = emptyBitmap(t.words);
    if (t.l3) orInto(ports, t.l3);
    if (protocol < 3) {
      const any = t.any[protocol];
      if (any) orInto(ports, any);
      const exact = t.ports.find((p) => p.protocol === protocol && p.port === port);
      if (exact) orInto(ports, exact.bitmap);
      const range = longest(
        t.ranges.filter((r) => r.protocol === protocol && within(port, r.port, r.prefix, 16)),
      );
      if (range) orInto(ports, range.bitmap);
    }
    const cidr = (kind: number) =>
      longest(
        t.cidrs.filter(
          (c) => c.kind === kind && c.family === remote.family && prefixContains(c.base, c.prefix, remote),
        ),
      )?.bitmap;
    const peers = emptyBitmap(t.words);
    const prim = cidr(layout.CIDR_PRIM);
    if (prim) orInto(peers, prim);
    const supp = cidr(layout.CIDR_SUPP);
    if (supp) orInto(peers, andNot(supp, cidr(layout.CIDR_EXCEPT) ?? emptyBitmap(t.words)));
    for (const group of record?.groups ?? []) {
      const hash = this.hashOf.get(group);
      const entry = t.groups.find((g) => g.hash === hash);
      if (entry) orInto(peers, entry.bitmap);
    }
    const matched = and(ports, peers);
    return isEmpty(matched) ? -1 : lowestBit(matched);
  }
}

function within(port: number, base: number, prefix: number, bits: number): boolean {
  const shift = bits - prefix;
  return port >>> shift === base >>> shift;
}

function prefixContains(base: bigint, prefix: number, ip: IpAddress): boolean {
  const host = BigInt((ip.family === 4 ? 32 : 128) - prefix);
  return ip.value >> host === base >> host;
}

function longest<T extends { readonly prefix: number }>(list: readonly T[]): T | undefined {
  let best: T | undefined;
  for (const item of list) if (!best || item.prefix > best.prefix) best = item;
  return best;
}

/**
 * Verdicts for the first packet of a connection from every node's maps: the source's egress on
 * its node (when it is an endpoint there) and the destination's ingress on its node.
 */
export function ebpfVerdicts(
  rendered: readonly Rendered<{ readonly content: EbpfContent; readonly allowNodeLocal: boolean }>[],
): (packet: VerdictPacket) => boolean {
  const views = rendered.map(({ output }) => new NodeView(output.content, output.allowNodeLocal));
  return (packet) => {
    const protocol = PROTOCOL_INDEX[packet.protocol];
    const from = views.find((v) => v.enforces(packet.src));
    if (from && !from.side('egress', packet.src, packet.dst, protocol, packet.port)) return false;
    const to = views.find((v) => v.enforces(packet.dst));
    return !to || to.side('ingress', packet.dst, packet.src, protocol, packet.port);
  };
}
