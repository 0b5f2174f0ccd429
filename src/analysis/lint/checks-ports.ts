/**
 * Port checks. A named port means nothing until it is resolved against container ports (the
 * selected pods' for ingress, the destination's for egress), and an unresolvable one silently
 * allows nothing; a port given with the wrong protocol does the same. Where the input has the
 * pods, their declarations are the evidence; where it has none, the well-known UDP services are.
 */
import { clusterPolicyLabel, namedPortTargets } from '../../model/cluster-policy.ts';
import { policyKey, type Endpoint, type PolicyRule, type Protocol } from '../../model/types.ts';
import { ipBlockIntervals } from '../../net/intervals.ts';
import { listMatchesAll } from '../../semantics/index.ts';
import {
  clusterPolicyObject,
  clusterPolicyRules,
  networkPolicyRules,
  listSome,
  policyObject,
  rowsOf,
  type Direction,
  type LintCheck,
  type LintContext,
} from './context.ts';
import type { Finding, FindingLocation } from './types.ts';

/** Services that answer over UDP (some also over TCP, but UDP is what clients try first). */
const UDP_SERVICES: ReadonlyMap<number, string> = new Map([
  [53, 'DNS'],
  [67, 'DHCP'],
  [68, 'DHCP'],
  [69, 'TFTP'],
  [123, 'NTP'],
  [161, 'SNMP'],
  [162, 'SNMP traps'],
  [514, 'syslog'],
  [4789, 'VXLAN'],
  [5353, 'mDNS'],
  [51820, 'WireGuard'],
]);
/** Container port names conventionally given to UDP services (CoreDNS names its UDP port `dns`, its TCP one `dns-tcp`). */
const UDP_NAMES: ReadonlyMap<string, string> = new Map([
  ['dns', 'DNS'],
  ['domain', 'DNS'],
  ['ntp', 'NTP'],
  ['snmp', 'SNMP'],
  ['syslog', 'syslog'],
  ['tftp', 'TFTP'],
  ['bootps', 'DHCP'],
  ['bootpc', 'DHCP'],
  ['mdns', 'mDNS'],
]);

export const portChecks: LintCheck = {
  codes: ['NAMED_PORT_UNRESOLVED', 'NAMED_PORT_WRONG_PROTOCOL', 'PORT_PROTOCOL_MISMATCH'],
  run(context) {
    const findings: Finding[] = [];
    for (const { policy, direction, rule } of networkPolicyRules(context.cluster)) {
      const rulePath = ['spec', direction, rule.index];
      const label = `${policyKey(policy)} ${direction}[${rule.index}]`;
      let targets: readonly Endpoint[] | undefined;
      (rule.ports ?? []).forEach((port, k) => {
        const where = context.where(policyObject(policy), [...rulePath, 'ports', k], policy.location);
        if (typeof port.port === 'number') {
          if (port.endPort === undefined)
            udpOverTcp(context, findings, label, where, port.port, port.protocol, rule.ports ?? []);
          return;
        }
        if (port.port === undefined) return;
        targets ??=
          direction === 'ingress'
            ? context.selection(policy)
            : egressTargets(context, policy.namespace, rule);
        namedPort(context, findings, label, where, port.port, port.protocol, targets, direction);
      });
    }
    for (const { policy, direction, rule } of clusterPolicyRules(context.cluster)) {
      const label = `${clusterPolicyLabel(policy)} ${direction}[${rule.index}]`;
      const where = context.where(
        clusterPolicyObject(policy),
        ['spec', direction, rule.index],
        policy.location,
      );
      const numeric = (rule.ports ?? []).flatMap((p) => (p.type === 'number' ? [p] : []));
      for (const port of numeric)
        if (port.port !== undefined && port.endPort === undefined)
          udpOverTcp(context, findings, label, where, port.port, port.protocol, numeric);
      for (const port of rule.ports ?? []) {
        if (port.type !== 'named' || rule.failClosed) continue;
        const targets =
          direction === 'ingress'
            ? context.subjects(policy)
            : rule.peers.flatMap((peer) =>
                peer.type !== 'pods' || !peer.namespaces.selector
                  ? []
                  : context.endpoints
                      .namespacesMatching(peer.namespaces.selector)
                      .flatMap((ns) => context.endpoints.podsMatching(ns.name, peer.podSelector)),
              );
        if (targets.length === 0) continue;
        if (targets.some((e) => namedPortTargets(e.ports, port.name).length > 0)) continue;
        findings.push(
          context.finding(
            'NAMED_PORT_UNRESOLVED',
            `${label}: named port "${port.name}" is declared by none of the pods it applies to (${listSome(rowsOf(targets).labels)})`,
            where,
          ),
        );
      }
    }
    return findings;
  },
};

