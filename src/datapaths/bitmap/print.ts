/**
 * The classifier's maps as the seed (Mizar) keys them: per endpoint and direction the enforce,
 * primary-CIDR, supplementary, except and protocol/port maps (VNI, endpoint IP, CIDR or
 * protocol/port → bitmap of rule slots, hex, most significant word first), the group map when
 * peers resolve through groups, and what each slot stands for. Kubernetes has no VNI: it is 0.
 */
import { formatIp } from '../../net/ip.ts';
import type { Classifier, DirectionTable, EndpointMaps, TierTable } from '../../classifier/index.ts';

/** Every endpoint's maps (only those of `node` when given), sorted by endpoint. */
export function bitmapDocument(classifier: Classifier, node: string | undefined): unknown {
  const endpoints = classifier
    .endpoints()
    .filter((maps) => node === undefined || maps.endpoint.node === node)
    .sort((a, b) => (a.endpoint.id < b.endpoint.id ? -1 : 1));
  return { endpoints: endpoints.map(endpointDocument) };
}

function endpointDocument({ endpoint, ingress, egress, admin, baseline }: EndpointMaps): unknown {
  const ip = endpoint.ips.map(formatIp).join(',');
  return {
    endpoint: endpoint.id,
    ips: endpoint.ips.map(formatIp),
    ingress: ingress ? tableDocument(ingress, ip) : { enforce: [] },
    egress: egress ? tableDocument(egress, ip) : { enforce: [] },
    // Ordered tiers: slots in precedence order, the lowest matching bit decides with its action.
    ...(admin ? { admin: tierDocument(admin, ip) } : {}),
    ...(baseline ? { baseline: tierDocument(baseline, ip) } : {}),
  };
}

const ACTIONS = ['allow', 'deny', 'pass'];

function tierDocument(tier: { ingress?: TierTable; egress?: TierTable }, ip: string): unknown {
  const one = (t: TierTable | undefined) =>
    t && { ...tableDocument(t.table, ip), actions: [...t.actions].map((a) => ACTIONS[a]) };
  return {
    ...(tier.ingress ? { ingress: one(tier.ingress) } : {}),
    ...(tier.egress ? { egress: one(tier.egress) } : {}),
  };
}

const PROTOCOL_NAMES = ['tcp', 'udp', 'sctp'];

/** One direction table's maps: key → bitmap. */
function tableDocument(table: DirectionTable, ip: string): Record<string, unknown[]> {
  const hex = (offset: number): string => {
    let text = '';
    for (let w = table.width - 1; w >= 0; w--)
      text += (table.store.words[offset + w] as number).toString(16).padStart(8, '0');
    return `0x${text}`;
  };
  const cidrs = (map: 'prim' | 'supp' | 'except') =>
    [...table.prefixes[map]].map(([cidr, offset]) => ({ vni: 0, ip, cidr, bitmap: hex(offset) }));
  const ppo: unknown[] = [];
  if (table.l3 !== undefined) ppo.push({ vni: 0, ip, proto: 0, port: 0, bitmap: hex(table.l3) });
  table.protocolAny.forEach((offset, p) => {
    if (offset !== undefined)
      ppo.push({ vni: 0, ip, proto: PROTOCOL_NAMES[p], port: 0, bitmap: hex(offset) });
  });
  for (const [key, offset] of table.ports)
    ppo.push({ vni: 0, ip, proto: PROTOCOL_NAMES[key >>> 16], port: key & 0xffff, bitmap: hex(offset) });
  for (const r of table.ranges)
    ppo.push({
      vni: 0,
      ip,
      proto: PROTOCOL_NAMES[r.protocol],
      port: `${r.from}-${r.to}`,
      bitmap: hex(r.offset),
    });
  const groups = table.groupEntries()?.map(([group, offset]) => ({ vni: 0, ip, group, bitmap: hex(offset) }));
  return {
    enforce: [{ vni: 0, ip, value: 1 }],
    prim: cidrs('prim'),
    ...(groups ? { groups } : {}),
    supp: cidrs('supp'),
    except: cidrs('except'),
    ppo,
    slots: table.labels.map((label, bit) => ({ bit, rule: label })),
  };
}
