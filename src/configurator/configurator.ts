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
  PROTOCOL_RANK,
  ruleKey,
  type NetRef,
  type PreparedRule,
  type Rule,
  type RuleTable,
} from '../model/rule.ts';
import type {
  ClusterPolicy,
  ClusterRule,
  Endpoint,
  NetworkPolicy,
  PolicyPort,
  Protocol,
} from '../model/types.ts';
import {
  policyTemplates,
  type CompilingStore,
  type RuleTemplate,
  type TierSelection,
} from '../state/index.ts';
import { canonicalRules, tableOf } from './table-id.ts';
import { PARTITION_SEPARATOR, portsKey, type PodTables } from './types.ts';
import { TierTables } from './tier-tables.ts';
import { permitSideOf, type PermitSide } from './permit-side.ts';

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

const DENY_REST: NumberedRule = {
  ...prepareRule({ action: 'deny', protocol: 'ANY', src: ANY_NET, dst: ANY_NET }),
  serial: 0,
};

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
   * One table object per distinct table, by a hash of the serial numbers of its rules in
   * canonical order (the table's id, a hash of its text, is only made when someone asks for it).
   * A hash shared by different tables holds an array of them.
   */
  private readonly interned = new Map<number, RuleTable | RuleTable[]>();
  /**
   * One prepared rule per distinct rule, numbered: equal rules of different templates share it.
   * The configurator's rules are permits with one side "any" and the other a group, a CIDR or
   * "any" (keyed by ""): by that net, then by ruleShape.
   */
  private rulesByGroup = new Map<string, ShapeRules>();
  private rulesByCidr = new Map<string, ShapeRules>();
  /** Never reused, not even after the memo is cleared: cached rules keep their numbers. */
  private serials = 1;
  /**
   * Prepared rules of a policy direction's templates, by template index: its own port entry,
   * and (named ports) by resolved number. One entry per policy direction, not per template.
   */
  private preparedRules = new WeakMap<readonly RuleTemplate[], PreparedSlots>();

  private readonly tierTables: TierTables;
  private readonly memoLimit: number;
  /**
   * Permit sides' tables (`permitTable`), per direction: by the side's selection, NetworkPolicy
   * table (NO_TABLE: none) and variant; null where the side's rules need the ordered lists.
   */
  private readonly permitMemo = {
    ingress: new Map<TierSelection, PermitEntry>(),
    egress: new Map<TierSelection, PermitEntry>(),
  };
  /** Each interned table's numbered rules, so that a permit side can merge its own into them. */
  private tableRules = new WeakMap<RuleTable, readonly NumberedRule[]>();
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
    if (this.memoSize >= this.memoLimit || this.rulesByGroup.size + this.rulesByCidr.size >= this.memoLimit)
      this.clearMemo();
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
    this.side(pod, 'ingress', ingress, tables);
    this.side(pod, 'egress', egress, tables);
    return tables;
  }

  /**
   * One side's tables into `out`: the NetworkPolicy table with the permits of Calico's and
   * Cilium's policies merged in where those are all the side's cluster policy holds
   * (`permitSideOf`), else the NetworkPolicy table and the ordered lists — the table not
   * given again when the lists compile it in (Calico's or Cilium's policies in its tier).
   */
  private side(
    pod: Endpoint,
    direction: Direction,
    table: RuleTable | undefined,
    out: { -readonly [K in keyof PodTables]: PodTables[K] },
  ): void {
    const planned = this.state.planSelection(pod, direction);
    const permits = permitSideOf(planned, direction);
    const merged = permits ? this.permitTable(pod, direction, table, permits) : null;
    if (merged !== null) {
      if (merged) out[direction] = merged;
      return;
    }
    const tiers = this.tierTables.tiers(pod, direction, table, planned);
    if (table && !tiers?.inlinesNetworkPolicy) out[direction] = table;
    if (tiers) out[direction === 'ingress' ? 'ingressTiers' : 'egressTiers'] = tiers;
  }

  /**
   * The NetworkPolicy table (if any) with a permit side's rules merged in: undefined when nothing
   * isolates the side (every connection allowed), null when a rule expands to a net a table has no
   * place for (the ordered lists then hold the side). Memoized by the side's selection, the
   * NetworkPolicy table object and what the rules depend on of the pod.
   */
  private permitTable(
    pod: Endpoint,
    direction: Direction,
    table: RuleTable | undefined,
    side: PermitSide,
  ): RuleTable | undefined | null {
    if (!table && !side.isolates) return undefined;
    const memo = this.permitMemo[direction];
    const entry = memo.get(side.selection);
    const tableKey = table ?? NO_TABLE;
    const variant = this.tierTables.permitVariant(pod, direction, side);
    const cached =
      entry?.table === tableKey && entry.variant === variant
        ? entry.merged
        : entry?.more?.get(tableKey)?.get(variant);
    if (cached !== undefined) return cached;
    const known = table ? this.tableRules.get(table) : undefined;
    let merged: RuleTable | null = null;
    if (!table || known) {
      const prepared: NumberedRule[] = known ? known.slice() : [DENY_REST];
      if (this.addPermits(pod, direction, side, prepared))
        merged = this.intern(canonicalRules(prepared) as NumberedRule[]);
    }
    if (!entry) memo.set(side.selection, { table: tableKey, variant, merged });
    else {
      const more = (entry.more ??= new Map<RuleTable, Map<string, RuleTable | null>>());
      let byVariant = more.get(tableKey);
      if (!byVariant) more.set(tableKey, (byVariant = new Map<string, RuleTable | null>()));
      byVariant.set(variant, merged);
    }
    this.memoSize++;
    return merged;
  }

  /** Appends the side's policies' rules as numbered permits; false at one a table cannot hold. */
  private addPermits(pod: Endpoint, direction: Direction, side: PermitSide, out: NumberedRule[]): boolean {
    for (const policy of side.selection.policies)
      for (const rule of policy[direction]) {
        const permits = this.rulePermits(pod, policy, rule, direction);
        if (!permits) return false;
        for (const permit of permits) out.push(permit);
      }
    return true;
  }

  /**
   * One allowing rule's numbered permits for the pod (null when one is not a permit a table
   * holds), memoized as TierTables memoizes its tuples: per rule object, and by variant where the
   * rule depends on the pod (`ruleVariant`). Made from the expansion directly, as NetworkPolicy's
   * templates are: a permit seen before costs a lookup, no rule object.
   */
  private rulePermits(
    pod: Endpoint,
    policy: ClusterPolicy,
    rule: ClusterRule,
    direction: Direction,
  ): readonly NumberedRule[] | null {
    const memo = this.rulePermitMemo[direction];
    const variant = this.tierTables.ruleVariant(pod, rule, direction);
    let byVariant: Map<string | number, readonly NumberedRule[] | null> | undefined;
    if (variant === undefined) {
      const known = memo.pure.get(rule);
      if (known !== undefined) return known;
    } else {
      byVariant = memo.byVariant.get(rule);
      const known = byVariant?.get(variant);
      if (known !== undefined) return known;
    }
    let permits: NumberedRule[] | null = [];
    // A rule whose peer cannot be read matches nothing when it allows.
    if (!rule.failClosed) {
      const made: NumberedRule[] = permits;
      this.tierTables.expandRule(pod, policy, rule, direction, (net, protocol, from, to) => {
        const permit = this.numberedNet(direction, net, protocol, from, to);
        if (permit) made.push(permit);
        else permits = null;
      });
    }
    this.memoSize++;
    if (variant === undefined) memo.pure.set(rule, permits);
    else {
      if (!byVariant)
        memo.byVariant.set(rule, (byVariant = new Map<string | number, readonly NumberedRule[] | null>()));
      byVariant.set(variant, permits);
    }
    return permits;
  }

  /**
   * The numbered permit for a net (one side; anything on the other), protocol and port range
   * (`from` -1: every port), or null for a net a table has no form for (an outside peer's).
   */
  private numberedNet(
    direction: Direction,
    net: NetRef,
    protocol: Protocol | 'ANY',
    from: number,
    to: number,
  ): NumberedRule | null {
    if (net.kind !== 'group' && net.kind !== 'cidr' && net.kind !== 'any') return null;
    const side = direction === 'ingress' && net.kind !== 'any' ? 0 : 1;
    const shape = shapeOf(side, protocol, from, to);
    const known = this.knownNumbered(net, shape);
    if (known) return known;
    const src = direction === 'ingress' ? net : ANY_NET;
    const dst = direction === 'egress' ? net : ANY_NET;
    return this.addNumbered(
      net,
      shape,
      from < 0
        ? { action: 'permit', protocol, src, dst }
        : { action: 'permit', protocol, src, dst, dstPorts: [from, to] },
    );
  }

  /** Forgets memoized tables (after a resync, to bound memory). */
  clearMemo(): void {
    this.memo.ingress.clear();
    this.memo.egress.clear();
    this.interned.clear();
    this.rulesByGroup = new Map();
    this.rulesByCidr = new Map();
    this.preparedRules = new WeakMap();
    this.tierTables.clear();
    this.permitMemo.ingress.clear();
    this.permitMemo.egress.clear();
    this.tableRules = new WeakMap();
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
    const table = this.intern(rules);
    if (!entry) memo.set(policiesKey, { variant, table });
    else (entry.more ??= new Map<string, RuleTable>()).set(variant, table);
    this.memoSize++;
    return table;
  }

  /**
   * The one table object for these rules (canonical order): found by a hash of their serial
   * numbers, confirmed rule by rule (numbered rules are one object per distinct rule).
   */
  private intern(rules: readonly NumberedRule[]): RuleTable {
    let hash = rules.length;
    for (const r of rules) hash = (Math.imul(hash, 0x01000193) ^ r.serial) | 0;
    const known = this.interned.get(hash);
    const same = (t: RuleTable): boolean =>
      t.rules.length === rules.length && t.rules.every((rule, i) => rule === rules[i]?.rule);
    if (known) {
      const found = Array.isArray(known) ? known.find(same) : same(known) ? known : undefined;
      if (found) return found;
    }
    const table = tableOf(rules.map((r) => r.rule));
    this.tableRules.set(table, rules);
    if (!known) this.interned.set(hash, table);
    else if (Array.isArray(known)) known.push(table);
    else this.interned.set(hash, [known, table]);
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
      if (!rule) slots.plain[i] = rule = this.numbered(permit(direction, net, port));
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
    for (const n of this.state.group(net.group)?.ports.keys() ?? [])
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
    const rule = this.numbered(permit(direction, ruleNet, template.port, [port, port]));
    if (!named)
      (slots.named ??= new Array<NamedPortRules | undefined>(slots.plain.length))[i] = { port, rule };
    else (named.more ??= new Map<number, NumberedRule>()).set(port, rule);
    return rule;
  }

  /** The prepared, numbered form of a rule: the one already made for an equal rule, or a new one. */
  private numbered(rule: Rule): NumberedRule {
    const net = rule.src.kind === 'any' ? rule.dst : rule.src;
    const shape = ruleShape(rule);
    return this.knownNumbered(net, shape) ?? this.addNumbered(net, shape, rule);
  }

  /**
   * The numbered rule made before for a net and shape (see `ruleShape`). Found by its net (a group
   * name or CIDR text: strings whose hash is already cached) and a number for the rest — building
   * and hashing the long sort key for every template was most of this function's cost; the key is
   * made only for a rule not seen before.
   */
  private knownNumbered(net: NetRef, shape: number): NumberedRule | undefined {
    const rules = (net.kind === 'group' ? this.rulesByGroup : this.rulesByCidr).get(netText(net));
    return rules?.shape === shape ? rules.rule : rules?.more?.get(shape);
  }

  /** Numbers a rule not seen before (its net's first shape kept inline, a Map made only for a second). */
  private addNumbered(net: NetRef, shape: number, rule: Rule): NumberedRule {
    const byNet = net.kind === 'group' ? this.rulesByGroup : this.rulesByCidr;
    const text = netText(net);
    const rules = byNet.get(text);
    const made: NumberedRule = { rule, key: ruleKey(rule), serial: this.serials++ };
    if (!rules) byNet.set(text, { shape, rule: made });
    else (rules.more ??= new Map<number, NumberedRule>()).set(shape, made);
    return made;
  }
}

