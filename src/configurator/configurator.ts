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
import type { Endpoint, NetworkPolicy, PolicyPort } from '../model/types.ts';
import { policyTemplates, type CompilingStore, type RuleTemplate } from '../state/index.ts';
import { canonicalRules, tableOf } from './table-id.ts';
import { PARTITION_SEPARATOR, portsKey, type PodTables } from './types.ts';
import { TierTables } from './tier-tables.ts';

type Direction = 'ingress' | 'egress';

/** How the configurator compiles. */
interface ConfiguratorOptions {
  /**
   * NetworkPolicy lets an isolated pod talk with its own node (default true). Tables without
   * Calico's or Cilium's policies leave that to the datapath; where NetworkPolicy's tier is
   * compiled into ordered lists it becomes permits for the node's addresses.
   */
  readonly allowNodeLocal?: boolean;
}

/** Memoized tables kept before the memo is dropped and rebuilt (bounds memory under churn). */
const MAX_MEMO_ENTRIES = 250_000;

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

  constructor(
    private readonly state: CompilingStore,
    options: ConfiguratorOptions = {},
  ) {
    this.tierTables = new TierTables(state, options.allowNodeLocal ?? true);
  }

  /** The pod's tables; a pod without an address gets none (it is postponed). */
  compile(pod: Endpoint): PodTables {
    if (pod.ips.length === 0 || pod.hostNetwork) return {};
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
    const ingressTiers = this.tierTables.tiers(pod, 'ingress', ingress);
    const egressTiers = this.tierTables.tiers(pod, 'egress', egress);
    // Assigned one by one, not spread: spreads gave each pod's result its own hidden class.
    // A NetworkPolicy table compiled into the tiers (Calico's or Cilium's policies in its tier)
    // is not given again.
    const tables: { -readonly [K in keyof PodTables]: PodTables[K] } = {};
    if (ingress && !ingressTiers?.inlinesNetworkPolicy) tables.ingress = ingress;
    if (egress && !egressTiers?.inlinesNetworkPolicy) tables.egress = egress;
    if (ingressTiers) tables.ingressTiers = ingressTiers;
    if (egressTiers) tables.egressTiers = egressTiers;
    return tables;
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
    // Rules are kept by net too: policy churn brings new group names, so both are bounded.
    if (
      this.memoSize >= MAX_MEMO_ENTRIES ||
      this.rulesByGroup.size + this.rulesByCidr.size >= MAX_MEMO_ENTRIES
    )
      this.clearMemo();
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
    // Found by its net (a group name or CIDR text: strings whose hash is already cached) and a
    // number for the rest — building and hashing the long sort key for every template was most
    // of this function's cost; the key is made only for a rule not seen before. Most nets have
    // one shape: it is kept inline, a Map made only for a second.
    const net = rule.src.kind === 'any' ? rule.dst : rule.src;
    const byNet = net.kind === 'group' ? this.rulesByGroup : this.rulesByCidr;
    const netText = net.kind === 'group' ? net.group : net.kind === 'cidr' ? net.cidr.text : '';
    const shape = ruleShape(rule);
    const rules = byNet.get(netText);
    const known = rules?.shape === shape ? rules.rule : rules?.more?.get(shape);
    if (known) return known;
    const made: NumberedRule = { rule, key: ruleKey(rule), serial: this.serials++ };
    if (!rules) byNet.set(netText, { shape, rule: made });
    else (rules.more ??= new Map<number, NumberedRule>()).set(shape, made);
    return made;
  }
}

/**
 * Everything of a permit rule but its net, as one number (exact below 2^53): which side the net
 * is on, the protocol and the port range.
 */
function ruleShape(rule: Rule): number {
  const side = rule.src.kind === 'any' ? 1 : 0;
  const protocol = PROTOCOL_RANK[rule.protocol];
  const from = rule.dstPorts ? rule.dstPorts[0] : 65536;
  const to = rule.dstPorts ? rule.dstPorts[1] : 65536;
  return ((side * 4 + protocol) * 65537 + from) * 65537 + to;
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
