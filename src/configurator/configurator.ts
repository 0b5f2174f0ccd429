/**
 * From a pod's policies to its rule tables: one expansion over peers × ports (the seed's
 * GenerateRules; see the state's policy templates), permit rules followed by one deny-the-rest.
 * Named ports resolve against the destination: on ingress that is the pod itself; on egress each
 * destination group is split into partitions by the number the name resolves to.
 *
 * Tables are memoized by what they depend on — the selecting policy objects (a key shared by
 * every pod with the same label set), the pod's named ports (ingress) and the groups' port
 * numbers (egress) — so pods with equal inputs share one computation and one table object.
 *
 * Calico's and Cilium's policies that only allow, in NetworkPolicy's tier, merge into the same
 * tables (permit-side.ts); their blocks outside the cluster, which a table has no form for, go
 * before the table as the side's Admin list of permits. Their other sides compile to ordered
 * lists (tier-tables.ts, tier-lists.ts). Rules and tables are numbered in rule-numbering.ts, and
 * outside blocks' Admin lists made in outside-lists.ts.
 */
import { rulePrecedenceKey } from '../model/precedence.ts';
import { ANY_NET, type NetRef, type Rule, type RuleTable } from '../model/rule.ts';
import type { ClusterPolicy, ClusterRule, Endpoint, NetworkPolicy, PolicyPort } from '../model/types.ts';
import {
  policyTemplates,
  portNumbers,
  type CompilingStore,
  type PlanSelection,
  type RuleTemplate,
} from '../state/index.ts';
import { canonicalRules } from './table-id.ts';
import { DENY_REST, RuleNumbering, type NumberedRule } from './rule-numbering.ts';
import { PARTITION_SEPARATOR, portsKey, type PodTables, type TieredTable } from './types.ts';
import { TierTables } from './tier-tables.ts';
import { permitSelection, permitSideFor, type PermitSide } from './permit-side.ts';
import { FirstAndMore } from '../util/first-and-more.ts';
import { exactArray } from '../util/exact-array.ts';
import { policyFacts, type RuleFacts } from '../model/cluster-policy-facts.ts';
import { joinedLists, outsideList } from './outside-lists.ts';
import {
  newRulePermitMemo,
  type MemoEntry,
  type NamedPortRules,
  type PermitEntry,
  type PermitTables,
  type PolicyPermits,
  type PreparedSlots,
  type RulePermits,
} from './memo-records.ts';

type Direction = 'ingress' | 'egress';

/** How the configurator compiles. */
interface ConfiguratorOptions {
  /**
   * NetworkPolicy lets an isolated pod talk with its own node (default true). Tables without
   * Calico's or Cilium's policies leave that to the datapath; where NetworkPolicy's tier is
   * compiled into ordered lists it becomes permits for the node's addresses.
   */
  readonly allowNodeLocal?: boolean;
  /** Memoized entries kept before the memo is dropped (MAX_MEMO_ENTRIES; lower in tests). */
  readonly memoLimit?: number;
}

/** Memoized tables kept before the memo is dropped and rebuilt (bounds memory under churn). */
const MAX_MEMO_ENTRIES = 250_000;

/** The permit memo's key for a side without a NetworkPolicy table. */
const NO_TABLE: RuleTable = { id: '', rules: [] };

export class Configurator {
  /**
   * Per direction and selection key, the tables by variant. Almost every key has one variant,
   * kept inline; a Map is made only for a second one (a Map per key was 15 % of the memory).
   */
  private readonly memo = {
    ingress: new Map<string, MemoEntry>(),
    egress: new Map<string, MemoEntry>(),
  };
  private memoSize = 0;
  /**
   * Prepared rules of a policy direction's templates, by template index: its own port entry,
   * and (named ports) by resolved number. One entry per policy direction, not per template.
   */
  private preparedRules = new WeakMap<readonly RuleTemplate[], PreparedSlots>();

  /** Every rule and table, numbered and interned (shared by both kinds of side). */
  private readonly rules = new RuleNumbering();
  private readonly tierTables: TierTables;
  private readonly memoLimit: number;
  /**
   * Per direction and NetworkPolicy tier's selection (`permitSelection`, by its serial number):
   * its permit side, and the side's tables (`permitTable`) by NetworkPolicy table (NO_TABLE:
   * none) and variant — one lookup per pod side finds both (null where the side's rules need the
   * ordered lists).
   */
  private readonly permitMemo = {
    ingress: new Map<number, PermitEntry>(),
    egress: new Map<number, PermitEntry>(),
  };
  /** Allowing rules' numbered permits per direction (`rulePermits`); null: not all are a table's. */
  private rulePermitMemo = newRulePermitMemo();