/** A net's text for the numbered rules' maps: a group's name, a CIDR's text, '' for anything. */
function netText(net: NetRef): string {
  return net.kind === 'group' ? net.group : net.kind === 'cidr' ? net.cidr.text : '';
}

/**
 * Everything of a permit rule but its net, as one number (exact below 2^53): which side the net
 * is on, the protocol and the port range.
 */
function ruleShape(rule: Rule): number {
  const side = rule.src.kind === 'any' ? 1 : 0;
  return rule.dstPorts
    ? shapeOf(side, rule.protocol, rule.dstPorts[0], rule.dstPorts[1])
    : shapeOf(side, rule.protocol, -1, -1);
}

/** `ruleShape` from its parts: the net's side (0: source), the protocol, the range (`from` -1: every port). */
function shapeOf(side: number, protocol: Protocol | 'ANY', from: number, to: number): number {
  const rank = PROTOCOL_RANK[protocol];
  return from < 0
    ? ((side * 4 + rank) * 65537 + 65536) * 65537 + 65536
    : ((side * 4 + rank) * 65537 + from) * 65537 + to;
}

/** A policy direction's prepared rules by template index (see Configurator.preparedRules). */
interface PreparedSlots {
  readonly plain: (NumberedRule | undefined)[];
  /** Made for the first named port resolved. */
  named?: (NamedPortRules | undefined)[];
}

