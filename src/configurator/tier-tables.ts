/**
 * Ordered cluster policy into rule lists: for one pod and direction, the Admin and Baseline
 * tiers' rules in precedence order, each a 6-tuple carrying its dense precedence key (so a new
 * policy slots in without renumbering anything) and its action. Peers become nets exactly as the
 * store holds them (state/cluster-policy-groups.ts): address groups, CIDRs, node addresses. A
 * named port resolves on the pod itself for ingress, and per destination (group partitions by
 * number, on each protocol) for egress. Lists are memoized by what they depend on.
 */
import { hash } from 'node:crypto';
import { ANY_NET, prepareRule, ruleText, type NetRef, type Rule, type RuleAction } from '../model/rule.ts';
import { rulePrecedenceKey } from '../model/precedence.ts';
import { namedPortTargets } from '../model/cluster-policy.ts';
import type { ClusterPolicy, ClusterRule, Endpoint, Protocol } from '../model/types.ts';
import { PROTOCOLS } from '../model/types.ts';
import {
  clusterRuleNets,
  groupKey,
  hasNodesPeers,
  hasRelativePeers,
  isRelativePeer,
  type CompilingStore,
  type PeerNet,
  type TierSelection,
} from '../state/index.ts';
import { PARTITION_SEPARATOR, portsKey, type TieredTable } from './types.ts';

type Direction = 'ingress' | 'egress';
/** Memoized lists kept before the memo is dropped: above one per pod side at 100,000 pods. */
const MAX_TIER_MEMO = 250_000;
const ACTION: Record<ClusterRule['action'], RuleAction> = { allow: 'permit', deny: 'deny', pass: 'pass' };

/** What a selection's lists depend on besides the policies themselves (see `variant`). */
interface Dependencies {
  readonly relative: boolean;
  readonly named: boolean;
  readonly nodes: boolean;
}

/**
 * Per pair of tier selections (objects the store interns: one per distinct list of policies):
 * what the pair's lists depend on, and the lists by variant. Pods of 25,000 namespaces fall into
 * a few hundred pairs; finding a pod's pair is two Map probes by object, with no key built.
 */
interface PairMemo {
  readonly dependencies: Dependencies;
  readonly byVariant: Map<string, TieredTable>;
}

export class TierTables {
  private readonly memo = {
    ingress: new Map<TierSelection, Map<TierSelection, PairMemo>>(),
    egress: new Map<TierSelection, Map<TierSelection, PairMemo>>(),
  };
  /** Lists memoized across all pairs (bounds the memo). */
  private memoSize = 0;

  constructor(private readonly state: CompilingStore) {}

  clear(): void {
    this.memo.ingress.clear();
    this.memo.egress.clear();
    this.memoSize = 0;
  }

  /** The pod's tiers for a direction, or undefined when no cluster policy selects it there. */
  tiers(pod: Endpoint, direction: Direction): TieredTable | undefined {
    const admin = this.state.tierSelection(pod, 'Admin', direction);
    const baseline = this.state.tierSelection(pod, 'Baseline', direction);
    if (admin.policies.length === 0 && baseline.policies.length === 0) return undefined;
    // Bounded like the NetworkPolicy memo: churn in cluster policy must not grow it forever.
    if (this.memoSize >= MAX_TIER_MEMO) this.clear();
    let byBaseline = this.memo[direction].get(admin);
    if (!byBaseline) this.memo[direction].set(admin, (byBaseline = new Map<TierSelection, PairMemo>()));
    let pair = byBaseline.get(baseline);
    if (!pair) {
      pair = {
        dependencies: dependenciesOf([...admin.policies, ...baseline.policies], direction),
        byVariant: new Map(),
      };
      byBaseline.set(baseline, pair);
    }
    const variant = this.variant(pod, direction, pair.dependencies);
    const cached = pair.byVariant.get(variant);
    if (cached) return cached;
    const adminRules = admin.policies.flatMap((p) => this.policyRules(pod, p, direction));
    const baselineRules = baseline.policies.flatMap((p) => this.policyRules(pod, p, direction));
    const text = [
      ...adminRules.map((r) => ruleText(r.rule)),
      '--',
      ...baselineRules.map((r) => ruleText(r.rule)),
    ].join('\n');
    const table: TieredTable = {
      id: hash('sha256', text).slice(0, 16),
      admin: adminRules.map((r) => r.rule),
      baseline: baselineRules.map((r) => r.rule),
    };
    pair.byVariant.set(variant, table);
    this.memoSize++;
    return table;
  }

