/**
 * One node's BPF maps as JSON (`render --target ebpf`): each address record (the local
 * endpoint's tables by slot, whether it is the node's address, its groups by reference), and each
 * table's entries — the L3 and any-port entries, ports, port-range prefixes, CIDR prefixes (each
 * carrying the union of the prefixes containing it, as the trie holds them), group entries, tier
 * actions — with bitmaps in hex (most significant word first) and what each slot stands for.
 */
import { formatIp } from '../../net/ip.ts';
import { layout } from './kernel/index.ts';
import { hex } from './bitmaps.ts';
import type { EbpfContent, EbpfOutput } from './output.ts';
import type { TableEntries } from './table-entries.ts';

const PROTOCOLS = ['tcp', 'udp', 'sctp'];
const SLOT_NAMES = ['ingress', 'egress', 'adminIngress', 'adminEgress', 'baselineIngress', 'baselineEgress'];
const KINDS = ['prim', 'supp', 'except'];
const ACTIONS = ['allow', 'deny', 'pass'];

export function ebpfDocument(output: EbpfOutput): unknown {
  const { content } = output;
  return {
    node: output.node,
    ...(output.pinned !== undefined
      ? { applied: true, pinned: output.pinned, directDelivery: output.directDelivery }
      : {}),
    epoch: content.epoch,
    records: content.records
      .filter((r) => r.record)
      .sort((a, b) => (a.text < b.text ? -1 : a.text > b.text ? 1 : 0))
      .map(({ text, record }) => ({
        address: text,
        ...(record?.endpoint
          ? {
              tables: Object.fromEntries(
                record.tables.flatMap((id, slot): [string, number][] =>
                  id === 0 ? [] : [[SLOT_NAMES[slot] ?? String(slot), id]],
                ),
              ),
            }
          : {}),
        ...(record?.nodeAddress ? { nodeAddress: true } : {}),
        groups: (record?.groups ?? []).map((id) => content.groups.get(id) ?? String(id)),
      })),
    tables: [...content.tables]
      .sort((a, b) => a.id - b.id)
      .map(({ id, entries }) => tableDocument(id, entries, content)),
  };
}

function tableDocument(id: number, t: TableEntries, content: EbpfContent): unknown {
  const referenceOf = new Map([...content.groupIds].map(([hash, gid]) => [hash, content.groups.get(gid)]));
  return {
    id,
    kind: t.flags & layout.TIER_TABLE ? 'tier' : 'networkpolicy',
    width: t.words * 64,
    ...(t.l3 ? { l3: hex(t.l3) } : {}),
    ...Object.fromEntries(
      t.any.flatMap((b, p) => (b ? [[`any${PROTOCOLS[p]?.toUpperCase()}`, hex(b)]] : [])),
    ),
    ports: t.ports.map((p) => ({ proto: PROTOCOLS[p.protocol], port: p.port, bitmap: hex(p.bitmap) })),
    ranges: t.ranges.map((r) => ({
      proto: PROTOCOLS[r.protocol],
      ports: `${r.port}-${r.port + 2 ** (16 - r.prefix) - 1}`,
      bitmap: hex(r.bitmap),
    })),
    cidrs: t.cidrs.map((c) => ({
      map: KINDS[c.kind],
      cidr: `${formatIp({ family: c.family, value: c.base })}/${c.prefix}`,
      bitmap: hex(c.bitmap),
    })),
    groups: t.groups.map((g) => ({ group: referenceOf.get(g.hash) ?? g.hash, bitmap: hex(g.bitmap) })),
    ...(t.flags & layout.TIER_TABLE
      ? { actions: t.actions.map((a) => ({ slot: a.slot, action: ACTIONS[a.action] })) }
      : {}),
    slots: t.labels.map((rule, bit) => ({ bit, rule })),
  };
}