  constructor(
    private readonly state: CompilingStore,
    options: ConfiguratorOptions = {},
  ) {
    this.tierTables = new TierTables(state, options.allowNodeLocal ?? true);
    this.memoLimit = options.memoLimit ?? MAX_MEMO_ENTRIES;
  }

  /** The pod's tables; a pod without an address gets none (it is postponed). */
  compile(pod: Endpoint): PodTables {
    if (pod.ips.length === 0 || pod.hostNetwork) return {};
    // Bounded between pods, never within one: a permit side merges into the table its
    // NetworkPolicy side just got, whose rules must still be known (`tableRules`). Rules are
    // kept by net too: policy churn brings new group names, so both are bounded.
    if (this.memoSize >= this.memoLimit || this.rules.size >= this.memoLimit) this.clearMemo();
    const selection = this.state.selection(pod);
    const ingress =
      selection.ingress.length > 0
        ? this.table(pod, 'ingress', selection.ingress, selection.ingressKey, portsKey(pod))
        : undefined;
    const egress = this.table(
      pod,
      'egress',
      selection.egress,
      selection.egressKey,
      String(this.state.partitionVersion),
    );
    // Assigned one by one, not spread: spreads gave each pod's result its own hidden class.
    const tables: { -readonly [K in keyof PodTables]: PodTables[K] } = {};
    const plans = this.state.podPlans(pod);
    this.side(pod, 'ingress', ingress, plans.ingress, tables);
    this.side(pod, 'egress', egress, plans.egress, tables);
    return tables;
  }

  /**
   * One side's tables into `out`: the NetworkPolicy table with the permits of Calico's and
   * Cilium's policies merged in where those are all the side's cluster policy holds
   * (`permitSideFor`; their blocks outside the cluster as an Admin list before it), else the
   * NetworkPolicy table and the ordered lists — the table not given again when the lists compile
   * it in (Calico's or Cilium's policies in its tier).
   */
  private side(
    pod: Endpoint,
    direction: Direction,
    table: RuleTable | undefined,
    planned: PlanSelection,
    out: { -readonly [K in keyof PodTables]: PodTables[K] },
  ): void {
    const selection = permitSelection(planned);
    let entry: PermitEntry | undefined;
    if (selection) {
      const memo = this.permitMemo[direction];
      entry = memo.get(selection.serial);
      if (!entry) {
        memo.set(selection.serial, (entry = { side: permitSideFor(selection, direction) }));
        this.memoSize++;
      }
    }
    const merged = entry?.side ? this.permitTable(pod, direction, table, entry.side, entry) : null;
    if (merged !== null) {
      if (merged && 'admin' in merged) {
        out[direction] = merged.table;
        out[direction === 'ingress' ? 'ingressTiers' : 'egressTiers'] = merged.admin;
      } else if (merged) out[direction] = merged;
      return;
    }
    const tiers = this.tierTables.tiers(pod, direction, table, planned);
    if (table && !tiers?.inlinesNetworkPolicy) out[direction] = table;
    if (tiers) out[direction === 'ingress' ? 'ingressTiers' : 'egressTiers'] = tiers;
  }

  /**
   * The NetworkPolicy table (if any) with a permit side's rules merged in: undefined when nothing
   * isolates the side (every connection allowed), null when a rule expands to a net a side has no
   * place for (the ordered lists then hold it). Permits of blocks outside the cluster, which a
   * table has no form for, come with it as the side's Admin list (`OutsideSplit`). Memoized in
   * the side's entry by the NetworkPolicy table object and what the rules depend on of the pod.
   */
  private permitTable(
    pod: Endpoint,
    direction: Direction,
    table: RuleTable | undefined,
    side: PermitSide,
    entry: PermitEntry,
  ): PermitTables | undefined | null {
    if (!table && !side.isolates) return undefined;
    const tableKey = table ?? NO_TABLE;
    const variant = this.tierTables.permitVariant(pod, direction, side);
    const cached =
      entry.table === tableKey && entry.variant === variant
        ? entry.merged
        : entry.more?.get(tableKey)?.get(variant);
    if (cached !== undefined) return cached;
    const known = table ? this.rules.rulesOf(table) : undefined;
    let merged: PermitTables | null = null;
    if (!table || known) {
      const prepared: NumberedRule[] = known ? known.slice() : [DENY_REST];
      const outside: TieredTable[] | undefined = side.outside ? [] : undefined;
      if (this.addPermits(pod, direction, side, prepared, outside)) {
        const permits = this.rules.intern(canonicalRules(prepared) as NumberedRule[]);
        merged = outside?.length ? { table: permits, admin: joinedLists(outside) } : permits;
      }
    }
    if (entry.table === undefined) {
      entry.table = tableKey;
      entry.variant = variant;
      entry.merged = merged;
    } else {
      const more = (entry.more ??= new Map<RuleTable, Map<string, PermitTables | null>>());
      let byVariant = more.get(tableKey);
      if (!byVariant) more.set(tableKey, (byVariant = new Map<string, PermitTables | null>()));
      byVariant.set(variant, merged);
    }
    this.memoSize++;
    return merged;
  }

