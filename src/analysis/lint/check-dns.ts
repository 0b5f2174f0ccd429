/**
 * Egress default-deny without DNS: the most common way a first egress policy breaks an
 * application. When the input has the DNS pods (CoreDNS, kube-dns), the answer is the reference
 * evaluator's: can the endpoint reach one of them on UDP/53? Without them, whether any egress
 * rule of the isolating policies allows UDP/53 to anything.
 */
import { policyKey, type Endpoint, type NetworkPolicy, type PolicyRule } from '../../model/types.ts';
import { allowedPorts, listMatchesAll, portSetHas } from '../../semantics/index.ts';
import { listSome, policyObject, rowsOf, type LintCheck, type LintContext } from './context.ts';
import type { Finding } from './types.ts';

const DNS_APPS = new Set(['kube-dns', 'coredns']);

/** Endpoints that look like the cluster's DNS servers. */
function dnsServers(endpoints: readonly Endpoint[]): Endpoint[] {
  return endpoints.filter(
    (e) =>
      DNS_APPS.has(e.labels['k8s-app'] ?? '') ||
      DNS_APPS.has(e.labels['app.kubernetes.io/name'] ?? '') ||
      /^(coredns|kube-dns)(-|$)/.test(e.name),
  );
}

export const egressWithoutDns: LintCheck = {
  codes: ['EGRESS_WITHOUT_DNS'],
  run(context) {
    // The v1beta1 proposal has no egress policy.
    if (context.semantics !== 'v1') return [];
    const servers = dnsServers(context.cluster.endpoints);
    const groups = new Map<string, { policies: readonly NetworkPolicy[]; members: Endpoint[] }>();
    for (const endpoint of context.cluster.endpoints) {
      if (endpoint.hostNetwork || servers.includes(endpoint)) continue;
      const policies = context.policiesFor(endpoint, 'egress');
      if (policies.length === 0) continue;
      const key = policies.map(policyKey).join(',');
      const group = groups.get(key);
      if (group) group.members.push(endpoint);
      else groups.set(key, { policies, members: [endpoint] });
    }
    const findings: Finding[] = [];
    for (const { policies, members } of groups.values()) {
      const stranded = servers.length
        ? members.filter((e) => !reachesDns(context, e, servers))
        : rulesAllowDns(context, policies)
          ? []
          : members;
      if (stranded.length === 0) continue;
      // Point at the policy that isolates without allowing anything, if there is one.
      const at = policies.find((p) => p.egress.length === 0) ?? policies[0];
      if (!at) continue;
      const why = servers.length
        ? `and can reach no DNS server (${listSome(rowsOf(servers).labels)}) on UDP/53`
        : 'and no egress rule of theirs allows UDP/53';
      findings.push(
        context.finding(
          'EGRESS_WITHOUT_DNS',
          `${listSome(rowsOf(stranded).labels)} ${rowsOf(stranded).count === 1 ? 'is' : 'are'} isolated for egress by ${listSome(policies.map(policyKey))} ${why}`,
          context.where(policyObject(at), ['spec'], at.location),
        ),
      );
    }
    return findings;
  },
};

function reachesDns(context: LintContext, endpoint: Endpoint, servers: readonly Endpoint[]): boolean {
  return servers.some((server) =>
    portSetHas(
      allowedPorts(
        context.evaluation,
        { kind: 'endpoint', endpoint },
        { kind: 'endpoint', endpoint: server },
        { semantics: context.semantics },
      ),
      'UDP',
      53,
    ),
  );
}

/** Whether some egress rule allows UDP/53 to some peer (named ports: as any endpoint declares them). */
function rulesAllowDns(context: LintContext, policies: readonly NetworkPolicy[]): boolean {
  return policies.some((policy) => policy.egress.some((rule) => ruleAllowsDns(context, rule)));
}

function ruleAllowsDns(context: LintContext, rule: PolicyRule): boolean {
  // The DNS pods are not in the input (else the connection is evaluated): any peer may be them.
  const anyPeer = listMatchesAll(rule.peers, context.semantics) || (rule.peers ?? []).length > 0;
  if (!anyPeer) return false;
  if (listMatchesAll(rule.ports, context.semantics)) return true;
  return (rule.ports ?? []).some((port) => {
    if (port.protocol !== 'UDP') return false;
    if (port.port === undefined) return true;
    if (typeof port.port === 'number') return 53 >= port.port && 53 <= (port.endPort ?? port.port);
    const name = port.port;
    // Nothing to resolve the name against: trust it.
    if (!context.hasEndpoints) return true;
    return context.cluster.endpoints.some((e) =>
      e.ports.some((p) => p.name === name && p.protocol === 'UDP' && p.port === 53),
    );
  });
}
