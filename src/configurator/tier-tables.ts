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
import {
  clusterRuleNets,
  namedProtocols,
  portNumbers,
  peerNetGroup,
  type CompilingStore,
  type PeerNet,
  type PlanSelection,
  type TierSelection,
} from '../state/index.ts';
import { ADMIN_TIER, BASELINE_TIER, DEFAULT_TIER, type TierSpec } from '../model/cluster-policy.ts';
import type { RuleTable } from '../model/rule.ts';
import { PARTITION_SEPARATOR, portsKey, type TieredTable } from './types.ts';
import { tierLists, withNodePermits } from './tier-lists.ts';
import {
  canonicalOrder,
  dependenciesOf,
  netRef,
  nodesNetRefs,
  pureNetRefs,
  pureNamedNetsOf,
  pureRuleRules,
  type Dependencies,
} from './expansion-memos.ts';
import type { PermitSide } from './permit-side.ts';
import { policyFacts, type RuleFacts } from '../model/cluster-policy-facts.ts';

type Direction = 'ingress' | 'egress';
/** Memoized lists kept before the memo is dropped: above one per pod side at 100,000 pods. */
const MAX_TIER_MEMO = 250_000;
const ACTION: Record<ClusterRule['action'], RuleAction> = { allow: 'permit', deny: 'deny', pass: 'pass' };

/**
 * The general path's memo: per list of selections (by key), per NetworkPolicy table, by variant,
 * the lists — and, where NetworkPolicy's tier permits the pod's own node, per node.
 */