  /**
   * Appends the side's policies' rules as numbered permits, and the Admin lists of their outside
   * blocks to `outside` (given when the side has some); false at a net neither can hold.
   */
  private addPermits(
    pod: Endpoint,
    direction: Direction,
    side: PermitSide,
    out: NumberedRule[],
    outside: TieredTable[] | undefined,
  ): boolean {
    const { policies, policySerials } = side.selection;
    const memo = this.rulePermitMemo[direction];
    for (let i = 0; i < policies.length; i++) {
      const policy = policies[i] as ClusterPolicy;
      const serial = policySerials[i] as number;
      let slots = memo.get(serial);
      if (!slots) {
        // Counted, as every entry is: keyed by numbers, the memo no longer lets go of policies
        // that are gone, so only the bound clears it.
        // Its slots at the rules' count: kept, and a list grown by index reserves room for 17.
        const count = policy[direction].length;
        memo.set(
          serial,
          (slots = {
            pure: new Array<RulePermits | null | undefined>(count),
            facts: policyFacts(policy).rules[direction],
            byVariant: new Array<FirstAndMore<string | number, RulePermits | null> | undefined>(count),
          }),
        );
        this.memoSize++;
      }
      const rules = policy[direction];
      for (let place = 0; place < rules.length; place++) {
        const permits = this.rulePermits(pod, policy, slots, rules[place] as ClusterRule, place, direction);
        if (!permits) return false;
        for (const permit of permits.rules) out.push(permit);
        if (outside && permits.outside) outside.push(permits.outside);
      }
    }
    return true;
  }

  /**
   * One allowing rule's numbered permits for the pod (null when one is not a permit a table
   * holds), memoized as TierTables memoizes its tuples: per rule (in its policy's `slots`, by the
   * rule's place in its list), and by variant where the rule depends on the pod (`ruleVariant`).
   * Made from the expansion directly, as NetworkPolicy's templates are: a permit seen before
   * costs a lookup, no rule object.
   */
  private rulePermits(
    pod: Endpoint,
    policy: ClusterPolicy,
    slots: PolicyPermits,
    rule: ClusterRule,
    place: number,
    direction: Direction,
  ): RulePermits | null {
    // A pure rule's permits are only ever kept in `pure`: found there, its facts are not read.
    const pure = slots.pure[place];
    if (pure !== undefined) return pure;
    const facts = slots.facts[place] as RuleFacts;
    const variant = this.tierTables.ruleVariant(pod, facts, direction);
    let byVariant: FirstAndMore<string | number, RulePermits | null> | undefined;
    if (variant !== undefined) {
      byVariant = slots.byVariant[place];
      const known = byVariant?.get(variant);
      if (known !== undefined) return known;
    }
    const made: NumberedRule[] = [];
    let permits: RulePermits | null = { rules: made, outside: undefined };
    // A rule whose peer cannot be read matches nothing when it allows.
    if (!rule.failClosed) {
      let outside: Rule[] | undefined;
      // As the ordered lists write an outside block: the rule's precedence, its net on its side.
      let precedence: number | undefined;
      this.tierTables.expandRule(pod, policy, rule, facts, direction, (net, protocol, from, to) => {
        if (net.kind === 'outside') {
          precedence ??= rulePrecedenceKey(policy, rule.index);
          const src = direction === 'ingress' ? net : ANY_NET;
          const dst = direction === 'egress' ? net : ANY_NET;
          (outside ??= []).push(
            from < 0
              ? { action: 'permit', protocol, src, dst, precedence }
              : { action: 'permit', protocol, src, dst, dstPorts: [from, to], precedence },
          );
          return;
        }
        const permit = this.rules.numberedNet(direction, net, protocol, from, to);
        if (permit) made.push(permit);
        else permits = null;
      });
      // In expansion order (blocks by address, then ports): deterministic for the rule, and
      // permits only, so no order changes a verdict.
      // Kept per rule and variant: at its exact size (util/exact-array.ts).
      if (permits) permits = { rules: exactArray(made), outside: outside && outsideList(outside) };
    }
    this.memoSize++;
    if (variant === undefined) slots.pure[place] = permits;
    else if (!byVariant) slots.byVariant[place] = new FirstAndMore(variant, permits);
    else byVariant.set(variant, permits);
    return permits;
  }

