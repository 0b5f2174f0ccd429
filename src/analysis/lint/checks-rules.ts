/**
 * Checks on the shape of rules: rules policyTypes makes dead, the namespaceSelector/podSelector
 * AND/OR pitfall, and ipBlocks that reach pods or the whole address space.
 */
import { clusterPolicyLabel } from '../../model/cluster-policy.ts';
import { policyKey } from '../../model/types.ts';
import type { Cidr } from '../../net/ip.ts';
import { ipBlockIntervals, type IpInterval } from '../../net/intervals.ts';
import { describePeer, listMatchesAll } from '../../semantics/index.ts';
import {
  clusterPolicyObject,
  clusterPolicyRules,
  DIRECTIONS,
  networkPolicyRules,
  listSome,
  peersField,
  policyObject,
  type LintCheck,
  type LintContext,
} from './context.ts';
import type { Finding, FindingLocation } from './types.ts';

export const ignoredByPolicyTypes: LintCheck = {
  codes: ['RULES_IGNORED_BY_POLICY_TYPES'],
  run(context) {
    // The v1beta1 proposal ignores egress whatever policyTypes says (LEGACY_EGRESS_IGNORED).
    if (context.semantics !== 'v1') return [];
    const findings: Finding[] = [];
    for (const policy of context.cluster.policies) {
      if (!policy.policyTypesExplicit) continue;
      for (const direction of DIRECTIONS) {
        const affected = direction === 'ingress' ? policy.affectsIngress : policy.affectsEgress;
        const rules = policy[direction];
        if (affected || rules.length === 0) continue;
        const type = direction === 'ingress' ? 'Ingress' : 'Egress';
        findings.push(
          context.finding(
            'RULES_IGNORED_BY_POLICY_TYPES',
            `${policyKey(policy)} has ${rules.length} ${direction} rule${rules.length === 1 ? '' : 's'}, but policyTypes does not list ${type}: ${rules.length === 1 ? 'it is' : 'they are'} ignored`,
            context.where(policyObject(policy), ['spec', direction], policy.location),
          ),
        );
      }
    }
    return findings;
  },
};

export const splitSelectors: LintCheck = {
  codes: ['PEERS_SPLIT_SELECTORS'],
  run(context) {
    const findings: Finding[] = [];
    for (const { policy, direction, rule } of networkPolicyRules(context.cluster)) {
      const peers = rule.peers ?? [];
      const nsOnly = peers.findIndex(
        (p) => p.type === 'selector' && p.namespaceSelector !== undefined && p.podSelector === undefined,
      );
      const podOnly = peers.findIndex(
        (p) => p.type === 'selector' && p.namespaceSelector === undefined && p.podSelector !== undefined,
      );
      if (nsOnly < 0 || podOnly < 0) continue;
      const ns = peers[nsOnly];
      const pod = peers[podOnly];
      if (ns?.type !== 'selector' || pod?.type !== 'selector') continue;
      const field = peersField(direction);
      findings.push(
        context.finding(
          'PEERS_SPLIT_SELECTORS',
          `${policyKey(policy)} ${direction}[${rule.index}] has two peers — ${field}[${nsOnly}] ${describePeer(ns, policy.namespace)}, ${field}[${podOnly}] ${describePeer(pod, policy.namespace)} — and either one matches; one peer with both selectors would match only those pods in those namespaces`,
          context.where(
            policyObject(policy),
            ['spec', direction, rule.index, field, podOnly],
            policy.location,
          ),
          [
            {
              ...context.where(
                policyObject(policy),
                ['spec', direction, rule.index, field, nsOnly],
                policy.location,
              ),
              message: 'the namespaceSelector peer',
            },
          ],
        ),
      );
    }
    return findings;
  },
};

/** IPv4 blocks shorter than /8 and IPv6 blocks shorter than /32 hold more than 2^24 (2^96) addresses. */
const BROAD_PREFIX = { 4: 8, 6: 32 } as const;

export const ipBlocks: LintCheck = {
  codes: ['IPBLOCK_MATCHES_PODS', 'IPBLOCK_TOO_BROAD'],
  run(context) {
    const findings: Finding[] = [];
    const check = (
      cidr: Cidr,
      except: readonly Cidr[],
      allPorts: boolean,
      rule: string,
      where: FindingLocation,
      plugins = true,
    ): void => {
      const pods = plugins ? podsInside(context, ipBlockIntervals(cidr, except)) : { count: 0, examples: [] };
      if (pods.count > 0) {
        findings.push(
          context.finding(
            'IPBLOCK_MATCHES_PODS',
            `${rule}: ${cidr.text}${except.length ? ` except ${except.map((c) => c.text).join(', ')}` : ''} holds the addresses of ${pods.count} pod${pods.count === 1 ? '' : 's'} (${listSome(pods.examples, 3, pods.count)}); some network plugins match pod traffic against it, some do not`,
            where,
          ),
        );
      }
      if (allPorts && cidr.prefix < BROAD_PREFIX[cidr.family]) {
        findings.push(
          context.finding(
            'IPBLOCK_TOO_BROAD',
            `${rule}: ${cidr.text}${cidr.prefix === 0 ? ' (every address)' : ''} on every port and protocol`,
            where,
          ),
        );
      }
    };
    for (const { policy, direction, rule } of networkPolicyRules(context.cluster)) {
      const allPorts = listMatchesAll(rule.ports, context.semantics);
      (rule.peers ?? []).forEach((peer, p) => {
        if (peer.type !== 'ipBlock') return;
        const path = ['spec', direction, rule.index, peersField(direction), p, 'ipBlock', 'cidr'];
        check(
          peer.cidr,
          peer.except,
          allPorts,
          `${policyKey(policy)} ${direction}[${rule.index}]`,
          context.where(policyObject(policy), path, policy.location),
        );
      });
    }
    for (const { policy, direction, rule } of clusterPolicyRules(context.cluster)) {
      if (rule.action !== 'allow') continue;
      // Calico's nets match pods' addresses by definition: no plugin differs about them.
      const calico = policy.kind.startsWith('Calico');
      rule.peers.forEach((peer, p) => {
        // A Calico rule that names no addresses matches every one: no block was written.
        if (peer.type !== 'networks' || (calico && peer.cidrs.every((c) => c.prefix === 0))) return;
        const path = ['spec', direction, rule.index, peersField(direction), p, 'networks'];
        for (const cidr of peer.cidrs)
          check(
            cidr,
            [],
            rule.ports === undefined,
            `${clusterPolicyLabel(policy)} ${direction}[${rule.index}]`,
            context.where(clusterPolicyObject(policy), path, policy.location),
            !calico,
          );
      });
    }
    return findings;
  },
};

/** Pods (not host-networked: those have their node's address) with an address in the set. */
function podsInside(
  context: LintContext,
  intervals: readonly IpInterval[],
): { count: number; examples: string[] } {
  let count = 0;
  const examples: string[] = [];
  for (const interval of intervals) {
    count += context.endpoints.addressCount(interval, true);
    if (examples.length < 3)
      for (const { endpoint } of context.endpoints.endpointsInInterval(interval, {
        podsOnly: true,
        limit: 3,
      }))
        if (examples.length < 3) examples.push(endpoint.id);
  }
  return { count, examples };
}