interface GeneralMemo {
  readonly dependencies: Dependencies;
  readonly byTable: WeakMap<RuleTable | typeof NO_TABLE, Map<string, Built>>;
}
interface Built {
  readonly table: TieredTable;
  readonly nodeAt?: number;
  byNode?: Map<string, TieredTable>;
}
/** The tiers a side visits, as text (part of its lists' identity). */
const planTexts = new WeakMap<readonly TierSpec[], string>();
function planText(plan: readonly TierSpec[]): string {
  let text = planTexts.get(plan);
  if (text === undefined)
    planTexts.set(plan, (text = plan.map((t) => `${t.name}:${t.order}:${t.defaultAction}`).join(',')));
  return text;
}
/** No tier applies (memoized too). */
const NOTHING: Built = { table: { id: '', admin: [], baseline: [] } };
const NO_TABLE = { rules: [], id: '' } as const satisfies RuleTable;

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
  private readonly general = {
    ingress: new Map<string, GeneralMemo>(),
    egress: new Map<string, GeneralMemo>(),
  };
  /** The general path's rules per policy rule and variant (`sharedRuleRules`). */
  private rulesMemo = new WeakMap<ClusterRule, Map<string | number, Rule[]>>();
  /** Lists memoized across all pairs (bounds the memo). */
  private memoSize = 0;

  constructor(
    private readonly state: CompilingStore,
    /** NetworkPolicy lets an isolated pod talk with its node (when its tier is compiled into `admin`). */
    private readonly allowNodeLocal = true,
  ) {}

  clear(): void {
    this.memo.ingress.clear();
    this.memo.egress.clear();
    this.general.ingress.clear();
    this.general.egress.clear();
    this.rulesMemo = new WeakMap();
    this.memoSize = 0;
  }

  /**
   * The pod's tiers for a direction, or undefined when no cluster policy selects it there.
   * `networkPolicy` is the pod's NetworkPolicy table for the direction (compiled into the lists
   * when Calico's or Cilium's policies share its tier: see `inlinesNetworkPolicy`). `planned`,
   * the side's selections when the caller has them (found once per namespace and label set).
   */
  tiers(
    pod: Endpoint,
    direction: Direction,
    networkPolicy?: RuleTable,
    planned: PlanSelection = this.state.planSelection(pod, direction),
  ): TieredTable | undefined {
    const built = builtInPlaces(planned.plan);
    if (!built || (planned.selections[built.default]?.policies.length ?? 0) > 0)
      return this.generalTiers(pod, direction, networkPolicy, planned);
    const admin = planned.selections[built.admin] as TierSelection;
    const baseline = planned.selections[built.baseline] as TierSelection;
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

  /** What a permit side's rules depend on besides its policies, as text (empty: nothing). */
  permitVariant(pod: Endpoint, direction: Direction, side: PermitSide): string {
    return this.variant(pod, direction, side.dependencies);
  }

  /** Every tier of the plan (Calico's, Cilium's policies in NetworkPolicy's tier): tier-lists.ts. */
  private generalTiers(
    pod: Endpoint,
    direction: Direction,
    networkPolicy: RuleTable | undefined,
    planned: PlanSelection,
  ) {
    const { plan, selections, key } = planned;
    if (selections.every((s) => s.policies.length === 0)) return undefined;
    if (this.memoSize >= MAX_TIER_MEMO) this.clear();
    let memo = this.general[direction].get(key);
    if (!memo) {
      const policies = selections.flatMap((s) => s.policies);
      memo = {
        dependencies: dependenciesOf(policies, direction, true),
        byTable: new WeakMap(),
      };
      this.general[direction].set(key, memo);
    }
    const table = networkPolicy ?? NO_TABLE;
    let byVariant = memo.byTable.get(table);
    if (!byVariant) memo.byTable.set(table, (byVariant = new Map<string, Built>()));
    const variant = this.variant(pod, direction, memo.dependencies);
    let built = byVariant.get(variant);
    if (!built) {
      built =
        tierLists(
          this.state,
          pod,
          direction,
          {
            plan,
            selections,
            networkPolicy,
            allowNodeLocal: this.allowNodeLocal,
            // The plan too: a Tier's order or default action changes the lists, not the selections.
            // The direction too: a side's two lists can read alike in every other input (a rule
            // names its peer as source on ingress, as destination on egress).
            identity: `${direction}\u0002${planText(plan)}\u0002${key}\u0002${variant}${
              memo.dependencies.relative
                ? JSON.stringify(this.state.namespaceLabels(pod.namespace) ?? {})
                : ''
            }`,
          },
          (p, policy, d) => policy[d].flatMap((rule, at) => this.sharedRuleRules(p, policy, rule, at, d)),
          (p, policy, rule, at, d) => this.sharedRuleRules(p, policy, rule, at, d),
        ) ?? NOTHING;
      byVariant.set(variant, built);
      this.memoSize++;
    }
    if (built === NOTHING) return undefined;
    if (built.nodeAt === undefined) return built.table;
    // The pod's own node, where NetworkPolicy's tier permits it: once per list and node.
    const byNode = (built.byNode ??= new Map<string, TieredTable>());
    const nodeKey = `${this.state.nodesVersion}|${pod.node ?? ''}`;
    let lists = byNode.get(nodeKey);
    if (!lists)
      byNode.set(nodeKey, (lists = withNodePermits(this.state, pod, direction, built.table, built.nodeAt)));
    return lists;
  }

  /** What else the lists depend on: the namespace (relative peers), ports, groups' numbers, nodes. */
  private variant(pod: Endpoint, direction: Direction, dependencies: Dependencies): string {
    const { relative, named, nodes, subjectNode } = dependencies;
    if (!relative && !nodes && !subjectNode) {
      // Nothing, or named ports alone (the usual kind): no key built from parts.
      if (!named) return '';
      return direction === 'ingress' ? portsKey(pod) : String(this.state.partitionVersion);
    }
    return `${relative ? pod.namespace : ''}|${named && direction === 'ingress' ? portsKey(pod) : ''}|${
      named && direction === 'egress' ? this.state.partitionVersion : ''
    }|${nodes || subjectNode ? this.state.nodesVersion : ''}|${subjectNode ? (pod.node ?? '') : ''}`;
  }

  /** One rule's 6-tuples in their canonical order (see `sharedRuleTuples`), for the lists. */
  private sharedRuleRules(
    pod: Endpoint,
    policy: ClusterPolicy,
    rule: ClusterRule,
    at: number,
    direction: Direction,
  ): Rule[] {
    return canonicalOrder(this.sharedRuleTuples(pod, policy, rule, at, direction));
  }

  /**
   * One rule's 6-tuples, shared by the pods that expand it alike: the same namespace (relative
   * peers), named ports (the pod's own for ingress, the groups' numbers for egress), nodes (nodes
   * and outside peers) and, for Cilium's host and remote-node, node. Pods selected by different
   * policies share their rules this way where lists cannot be.
   */
  private sharedRuleTuples(
    pod: Endpoint,
    policy: ClusterPolicy,
    rule: ClusterRule,
    at: number,
    direction: Direction,
  ): Rule[] {
    const facts = policyFacts(policy).rules[direction][at] as RuleFacts;
    const variant = this.ruleVariant(pod, facts, direction);
    if (variant === undefined)
      return pureRuleRules(facts, direction, () => this.ruleRules(pod, policy, rule, facts, direction));
    let byVariant = this.rulesMemo.get(rule);
    if (!byVariant) this.rulesMemo.set(rule, (byVariant = new Map<string | number, Rule[]>()));
    let rules = byVariant.get(variant);
    if (!rules) {
      rules = this.ruleRules(pod, policy, rule, facts, direction);
      byVariant.set(variant, rules);
      this.memoSize++;
    }
    return rules;
  }

  /**
   * A policy's rules in rule order; the 6-tuples of one rule share its precedence and action, so
   * their order is free: canonical (sorted), so equal inputs give equal text whatever order
   * groups and nodes arrived in.
   */
  private policyRules(pod: Endpoint, policy: ClusterPolicy, direction: Direction) {
    const facts = policyFacts(policy).rules[direction];
    return policy[direction].flatMap((rule, at) =>
      this.ruleRules(pod, policy, rule, facts[at] as RuleFacts, direction)
        .map((r) => prepareRule(r))
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
    );
  }

  private ruleRules(
    pod: Endpoint,
    policy: ClusterPolicy,
    rule: ClusterRule,
    facts: RuleFacts,
    direction: Direction,
  ): Rule[] {
    const precedence = rulePrecedenceKey(policy, rule.index);
    if (rule.failClosed) {
      // A peer that cannot be read: Allow matches nothing; Deny and Pass deny everything.
      return rule.action === 'allow'
        ? []
        : [{ action: 'deny', protocol: 'ANY', src: ANY_NET, dst: ANY_NET, precedence }];
    }
    const action = ACTION[rule.action];
    const rules: Rule[] = [];
    this.expandRule(pod, policy, rule, facts, direction, (net, protocol, from, to) => {
      const src = direction === 'ingress' ? net : ANY_NET;
      const dst = direction === 'egress' ? net : ANY_NET;
      // Two literals, not a conditional spread (the runtime's slow copy, for every tuple).
      rules.push(
        from < 0
          ? { action, protocol, src, dst, precedence }
          : { action, protocol, src, dst, dstPorts: [from, to], precedence },
      );
    });
    return rules;
  }

  /**
   * What a rule's expansion for the pod is memoized by (see `sharedRuleTuples`): undefined when it
   * depends on nothing but the rule. A rule that depends on its named ports alone (the usual kind)
   * is keyed by the pod's ports (ingress: a string made once per pod) or the groups' numbers
   * (egress), with nothing built.
   */
  ruleVariant(pod: Endpoint, facts: RuleFacts, direction: Direction): string | number | undefined {
    const { relative, named, nodes, own } = facts;
    if (!relative && !named && !nodes && !own) return undefined;
    if (facts.onlyNamed) return direction === 'ingress' ? portsKey(pod) : this.state.partitionVersion;
    return `${direction}|${relative ? pod.namespace : ''}|${
      named ? (direction === 'ingress' ? portsKey(pod) : this.state.partitionVersion) : ''
    }|${nodes ? this.state.nodesVersion : ''}|${own ? (pod.node ?? '') : ''}`;
  }

  /**
   * Expands one readable rule (not `failClosed`) for the pod into `sink`, one net, protocol and
   * port range at a time (`from` -1: every port): its peers' nets — those that depend on nothing
   * but the rule made once per rule object (`pureNetRefs`, kept with the rule: a configurator of
   * its own, as the matrix's compiled classes make, finds them made, as NetworkPolicy's templates
   * are), those that depend on the nodes alone once per rule and list of nodes (`nodesNetRefs`)
   * — by each port entry, a named one resolved on the pod for ingress and per destination
   * partition for egress.
   */
  expandRule(
    pod: Endpoint,
    policy: ClusterPolicy,
    rule: ClusterRule,
    facts: RuleFacts,
    direction: Direction,
    sink: TupleSink,
  ): void {
    const { relative, pure, own } = facts;
    // The rule's nets for one port entry (a named one: per protocol, pod peers only). Relative
    // peers' groups depend on the subject's namespace: the store holds them once they are used.
    const compute = (named?: { name: string; protocol: Protocol }): PeerNet[] => {
      const labels = this.state.namespaceLabels(pod.namespace) ?? {};
      const nets = clusterRuleNets(rule, facts, labels, this.state.nodes(), named, pod.node);
      if (relative)
        for (const net of nets)
          if (net.kind === 'group') this.state.acquireClusterGroup(policy, net.spec, peerNetGroup(net));
      return nets;
    };
    // The plain nets only when a port entry reads them (an egress named port reads its own).
    let plainNets: NetRef[] | undefined;
    const plain = (): NetRef[] =>
      (plainNets ??= pure
        ? pureNetRefs(facts, compute)
        : relative || own
          ? compute().map(netRef)
          : nodesNetRefs(facts, this.state.nodes(), compute));
    if (!rule.ports) {
      for (const net of plain()) sink(net, 'ANY', -1, -1);
      return;
    }
    for (const port of rule.ports) {
      if (port.type === 'number') {
        const from = port.port ?? -1;
        const to = port.port === undefined ? -1 : (port.endPort ?? port.port);
        for (const net of plain()) sink(net, port.protocol, from, to);
      } else if (direction === 'ingress') {
        for (const target of namedPortTargets(pod.ports, port.name, port.protocol))
          for (const net of plain()) sink(net, target.protocol, target.port, target.port);
      } else {
        // Egress named port: per protocol, the destinations' numbers (group partitions).
        for (const protocol of namedProtocols(port)) {
          const named = { name: port.name, protocol };
          for (const net of pure ? pureNamedNetsOf(facts, named, compute) : compute(named)) {
            if (net.kind !== 'group') continue;
            const group = peerNetGroup(net);
            for (const number of portNumbers(this.state.group(group)))
              sink(
                { kind: 'group', group: `${group}${PARTITION_SEPARATOR}${number}` },
                protocol,
                number,
                number,
              );
          }
        }
      }
    }
  }
}

/** Where the built-in tiers are in a plan of only those three; undefined for any other plan. */
const builtInPlans = new WeakMap<readonly TierSpec[], BuiltInPlaces | null>();
interface BuiltInPlaces {
  readonly admin: number;
  readonly default: number;
  readonly baseline: number;
}
function builtInPlaces(plan: readonly TierSpec[]): BuiltInPlaces | undefined {
  let places = builtInPlans.get(plan);
  if (places === undefined) {
    const at = (name: string) => plan.findIndex((t) => t.name === name);
    places =
      plan.length === 3 && at(ADMIN_TIER) >= 0 && at(DEFAULT_TIER) >= 0 && at(BASELINE_TIER) >= 0
        ? { admin: at(ADMIN_TIER), default: at(DEFAULT_TIER), baseline: at(BASELINE_TIER) }
        : null;
    builtInPlans.set(plan, places);
  }
  return places ?? undefined;
}

/** Takes a rule's expansion one net, protocol and port range at a time (`from` -1: every port). */
type TupleSink = (net: NetRef, protocol: Protocol | 'ANY', from: number, to: number) => void;
