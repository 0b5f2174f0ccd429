/**
 * The Neutron renderer (seed: Kuryr). One security group per policy, named `np-<ns>-<name>`, with
 * a rule per peer × port of its active directions (ipBlock except split into covering prefixes;
 * pod and namespace selectors as `remote_group_id` of a peer group whose member ports are the
 * selected pods; egress named ports resolved per destination, one peer group per number). An
 * ingress named port resolves on the policy's own pods, which may disagree: its rules go into a
 * group per resolved number (`np-<ns>-<name>-<port>-<n>`) bound only to the pods that resolve
 * the name to that number, so no pod opens a port it does not name. Security groups only allow:
 * a pod no policy isolates in a direction gets the allow-all group of that direction (the seed's
 * default group); a policy with no rules is an empty group (deny all).
 */
import { hash } from 'node:crypto';
import { formatIp, hostCidr } from '../../net/ip.ts';
import type { Endpoint, NetworkPolicy, PolicyPort } from '../../model/types.ts';
import { policyKey } from '../../model/types.ts';
import { PARTITION_SEPARATOR, referenceMembers } from '../../configurator/index.ts';
import { policyTemplates, portNumbers, type ReadonlyStore, type RuleTemplate } from '../../state/index.ts';
import {
  ALLOW_ALL_EGRESS,
  ALLOW_ALL_INGRESS,
  type NeutronRendering,
  type PortBinding,
  type SecurityGroup,
  type SecurityGroupRule,
} from './model.ts';

const ETHERTYPES = ['IPv4', 'IPv6'] as const;
const short = (text: string): string => hash('sha256', text).slice(0, 12);
const peerGroupName = (reference: string): string => `peer-${short(reference)}`;
const policyGroupName = (policy: NetworkPolicy): string => `np-${policy.namespace}-${policy.name}`;
const namedPortGroupName = (policy: NetworkPolicy, port: PolicyPort, number: number): string =>
  `${policyGroupName(policy)}-${String(port.port)}-${port.protocol.toLowerCase()}-${number}`;

/** A policy's identity for resync: a hash of what it says (the seed uses metadata.generation). */
function generationOf(policy: NetworkPolicy): string {
  return short(
    JSON.stringify({ ...policy, location: undefined }, (_key, value: unknown) =>
      typeof value === 'bigint' ? value.toString() : value,
    ),
  );
}

function portFields(
  port: PolicyPort | undefined,
  number?: number,
): Pick<SecurityGroupRule, 'protocol' | 'port_range_min' | 'port_range_max'> {
  if (!port) return { protocol: null };
  const protocol = port.protocol.toLowerCase() as 'tcp' | 'udp' | 'sctp';
  const first = number ?? (typeof port.port === 'number' ? port.port : undefined);
  if (first === undefined) return { protocol };
  return {
    protocol,
    port_range_min: first,
    port_range_max: number === undefined ? (port.endPort ?? first) : first,
  };
}

export function renderNeutron(state: ReadonlyStore): NeutronRendering {
  return new SecurityGroupsBuilder(state).build();
}

type PortFields = ReturnType<typeof portFields>;

/** One rendering's state: the groups so far, each pod's bindings and the peer groups named. */
class SecurityGroupsBuilder {
  private readonly groups = new Map<string, SecurityGroup>();
  private readonly bindings = new Map<string, Set<string>>();
  /** Group references some rule names as `remote_group_id`: each becomes a peer group. */
  private readonly peerGroups = new Set<string>();

  constructor(private readonly state: ReadonlyStore) {}

