/**
 * The configurator's rules and tables, numbered: one prepared rule object per distinct permit
 * (a serial number each, never reused) and one table object per distinct list of them, so that
 * tables are compared and memoized by object. NetworkPolicy's templates and Calico's and Cilium's
 * permit sides (configurator.ts) number their rules here alike, and share them.
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
import type { Protocol } from '../model/types.ts';
import { tableOf } from './table-id.ts';
import { HashBuckets, serialListHash, type SerialNumbering } from '../util/serial-hash.ts';

type Direction = 'ingress' | 'egress';

/** A prepared rule with its number among the distinct rules the configurator has seen. */
export interface NumberedRule extends PreparedRule {
  readonly serial: number;
}

/** The last rule of every table: deny the rest (number 0, shared by all). */
export const DENY_REST: NumberedRule = {
  ...prepareRule({ action: 'deny', protocol: 'ANY', src: ANY_NET, dst: ANY_NET }),
  serial: 0,
};

export class RuleNumbering {
  /**
   * One table object per distinct table, by a hash of the serial numbers of its rules in
   * canonical order (the table's id, a hash of its text, is only made when someone asks for it).
   * A hash shared by different tables holds an array of them.
   */
  private readonly interned = new HashBuckets<RuleTable, readonly NumberedRule[]>(holdsRules);
  /**
   * One prepared rule per distinct rule, numbered: equal rules of different templates share it.
   * The configurator's rules are permits with one side "any" and the other a group, a CIDR or
   * "any" (keyed by ""): by that net, then by ruleShape.
   */
  private rulesByGroup = new Map<string, ShapeRules>();
  private rulesByCidr = new Map<string, ShapeRules>();
  /** Never reused, not even after the memo is cleared: cached rules keep their numbers. */
  private serials = 1;
  /** The tables interned since the last `clear`. */
  private tables = new WeakSet<RuleTable>();
  /**
   * The numbered rules of the tables a permit side merged its own into, made when first asked:
   * kept for every table, they were 30 MB of arrays at shape (a) ×1, which has no permit side.
   */
  private tableRules = new WeakMap<RuleTable, readonly NumberedRule[] | null>();

  /** Distinct rules numbered (bounds the memory the configurator keeps). */
  get size(): number {
    return this.rulesByGroup.size + this.rulesByCidr.size;
  }

  /** An interned table's numbered rules (undefined: not a table of this numbering, or forgotten). */
  rulesOf(table: RuleTable): readonly NumberedRule[] | undefined {
    if (!this.tables.has(table)) return undefined;
    let rules = this.tableRules.get(table);
    if (rules === undefined) {
      rules = this.renumbered(table);
      this.tableRules.set(table, rules);
    }
    return rules ?? undefined;
  }

  /**
   * A table's rules as the numbered rules they were made from: each is the one numbered rule of
   * its net and shape, the deny at the end excepted (a permit of anything has its shape). Null
   * if one is not (it cannot be, while the table is this numbering's).
   */
  private renumbered(table: RuleTable): readonly NumberedRule[] | null {
    const rules: NumberedRule[] = [];
    for (const rule of table.rules) {
      const numbered =
        rule === DENY_REST.rule
          ? DENY_REST
          : this.knownNumbered(rule.src.kind === 'any' ? rule.dst : rule.src, ruleShape(rule));
      if (numbered?.rule !== rule) return null;
      rules.push(numbered);
    }
    return rules;
  }

  /** Forgets every rule and table (their serial numbers are not reused). */
  clear(): void {
    this.interned.clear();
    this.rulesByGroup = new Map();
    this.rulesByCidr = new Map();
    this.tables = new WeakSet();
    this.tableRules = new WeakMap();
  }

  /**
   * The numbered permit for a net (one side; anything on the other), protocol and port range
   * (`from` -1: every port), or null for a net a table has no form for (an outside peer's).
   */
  numberedNet(
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

  /**
   * The one table object for these rules (canonical order): found by a hash of their serial
   * numbers, confirmed rule by rule (numbered rules are one object per distinct rule).
   */
  intern(rules: readonly NumberedRule[]): RuleTable {
    const hash = serialListHash(rules, RULE_SERIALS);
    const known = this.interned.find(hash, rules);
    if (known) return known;
    const table = tableOf(rules.map((r) => r.rule));
    this.tables.add(table);
    this.interned.add(hash, table);
    return table;
  }

  /** The prepared, numbered form of a rule: the one already made for an equal rule, or a new one. */
  numbered(rule: Rule): NumberedRule {
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

/** The rules of one net: the first shape's inline, a Map for any others. */
interface ShapeRules {
  readonly shape: number;
  readonly rule: NumberedRule;
  more?: Map<number, NumberedRule>;
}

/** A numbered rule's serial number is its own. */
const RULE_SERIALS: SerialNumbering<NumberedRule> = { serialOf: (rule) => rule.serial };

/** Whether a table holds exactly these numbered rules, in this order. */
function holdsRules(table: RuleTable, rules: readonly NumberedRule[]): boolean {
  if (table.rules.length !== rules.length) return false;
  for (let i = 0; i < rules.length; i++) if (table.rules[i] !== (rules[i] as NumberedRule).rule) return false;
  return true;
}