  /** Forgets memoized tables (after a resync, to bound memory). */
  clearMemo(): void {
    this.memo.ingress.clear();
    this.memo.egress.clear();
    this.rules.clear();
    this.preparedRules = new WeakMap();
    this.tierTables.clear();
    this.permitMemo.ingress.clear();
    this.permitMemo.egress.clear();
    this.rulePermitMemo = newRulePermitMemo();
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
    const entry = memo.get(policiesKey);
    const cached = entry?.variant === variant ? entry.table : entry?.more?.get(variant);
    if (cached) return cached;
    const prepared: NumberedRule[] = [DENY_REST];
    for (const policy of policies) {
      const templates = policyTemplates(policy)[direction];
      let slots = this.preparedRules.get(templates);
      if (!slots)
        this.preparedRules.set(
          templates,
          (slots = { plain: new Array<NumberedRule | undefined>(templates.length) }),
        );
      for (let i = 0; i < templates.length; i++)
        this.addRules(pod, direction, templates[i] as RuleTemplate, slots, i, prepared);
    }
    // Different inputs can still give equal rules: one object per distinct table.
    const rules = canonicalRules(prepared) as NumberedRule[];
    const table = this.rules.intern(rules);
    if (!entry) memo.set(policiesKey, { variant, table });
    else (entry.more ??= new Map<string, RuleTable>()).set(variant, table);
    this.memoSize++;
    return table;
  }

  /** Appends one template's rules, prepared once per template (slot i) and resolved port number. */
  private addRules(
    pod: Endpoint,
    direction: Direction,
    template: RuleTemplate,
    slots: PreparedSlots,
    i: number,
    out: NumberedRule[],
  ): void {
    const { net, port } = template;
    if (typeof port?.port !== 'string') {
      let rule = slots.plain[i];
      if (!rule) slots.plain[i] = rule = this.rules.numbered(permit(direction, net, port));
      out.push(rule);
      return;
    }
    const name = port.port;
    if (direction === 'ingress') {
      for (const p of pod.ports) {
        if (p.name !== name || p.protocol !== port.protocol) continue;
        out.push(this.prepared(template, slots, i, p.port, direction, net));
        return;
      }
      return;
    }
    // Egress named port: one rule per partition of the destination group.
    if (net.kind !== 'group') return;
    for (const n of portNumbers(this.state.group(net.group)))
      out.push(this.prepared(template, slots, i, n, direction, net));
  }

  /**
   * The named-port template's rule for a resolved port number. On egress the rule's net is the
   * number's partition of the destination group (`group#n`), made only when the rule is new:
   * that string used to be built, and hashed, for every pod's table.
   */
  private prepared(
    template: RuleTemplate,
    slots: PreparedSlots,
    i: number,
    port: number,
    direction: Direction,
    net: NetRef,
  ): NumberedRule {
    // A name usually resolves to one number: that one inline, a Map only for more.
    const named = slots.named?.[i];
    const known = named?.port === port ? named.rule : named?.more?.get(port);
    if (known) return known;
    const ruleNet: NetRef =
      direction === 'egress' && net.kind === 'group'
        ? { kind: 'group', group: `${net.group}${PARTITION_SEPARATOR}${port}` }
        : net;
    const rule = this.rules.numbered(permit(direction, ruleNet, template.port, [port, port]));
    if (!named)
      (slots.named ??= new Array<NamedPortRules | undefined>(slots.plain.length))[i] = { port, rule };
    else (named.more ??= new Map<number, NumberedRule>()).set(port, rule);
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
  // Two literals, not a conditional spread (the runtime's slow copy, for every new rule).
  const protocol = port?.protocol ?? 'ANY';
  const src = direction === 'ingress' ? net : ANY_NET;
  const dst = direction === 'egress' ? net : ANY_NET;
  return range
    ? { action: 'permit', protocol, src, dst, dstPorts: range }
    : { action: 'permit', protocol, src, dst };
}