  build(): NeutronRendering {
    const policies = [...this.state.allPolicies()].sort((a, b) => (policyKey(a) < policyKey(b) ? -1 : 1));
    for (const policy of policies) this.addPolicyGroup(policy);
    const pods = [...this.state.allPods()]
      .filter((p) => !p.hostNetwork && p.ips.length > 0)
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    for (const pod of pods) this.bindPolicies(pod);
    this.addPeerGroups(new Set(pods.map((p) => p.id)));
    this.groups.set(ALLOW_ALL_INGRESS, allowAll(ALLOW_ALL_INGRESS, 'ingress'));
    this.groups.set(ALLOW_ALL_EGRESS, allowAll(ALLOW_ALL_EGRESS, 'egress'));
    const ports: PortBinding[] = pods.map((pod) => ({
      pod: pod.id,
      fixed_ips: pod.ips.map(formatIp),
      security_groups: [...(this.bindings.get(pod.id) ?? [])].sort(),
    }));
    const groups = [...this.groups.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
    return { security_groups: groups, ports };
  }

  /**
   * A policy's group: a rule per peer × port of its templates. Ingress named ports resolve on
   * each pod, so they go into per-number groups when pods are bound (`bindNamedIngress`).
   */
  private addPolicyGroup(policy: NetworkPolicy): void {
    const templates = policyTemplates(policy);
    const rules: SecurityGroupRule[] = [];
    for (const template of templates.ingress)
      if (typeof template.port?.port !== 'string')
        for (const rule of this.remoteRules(template, 'ingress', portFields(template.port))) rules.push(rule);
    for (const template of templates.egress) {
      const named = typeof template.port?.port === 'string';
      const expanded = named
        ? this.namedEgressRules(template)
        : this.remoteRules(template, 'egress', portFields(template.port));
      for (const rule of expanded) rules.push(rule);
    }
    this.groups.set(policyGroupName(policy), {
      name: policyGroupName(policy),
      description: `Palisade: NetworkPolicy ${policyKey(policy)}`,
      policy: policyKey(policy),
      generation: generationOf(policy),
      rules: dedupe(rules),
    });
  }

  /**
   * An egress named port: the peer group is partitioned by the number each destination gives
   * the name, one rule set per number. Only the addresses inside an ipBlock count, while a remote
   * group admits every address of its member ports: ipBlock peers become one prefix rule per
   * address (Kuryr's remote_ip_prefixes), selector peers a remote group of the partition.
   */
  private namedEgressRules(template: RuleTemplate): SecurityGroupRule[] {
    if (template.net.kind !== 'group') return [];
    const key = template.net.group;
    const group = this.state.group(key);
    const rules: SecurityGroupRule[] = [];
    for (const number of portNumbers(group)) {
      const members = [...(group?.members.values() ?? [])].filter((m) => m.port === number);
      const addresses = members.flatMap((m) =>
        m.ips
          .filter((ip) => group?.contains(ip, number))
          .map((ip) => ({ ip, namespace: m.pod.split('/')[0] ?? '' })),
      );
      const prefixes = Object.fromEntries(addresses.map((a) => [formatIp(a.ip), a.namespace]));
      const l4 = portFields(template.port, number);
      if (group?.spec.ipBlock) {
        for (const { ip } of addresses)
          rules.push({
            direction: 'egress',
            ethertype: ip.family === 4 ? 'IPv4' : 'IPv6',
            ...l4,
            remote_ip_prefix: hostCidr(ip).text,
            remote_ip_prefixes: prefixes,
          });
        continue;
      }
      const partition: RuleTemplate = {
        net: { kind: 'group', group: `${key}${PARTITION_SEPARATOR}${number}` },
        port: template.port,
      };
      for (const rule of this.remoteRules(partition, 'egress', l4, { remote_ip_prefixes: prefixes }))
        rules.push(rule);
    }
    return rules;
  }

  /** A template's rules for a direction: any address (per ethertype), a prefix, or a remote group. */
  private remoteRules(
    template: RuleTemplate,
    direction: 'ingress' | 'egress',
    l4: PortFields,
    extra: Partial<SecurityGroupRule> = {},
  ): SecurityGroupRule[] {
    const net = template.net;
    if (net.kind === 'any') return ETHERTYPES.map((ethertype) => ({ direction, ethertype, ...l4, ...extra }));
    if (net.kind === 'cidr')
      return [
        {
          direction,
          ethertype: net.cidr.family === 4 ? 'IPv4' : 'IPv6',
          ...l4,
          remote_ip_prefix: net.cidr.text,
          ...extra,
        },
      ];
    // Cluster policy is refused before rendering (security groups cannot order rules).
    if (net.kind === 'outside') throw new Error('neutron renders no cluster policy');
    this.peerGroups.add(net.group);
    return ETHERTYPES.map((ethertype) => ({
      direction,
      ethertype,
      ...l4,
      remote_group_id: peerGroupName(net.group),
      ...extra,
    }));
  }

  /** A pod's groups: its policies', or the allow-all group of a direction no policy isolates. */
  private bindPolicies(pod: Endpoint): void {
    const selection = this.state.selection(pod);
    if (selection.ingress.length === 0) this.bind(pod.id, ALLOW_ALL_INGRESS);
    if (selection.egress.length === 0) this.bind(pod.id, ALLOW_ALL_EGRESS);
    for (const policy of selection.all) {
      this.bind(pod.id, policyGroupName(policy));
      if (selection.ingress.includes(policy)) this.bindNamedIngress(policy, pod);
    }
  }

  /** Ingress named ports of a policy, resolved on one of its pods: the group of that number. */
  private bindNamedIngress(policy: NetworkPolicy, pod: Endpoint): void {
    const byGroup = new Map<string, { port: PolicyPort; number: number; templates: RuleTemplate[] }>();
    for (const template of policyTemplates(policy).ingress) {
      const port = template.port;
      if (typeof port?.port !== 'string') continue;
      const number = pod.ports.find((p) => p.name === port.port && p.protocol === port.protocol)?.port;
      if (number === undefined) continue;
      const name = namedPortGroupName(policy, port, number);
      const entry = byGroup.get(name);
      if (entry) entry.templates.push(template);
      else byGroup.set(name, { port, number, templates: [template] });
    }
    for (const [name, { port, number, templates }] of byGroup) {
      this.bind(pod.id, name);
      const existing = this.groups.get(name);
      const prefixes = {
        ...(existing?.rules[0]?.remote_ip_prefixes ?? {}),
        ...Object.fromEntries(pod.ips.map((ip) => [formatIp(ip), pod.namespace])),
      };
      const rules = templates.flatMap((t) =>
        this.remoteRules(t, 'ingress', portFields(port, number), { remote_ip_prefixes: prefixes }),
      );
      this.groups.set(name, {
        name,
        description: `Palisade: NetworkPolicy ${policyKey(policy)}, named port ${String(port.port)} = ${number}`,
        policy: policyKey(policy),
        generation: generationOf(policy),
        rules: dedupe(rules),
      });
    }
  }

  /** A group per referenced peer group, bound to its members that have a port. */
  private addPeerGroups(ported: ReadonlySet<string>): void {
    for (const reference of this.peerGroups) {
      const name = peerGroupName(reference);
      this.groups.set(name, { name, description: `Palisade: peers ${reference}`, rules: [] });
      for (const member of referenceMembers(this.state, reference))
        if (ported.has(member.pod)) this.bind(member.pod, name);
    }
  }

  private bind(pod: string, group: string): void {
    let set = this.bindings.get(pod);
    if (!set) this.bindings.set(pod, (set = new Set()));
    set.add(group);
  }
}

function allowAll(name: string, direction: 'ingress' | 'egress'): SecurityGroup {
  return {
    name,
    description: `Palisade: ${direction} of pods no policy isolates for ${direction} (the default group)`,
    rules: ETHERTYPES.map((ethertype) => ({ direction, ethertype, protocol: null })),
  };
}

function dedupe(rules: readonly SecurityGroupRule[]): SecurityGroupRule[] {
  const seen = new Map<string, SecurityGroupRule>();
  for (const rule of rules) {
    const { remote_ip_prefixes: _bookkeeping, ...identity } = rule;
    void _bookkeeping;
    const key = JSON.stringify(identity);
    if (!seen.has(key)) seen.set(key, rule);
  }
  return [...seen.values()];
}
