/**
 * The VPP ACL renderer (seed: Contiv/VPP ACL renderer). Local tables — each pod's ingress rules
 * combined with every known pod's egress rules (CombineRules) — become ACLs on the egress side of
 * the pods' TAP interfaces (VPP's egress is traffic towards the pod), shared by pods with equal
 * tables; the global table becomes one ACL on the egress side of the uplinks; a reflective ACL on
 * the ingress side of every pod with a local ACL lets replies back in.
 *
 * VPP ACLs have no address sets: a group becomes one rule per member address (the per-pair
 * expansion the seed accepts). SCTP has no port match in the model: an SCTP rule with ports is
 * left out — its traffic is denied, never allowed wrongly — and reported.
 */
import { hostCidr } from '../../net/ip.ts';
import type { NetRef, Rule, RuleTable } from '../../model/rule.ts';
import type { ReadonlyStore } from '../../state/index.ts';
import { referenceAddresses } from '../../configurator/index.ts';
import { ownNodeNotes, type CacheSnapshot } from '../cache/index.ts';
import {
  GLOBAL_ACL,
  localAclName,
  podInterface,
  REFLECTION_ACL,
  UPLINK_INTERFACES,
  type Acl,
  type AclRule,
  type L4Match,
} from './model.ts';

export interface AclRendering {
  readonly acls: readonly Acl[];
  /** What the model cannot express (rendered as denied). */
  readonly notes: readonly string[];
}

const ALL_PORTS = { lower_port: 0, upper_port: 65535 };
const SCTP = 132;

/** The addresses a net stands for ('' = any), as networks in CIDR notation. */
function networks(net: NetRef, state: ReadonlyStore): string[] {
  switch (net.kind) {
    case 'any':
      return [''];
    case 'cidr':
      return [net.cidr.text];
    case 'group':
      return referenceAddresses(state, net.group)
        .map((ip) => hostCidr(ip).text)
        .sort();
    case 'outside':
      throw new Error('blocks outside the cluster reach VPP flattened (renderers/cache/flatten-tiers.ts)');
  }
}

const familyOf = (network: string): 4 | 6 | undefined =>
  network === '' ? undefined : network.includes(':') ? 6 : 4;

function aclRules(rule: Rule, state: ReadonlyStore, notes: Set<string>): AclRule[] {
  const action = rule.action === 'permit' ? 'PERMIT' : 'DENY';
  const ports = rule.dstPorts ? { lower_port: rule.dstPorts[0], upper_port: rule.dstPorts[1] } : ALL_PORTS;
  const l4: L4Match = { source_port_range: ALL_PORTS, destination_port_range: ports };
  let match: Pick<AclRule['ip_rule'], 'tcp' | 'udp'> & { protocol?: number };
  if (rule.protocol === 'TCP') match = { tcp: l4 };
  else if (rule.protocol === 'UDP') match = { udp: l4 };
  else if (rule.protocol === 'SCTP') {
    const range = `${ports.lower_port}${ports.upper_port !== ports.lower_port ? `-${ports.upper_port}` : ''}`;
    if (rule.dstPorts && action === 'PERMIT') {
      notes.add(`SCTP ports cannot be matched by VPP ACL rules: SCTP to port ${range} is denied`);
      return [];
    }
    // A deny keeps its addresses but not its ports: it denies every SCTP port there (never more).
    if (rule.dstPorts)
      notes.add(
        `SCTP ports cannot be matched by VPP ACL rules: a deny of SCTP port ${range} denies every SCTP port between those addresses`,
      );
    match = { protocol: SCTP };
  } else match = {};
  const out: AclRule[] = [];
  for (const source of networks(rule.src, state))
    for (const destination of networks(rule.dst, state)) {
      const sf = familyOf(source);
      const df = familyOf(destination);
      if (sf !== undefined && df !== undefined && sf !== df) continue;
      const { protocol, ...l4match } = match;
      out.push({
        action,
        ip_rule: {
          ip: { source_network: source, destination_network: destination, ...(protocol ? { protocol } : {}) },
          ...l4match,
        },
      });
    }
  return out;
}

function tableRules(table: RuleTable, state: ReadonlyStore, notes: Set<string>): AclRule[] {
  return table.rules.flatMap((rule) => aclRules(rule, state, notes));
}

/** Every ACL of one node, from the renderer cache's snapshot (cache side: ingress). */
export function renderAcls(snapshot: CacheSnapshot, state: ReadonlyStore): AclRendering {
  const notes = new Set<string>(ownNodeNotes(snapshot));
  const podsOf = new Map<string, string[]>();
  for (const [pod, table] of snapshot.binding) {
    const list = podsOf.get(table);
    if (list) list.push(pod);
    else podsOf.set(table, [pod]);
  }
  const acls: Acl[] = [];
  for (const [id, table] of [...snapshot.tables].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const pods = (podsOf.get(id) ?? []).sort();
    acls.push({
      name: localAclName(id),
      rules: tableRules(table, state, notes),
      interfaces: { egress: pods.map(podInterface), ingress: [] },
    });
  }
  acls.push({
    name: GLOBAL_ACL,
    rules: tableRules(snapshot.global, state, notes),
    interfaces: { egress: [...UPLINK_INTERFACES], ingress: [] },
  });
  const reflected = [...snapshot.binding.keys()].sort().map(podInterface);
  if (reflected.length > 0)
    acls.push({
      name: REFLECTION_ACL,
      rules: [{ action: 'REFLECT', ip_rule: { ip: { source_network: '', destination_network: '' } } }],
      interfaces: { egress: [], ingress: reflected },
    });
  return { acls, notes: [...notes].sort() };
}

/**
 * What a transaction sends to vpp-agent: ACLs to add (new names), to update (same name, other
 * rules or interfaces) and to delete — the minimal set, comparing rendered ACLs by content.
 */
export function aclTransaction(
  before: readonly Acl[],
  after: readonly Acl[],
): { readonly add: readonly Acl[]; readonly update: readonly Acl[]; readonly delete: readonly string[] } {
  const old = new Map(before.map((a) => [a.name, JSON.stringify(a)]));
  const names = new Set(after.map((a) => a.name));
  return {
    add: after.filter((a) => !old.has(a.name)),
    update: after.filter((a) => old.has(a.name) && old.get(a.name) !== JSON.stringify(a)),
    delete: [...old.keys()].filter((name) => !names.has(name)),
  };
}