/** The rules of one net: the first shape's inline, a Map for any others. */
interface ShapeRules {
  readonly shape: number;
  readonly rule: NumberedRule;
  more?: Map<number, NumberedRule>;
}

/** A named-port template's rule for its first resolved number, and a Map for any others. */
interface NamedPortRules {
  readonly port: number;
  readonly rule: NumberedRule;
  more?: Map<number, NumberedRule>;
}

/** A prepared rule with its number among the distinct rules the configurator has seen. */
interface NumberedRule extends PreparedRule {
  readonly serial: number;
}

/**
 * A permit side's table for its selection's first NetworkPolicy table and variant, and Maps for
 * any others (shape (a) gives each selection one: Maps per entry were most of what it allocated).
 */
interface PermitEntry {
  readonly table: RuleTable;
  readonly variant: string;
  readonly merged: RuleTable | null;
  more?: Map<RuleTable, Map<string, RuleTable | null>>;
}

/** Per direction: a pure rule's permits by rule, a dependent one's by rule and variant. */
interface RulePermits {
  readonly pure: WeakMap<ClusterRule, readonly NumberedRule[] | null>;
  readonly byVariant: WeakMap<ClusterRule, Map<string | number, readonly NumberedRule[] | null>>;
}
function newRulePermitMemo(): Record<Direction, RulePermits> {
  return {
    ingress: { pure: new WeakMap(), byVariant: new WeakMap() },
    egress: { pure: new WeakMap(), byVariant: new WeakMap() },
  };
}

/** A selection key's table for its first variant, and a Map for any others. */
interface MemoEntry {
  readonly variant: string;
  readonly table: RuleTable;
  more?: Map<string, RuleTable>;
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
