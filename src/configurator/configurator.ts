/**
 * From a pod's policies to its rule tables: one expansion over peers × ports (the seed's
 * GenerateRules; see the state's policy templates), permit rules followed by one deny-the-rest.
 * Named ports resolve against the destination: on ingress that is the pod itself; on egress each
 * destination group is split into partitions by the number the name resolves to.
 *
 * Tables are memoized by what they depend on — the selecting policy objects (a key shared by
 * every pod with the same label set), the pod's named ports (ingress) and the groups' port
 * numbers (egress) — so pods with equal inputs share one computation and one table object.
 */
import {
  ANY_NET,
  prepareRule,
  type NetRef,
  type PreparedRule,
  type Rule,
  type RuleTable,
} from '../model/rule.ts';
import type { Endpoint, NetworkPolicy, PolicyPort } from '../model/types.ts';
import { policyTemplates, type ClusterState, type RuleTemplate } from '../state/index.ts';
import { canonicalTableOf } from './table-id.ts';
import { PARTITION_SEPARATOR, type PodTables } from './types.ts';
import { TierTables } from './tier-tables.ts';

type Direction = 'ingress' | 'egress';

/** Memoized tables kept before the memo is dropped and rebuilt (bounds memory under churn). */
const MAX_MEMO_ENTRIES = 250_000;

const DENY_REST = prepareRule({ action: 'deny', protocol: 'ANY', src: ANY_NET, dst: ANY_NET });

export class Configurator {
  private readonly memo = {
    ingress: new Map<string, Map<string, RuleTable>>(),
    egress: new Map<string, Map<string, RuleTable>>(),
  };
  private memoSize = 0;
  private readonly interned = new Map<string, RuleTable>();
  /** Prepared rules of each template, by resolved port number (-1: not a named port). */
  private readonly preparedRules = new WeakMap<RuleTemplate, Map<number, PreparedRule>>();

  private readonly tierTables: TierTables;

  constructor(private readonly state: ClusterState) {
    this.tierTables = new TierTables(state);
  }

  /** The pod's tables; a pod without an address gets none (it is postponed). */
  compile(pod: Endpoint): PodTables {
    if (pod.ips.length === 0 || pod.hostNetwork) return {};
    const selection = this.state.selection(pod);
    const portsKey = pod.ports.map((p) => `${p.name ?? ''}/${p.protocol}/${p.port}`).join(',');
    const ingress = this.table(pod, 'ingress', selection.ingress, selection.ingressKey, portsKey);
    const egress = this.table(
      pod,
      'egress',
      selection.egress,
      selection.egressKey,
      String(this.state.partitionVersion),
    );
    const ingressTiers = this.tierTables.tiers(pod, 'ingress');
    const egressTiers = this.tierTables.tiers(pod, 'egress');
    return {
      ...(ingress ? { ingress } : {}),
      ...(egress ? { egress } : {}),
      ...(ingressTiers ? { ingressTiers } : {}),
      ...(egressTiers ? { egressTiers } : {}),
    };
  }

  /** Forgets memoized tables (after a resync, to bound memory). */
  clearMemo(): void {
    this.memo.ingress.clear();
    this.memo.egress.clear();
    this.interned.clear();
    this.tierTables.clear();
    this.memoSize = 0;
  }

  private table(
    pod: Endpoint,
    direction: Direction,
    policies: readonly NetworkPolicy[],
    policiesKey: string,
    variant: string,
  ): RuleTable | undefined {
    if (policies.length === 0) return undefined;
    // The selection key string is shared by every pod of a label set: used as is (never
    // concatenated), its hash is computed once however long it is.
    const memo = this.memo[direction];
    const cached = memo.get(policiesKey)?.get(variant);
    if (cached) return cached;
    const prepared: PreparedRule[] = [DENY_REST];
    for (const policy of policies) {
      for (const template of policyTemplates(policy)[direction])
        this.addRules(pod, direction, template, prepared);
    }
    if (this.memoSize >= MAX_MEMO_ENTRIES) this.clearMemo();
    // Different inputs can still give equal rules: one object per distinct table.
    const computed = canonicalTableOf(prepared);
    const table = this.interned.get(computed.id) ?? computed;
    this.interned.set(table.id, table);
    let variants = memo.get(policiesKey);
    if (!variants) memo.set(policiesKey, (variants = new Map<string, RuleTable>()));
    variants.set(variant, table);
    this.memoSize++;
    return table;
  }

  /** Appends one template's rules, prepared once per template and resolved port number. */
  private addRules(pod: Endpoint, direction: Direction, template: RuleTemplate, out: PreparedRule[]): void {
    const { net, port } = template;
    if (typeof port?.port !== 'string') {
      out.push(this.prepared(template, -1, direction, net));
      return;
    }
    const name = port.port;
    if (direction === 'ingress') {
      const resolved = pod.ports.find((p) => p.name === name && p.protocol === port.protocol)?.port;
      if (resolved !== undefined) out.push(this.prepared(template, resolved, direction, net));
      return;
    }
    // Egress named port: one rule per partition of the destination group.
    if (net.kind !== 'group') return;
    for (const n of this.state.group(net.group)?.ports.keys() ?? []) {
      out.push(
        this.prepared(template, n, direction, {
          kind: 'group',
          group: `${net.group}${PARTITION_SEPARATOR}${n}`,
        }),
      );
    }
  }

  /** The template's rule for a resolved port number (-1: the template's own port entry). */
  private prepared(template: RuleTemplate, port: number, direction: Direction, net: NetRef): PreparedRule {
    let byPort = this.preparedRules.get(template);
    if (!byPort) this.preparedRules.set(template, (byPort = new Map<number, PreparedRule>()));
    let rule = byPort.get(port);
    if (!rule) {
      rule = prepareRule(permit(direction, net, template.port, port >= 0 ? [port, port] : undefined));
      byPort.set(port, rule);
    }
    return rule;
  }
}

function permit(
  direction: Direction,
  net: NetRef,
  port: PolicyPort | undefined,
  resolved?: readonly [number, number],
): Rule {
  const range =
    resolved ??
    (typeof port?.port === 'number' ? ([port.port, port.endPort ?? port.port] as const) : undefined);
  return {
    action: 'permit',
    protocol: port?.protocol ?? 'ANY',
    src: direction === 'ingress' ? net : ANY_NET,
    dst: direction === 'egress' ? net : ANY_NET,
    ...(range ? { dstPorts: range } : {}),
  };
}
