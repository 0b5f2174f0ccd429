/**
 * From a pod's policies to its rule tables: one expansion over peers × ports (the seed's
 * GenerateRules), permit rules followed by one deny-the-rest. Named ports resolve against the
 * destination: on ingress that is the pod itself; on egress each destination group is split
 * into partitions by the number the name resolves to. Tables are memoized by what they depend
 * on (the policies, the pod's named ports, the partitions' port numbers), so pods with equal
 * inputs share one table object and one computation.
 */
import { ANY_NET, type NetRef, type Rule, type RuleTable } from '../model/rule.ts';
import { policyKey, type Endpoint, type NetworkPolicy, type PolicyPort } from '../model/types.ts';
import { groupKey, ruleNets, rulePorts, type ClusterState, type PeerNet } from '../state/index.ts';
import { canonicalTable } from './table-id.ts';
import { PARTITION_SEPARATOR, type PodTables } from './types.ts';

type Direction = 'ingress' | 'egress';

/** Memoized tables kept before the memo is dropped and rebuilt (bounds memory under churn). */
const MAX_MEMO_ENTRIES = 250_000;

export class Configurator {
  private readonly memo = new Map<string, RuleTable>();
  private readonly interned = new Map<string, RuleTable>();
  private readonly objectIds = new WeakMap<NetworkPolicy, number>();
  private nextObjectId = 0;

  constructor(private readonly state: ClusterState) {}

  /** The pod's tables; a pod without an address gets none (it is postponed). */
  compile(pod: Endpoint): PodTables {
    if (pod.ips.length === 0 || pod.hostNetwork) return {};
    const policies = this.state.policiesSelecting(pod);
    const ingress = this.table(
      pod,
      'ingress',
      policies.filter((p) => p.affectsIngress),
    );
    const egress = this.table(
      pod,
      'egress',
      policies.filter((p) => p.affectsEgress),
    );
    return { ...(ingress ? { ingress } : {}), ...(egress ? { egress } : {}) };
  }

  /** Forgets memoized tables (after a resync, to bound memory). */
  clearMemo(): void {
    this.memo.clear();
    this.interned.clear();
  }

  private table(
    pod: Endpoint,
    direction: Direction,
    policies: readonly NetworkPolicy[],
  ): RuleTable | undefined {
    if (policies.length === 0) return undefined;
    const signature = this.signature(pod, direction, policies);
    const cached = this.memo.get(signature);
    if (cached) return cached;
    const rules: Rule[] = [];
    for (const policy of policies) {
      for (const rule of direction === 'ingress' ? policy.ingress : policy.egress) {
        for (const port of rulePorts(rule)) {
          for (const net of ruleNets(policy, direction, rule, port))
            rules.push(...this.expand(pod, direction, net, port));
        }
      }
    }
    rules.push({ action: 'deny', protocol: 'ANY', src: ANY_NET, dst: ANY_NET });
    if (this.memo.size >= MAX_MEMO_ENTRIES) {
      this.memo.clear();
      this.interned.clear();
    }
    // Different inputs can still give equal rules: one object per distinct table.
    const computed = canonicalTable(rules);
    const table = this.interned.get(computed.id) ?? computed;
    this.interned.set(table.id, table);
    this.memo.set(signature, table);
    return table;
  }

  /** Rules for one net and one port entry. */
  private expand(pod: Endpoint, direction: Direction, net: PeerNet, port: PolicyPort | undefined): Rule[] {
    const permit = (ref: NetRef, protocol: Rule['protocol'], range?: readonly [number, number]): Rule => ({
      action: 'permit',
      protocol,
      src: direction === 'ingress' ? ref : ANY_NET,
      dst: direction === 'egress' ? ref : ANY_NET,
      ...(range ? { dstPorts: range } : {}),
    });
    const ref: NetRef =
      net.kind === 'group'
        ? { kind: 'group', group: groupKey(net.spec) }
        : net.kind === 'cidr'
          ? net
          : ANY_NET;
    if (!port) return [permit(ref, 'ANY')];
    if (port.port === undefined) return [permit(ref, port.protocol)];
    if (typeof port.port === 'number')
      return [permit(ref, port.protocol, [port.port, port.endPort ?? port.port])];
    if (direction === 'ingress') {
      const resolved = pod.ports.find((p) => p.name === port.port && p.protocol === port.protocol)?.port;
      return resolved === undefined ? [] : [permit(ref, port.protocol, [resolved, resolved])];
    }
    // Egress named port: one rule per partition of the destination group.
    if (ref.kind !== 'group') return [];
    const numbers = [...(this.state.group(ref.group)?.ports.keys() ?? [])];
    return numbers.map((n) =>
      permit({ kind: 'group', group: `${ref.group}${PARTITION_SEPARATOR}${n}` }, port.protocol, [n, n]),
    );
  }

  /** Everything a table depends on, as a string. */
  private signature(pod: Endpoint, direction: Direction, policies: readonly NetworkPolicy[]): string {
    const parts = policies.map((p) => `${policyKey(p)}#${this.objectId(p)}`).sort();
    if (direction === 'ingress') {
      parts.push(`ports:${pod.ports.map((p) => `${p.name ?? ''}/${p.protocol}/${p.port}`).join(',')}`);
    } else {
      for (const key of new Set(policies.flatMap((p) => this.state.groupsOfPolicy(policyKey(p))))) {
        const group = this.state.group(key);
        if (group?.spec.namedPort)
          parts.push(`${key}:${[...group.ports.keys()].sort((a, b) => a - b).join(',')}`);
      }
    }
    return `${direction}|${parts.join('|')}`;
  }

  private objectId(policy: NetworkPolicy): number {
    let id = this.objectIds.get(policy);
    if (id === undefined) this.objectIds.set(policy, (id = this.nextObjectId++));
    return id;
  }
}