  /** What else the lists depend on: the namespace (relative peers), ports, groups' numbers, nodes. */
  private variant(pod: Endpoint, direction: Direction, dependencies: Dependencies): string {
    const { relative, named, nodes } = dependencies;
    if (!relative && !named && !nodes) return '';
    return `${relative ? pod.namespace : ''}|${named && direction === 'ingress' ? portsKey(pod) : ''}|${
      named && direction === 'egress' ? this.state.partitionVersion : ''
    }|${nodes ? this.state.nodesVersion : ''}`;
  }

  /**
   * A policy's rules in rule order; the 6-tuples of one rule share its precedence and action, so
   * their order is free: canonical (sorted), so equal inputs give equal text whatever order
   * groups and nodes arrived in.
   */
  private policyRules(pod: Endpoint, policy: ClusterPolicy, direction: Direction) {
    return policy[direction].flatMap((rule) =>
      this.ruleRules(pod, policy, rule, direction)
        .map((r) => prepareRule(r))
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
    );
  }

  private ruleRules(pod: Endpoint, policy: ClusterPolicy, rule: ClusterRule, direction: Direction): Rule[] {
    const precedence = rulePrecedenceKey(policy, rule.index);
    if (rule.failClosed) {
      // A peer that cannot be read: Allow matches nothing; Deny and Pass deny everything.
      return rule.action === 'allow'
        ? []
        : [{ action: 'deny', protocol: 'ANY', src: ANY_NET, dst: ANY_NET, precedence }];
    }
    const labels = this.state.namespaceLabels(pod.namespace) ?? {};
    const relative = rule.peers.some(isRelativePeer);
    // The rule's nets for one port entry (a named one: per protocol, pod peers only). Relative
    // peers' groups depend on the subject's namespace: the store holds them once they are used.
    const netsFor = (named?: { name: string; protocol: Protocol }): PeerNet[] => {
      const nets = clusterRuleNets(rule, labels, this.state.nodes(), named);
      if (relative)
        for (const net of nets) if (net.kind === 'group') this.state.acquireClusterGroup(policy, net.spec);
      return nets;
    };
    const make = (net: NetRef, protocol: Protocol | 'ANY', ports?: readonly [number, number]): Rule => ({
      action: ACTION[rule.action],
      protocol,
      src: direction === 'ingress' ? net : ANY_NET,
      dst: direction === 'egress' ? net : ANY_NET,
      ...(ports ? { dstPorts: ports } : {}),
      precedence,
    });
    const plain = netsFor().map(netRef);
    if (!rule.ports) return plain.map((net) => make(net, 'ANY'));
    const rules: Rule[] = [];
    for (const port of rule.ports) {
      if (port.type === 'number') {
        const range = port.port === undefined ? undefined : ([port.port, port.endPort ?? port.port] as const);
        for (const net of plain) rules.push(make(net, port.protocol, range));
      } else if (direction === 'ingress') {
        for (const own of namedPortTargets(pod.ports, port.name))
          for (const net of plain) rules.push(make(net, own.protocol, [own.port, own.port]));
      } else {
        // Egress named port: per protocol, the destinations' numbers (group partitions).
        for (const protocol of PROTOCOLS)
          for (const net of netsFor({ name: port.name, protocol })) {
            if (net.kind !== 'group') continue;
            const group = groupKey(net.spec);
            for (const number of this.state.group(group)?.ports.keys() ?? [])
              rules.push(
                make({ kind: 'group', group: `${group}${PARTITION_SEPARATOR}${number}` }, protocol, [
                  number,
                  number,
                ]),
              );
          }
      }
    }
    return rules;
  }
}

function dependenciesOf(policies: readonly ClusterPolicy[], direction: Direction): Dependencies {
  return {
    relative: policies.some(hasRelativePeers),
    named: policies.some((p) => p[direction].some((r) => r.ports?.some((x) => x.type === 'named'))),
    nodes: policies.some(hasNodesPeers),
  };
}

function netRef(net: PeerNet): NetRef {
  if (net.kind === 'group') return { kind: 'group', group: groupKey(net.spec) };
  return net.kind === 'cidr' ? { kind: 'cidr', cidr: net.cidr } : ANY_NET;
}