/** The endpoints an egress rule's peers can reach (named ports resolve against them). */
function egressTargets(context: LintContext, namespace: string, rule: PolicyRule): readonly Endpoint[] {
  if (listMatchesAll(rule.peers, context.semantics)) return context.cluster.endpoints;
  const found = new Set<Endpoint>();
  for (const peer of rule.peers ?? []) {
    if (peer.type === 'selector')
      for (const e of context.endpoints.selectorPeerEndpoints(peer, namespace)) found.add(e);
    else
      for (const endpoint of context.endpoints.endpointsInIntervals(ipBlockIntervals(peer.cidr, peer.except)))
        found.add(endpoint);
  }
  return [...found];
}

function namedPort(
  context: LintContext,
  findings: Finding[],
  label: string,
  where: FindingLocation,
  name: string,
  protocol: Protocol,
  targets: readonly Endpoint[],
  direction: Direction,
): void {
  const whose = direction === 'ingress' ? 'the pods it selects' : 'the pods it can reach';
  if (targets.length === 0) {
    // No pods to resolve against: fall back to what the name conventionally means.
    const service = UDP_NAMES.get(name);
    if (service && protocol === 'TCP')
      findings.push(
        context.finding(
          'PORT_PROTOCOL_MISMATCH',
          `${label}: port "${name}" (${service}, a UDP service) is allowed over TCP only (TCP is the default protocol)`,
          where,
        ),
      );
    return;
  }
  if (targets.some((e) => e.ports.some((p) => p.name === name && p.protocol === protocol))) return;
  const other = targets.flatMap((e) =>
    e.ports.filter((p) => p.name === name && p.protocol !== protocol).map((p) => ({ e, p })),
  );
  const first = other[0];
  if (first) {
    findings.push(
      context.finding(
        'NAMED_PORT_WRONG_PROTOCOL',
        `${label}: named port "${name}" is ${first.p.protocol} on ${whose} (e.g. ${rowsOf([first.e]).labels.join('')}: ${first.p.port}/${first.p.protocol}), but the rule says ${protocol}: it allows nothing`,
        where,
      ),
    );
    return;
  }
  findings.push(
    context.finding(
      'NAMED_PORT_UNRESOLVED',
      `${label}: named port "${name}" is declared by none of ${whose} (${listSome(rowsOf(targets).labels)}): it allows nothing`,
      where,
    ),
  );
}

/** A UDP service's port allowed over TCP, with no UDP entry for it in the same rule. */
function udpOverTcp(
  context: LintContext,
  findings: Finding[],
  label: string,
  where: FindingLocation,
  port: number,
  protocol: Protocol,
  entries: readonly {
    readonly protocol: Protocol;
    readonly port?: number | string;
    readonly endPort?: number;
  }[],
): void {
  const service = UDP_SERVICES.get(port);
  if (!service || protocol !== 'TCP') return;
  const udp = entries.some(
    (e) =>
      e.protocol === 'UDP' &&
      (e.port === undefined ||
        (typeof e.port === 'number' && port >= e.port && port <= (e.endPort ?? e.port))),
  );
  if (udp) return;
  findings.push(
    context.finding(
      'PORT_PROTOCOL_MISMATCH',
      `${label}: port ${port} (${service}, a UDP service) is allowed over TCP only`,
      where,
    ),
  );
}
