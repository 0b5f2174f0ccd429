/**
 * The classes a tier decision is keyed by. Peer classes: addresses in the same tier groups and
 * inside the same tier CIDRs are alike to every tier table, so they share one class (pods of one
 * namespace and label set, typically); an address's class sits in its record and is computed
 * when a tier lookup first needs it. Port classes: (protocol, port) pairs that every tier rule's
 * port set either holds or not, together — the intervals between the rules' port boundaries.
 *
 * Only tier groups and tier CIDRs count, so NetworkPolicy groups do not split classes. A class
 * number always means the same set of groups and CIDRs (numbers are never reused until every
 * class is forgotten at once), so decisions kept per class stay right while the address moves
 * between classes: what changes is which class an address is in, and that is forgotten with it —
 * when its group list changes (address-records.ts), when a group first becomes a tier group (its
 * members), when a new tier CIDR appears (everyone). A group or CIDR no longer used by any tier
 * table may still split classes; that is finer than needed, never wrong.
 */
import { cidrContains, type Cidr, type IpAddress, type IpFamily } from '../net/ip.ts';
import { peerClassAt, setPeerClassAt, TIER_GROUPS, type AddressRecords } from './address-records.ts';

/** Classes kept before all are forgotten and numbered afresh (bounds the decisions kept per class). */
const MIN_CLASS_LIMIT = 1 << 16;

export class TierPeerClasses {
  /** Per group number: the tier tables using it. */
  private groupUses = new Int32Array(256);
  /** Tier CIDRs by text, with their number and the tier tables using them. */
  private readonly cidrs = new Map<string, { readonly id: number; readonly cidr: Cidr; uses: number }>();
  private cidrCount = 0;
  private readonly byKey = new Map<string, number>();
  /** Per class: its tier groups and tier CIDR numbers (what a decision is computed from). */
  readonly groupsOf: number[][] = [];
  readonly cidrsOf: number[][] = [];

  constructor(
    private readonly records: AddressRecords,
    private readonly membersOf: (group: number) => readonly IpAddress[],
    /** Every class was forgotten and numbering starts again: decisions kept per class go. */
    private readonly renumbered: () => void,
  ) {}

  /** Classes numbered since the last renumbering. */
  get size(): number {
    return this.groupsOf.length;
  }

  useGroup(group: number): void {
    if (group >= this.groupUses.length) {
      const grown = new Int32Array(Math.max(2 * this.groupUses.length, group + 1));
      grown.set(this.groupUses);
      this.groupUses = grown;
    }
    const uses = this.groupUses[group] as number;
    this.groupUses[group] = uses + 1;
    if (uses === 0) for (const ip of this.membersOf(group)) this.records.forgetClass(ip);
  }

  releaseGroup(group: number): void {
    this.groupUses[group] = (this.groupUses[group] as number) - 1;
  }

  /** The number of a tier CIDR, used by one more table. */
  useCidr(cidr: Cidr): number {
    const known = this.cidrs.get(cidr.text);
    if (known) {
      known.uses++;
      return known.id;
    }
    const id = this.cidrCount++;
    this.cidrs.set(cidr.text, { id, cidr, uses: 1 });
    // Any address may be inside it: every class is computed again when next needed.
    this.records.forgetAllClasses();
    return id;
  }

  releaseCidr(cidr: Cidr): void {
    const known = this.cidrs.get(cidr.text);
    if (known && --known.uses === 0) this.cidrs.delete(cidr.text);
  }

  /**
   * The class of the record at `base` in `data` (the address given as `words`), computed and
   * stored in the record when it has none.
   */
  classOf(data: Int32Array, base: number, family: IpFamily, words: Uint32Array): number {
    const known = peerClassAt(data, base);
    if (known >= 0) return known;
    const groups = this.records.groupsAt(data, base, TIER_GROUPS).filter((g) => (this.groupUses[g] ?? 0) > 0);
    const address = addressOf(family, words);
    const cidrs: number[] = [];
    for (const { id, cidr } of this.cidrs.values()) if (cidrContains(cidr, address)) cidrs.push(id);
    cidrs.sort((a, b) => a - b);
    const key = `${groups.join(',')}|${cidrs.join(',')}`;
    let id = this.byKey.get(key);
    if (id === undefined) {
      if (this.groupsOf.length >= Math.max(MIN_CLASS_LIMIT, 2 * this.records.size)) this.renumber();
      id = this.groupsOf.length;
      this.byKey.set(key, id);
      this.groupsOf.push(groups);
      this.cidrsOf.push(cidrs);
    }
    setPeerClassAt(data, base, id);
    return id;
  }

  private renumber(): void {
    this.byKey.clear();
    this.groupsOf.length = 0;
    this.cidrsOf.length = 0;
    this.records.forgetAllClasses();
    this.renumbered();
  }
}

function addressOf(family: IpFamily, words: Uint32Array): IpAddress {
  if (family === 4) return { family, value: BigInt((words[0] as number) >>> 0) };
  let value = 0n;
  for (let i = 0; i < 4; i++) value = (value << 32n) | BigInt((words[i] as number) >>> 0);
  return { family, value };
}

/**
 * Port classes: per protocol index, the intervals between the boundaries of every tier rule's
 * port range (a boundary is where a range starts or ends + 1). `classOf[protocol << 16 | port]`
 * is one load; the representatives are each class's first (protocol, port). (Past 65,535
 * classes the numbers wrap; tier-decisions.ts stops using them long before.)
 */
export class TierPortClasses {
  /** (protocol << 17 | port) → ranges starting or ending there. */
  private readonly boundaries = new Map<number, number>();
  private stale = true;
  /** Made at the first refresh: classifiers that never look up a tier (renderers) do not pay for it. */
  classOf = new Uint16Array(0);
  representatives: number[] = [];

  /** Whether the classes must be computed again (a new boundary came). */
  get dirty(): boolean {
    return this.stale;
  }

  use(protocol: number, from: number, to: number): void {
    for (const protocolIndex of protocol < 0 ? [0, 1, 2] : [protocol]) {
      if (from > 0) this.add(protocolIndex, from);
      if (to < 65535) this.add(protocolIndex, to + 1);
    }
  }

  release(protocol: number, from: number, to: number): void {
    for (const protocolIndex of protocol < 0 ? [0, 1, 2] : [protocol]) {
      if (from > 0) this.remove(protocolIndex, from);
      if (to < 65535) this.remove(protocolIndex, to + 1);
    }
  }

  /** Computes the classes again (boundaries no range uses any more are dropped now). */
  refresh(): void {
    const starts: boolean[][] = [[], [], []];
    for (const key of this.boundaries.keys()) (starts[key >>> 17] as boolean[])[key & 0x1ffff] = true;
    const representatives: number[] = [];
    if (this.classOf.length === 0) this.classOf = new Uint16Array(3 << 16);
    for (let protocol = 0; protocol < 3; protocol++) {
      const marks = starts[protocol] as boolean[];
      for (let port = 0; port < 65536; port++) {
        if (port === 0 || marks[port]) representatives.push((protocol << 16) | port);
        this.classOf[(protocol << 16) | port] = representatives.length - 1;
      }
    }
    this.representatives = representatives;
    this.stale = false;
  }

  private add(protocol: number, port: number): void {
    const key = (protocol << 17) | port;
    const uses = this.boundaries.get(key) ?? 0;
    this.boundaries.set(key, uses + 1);
    if (uses === 0) this.stale = true;
  }

  private remove(protocol: number, port: number): void {
    const key = (protocol << 17) | port;
    const uses = (this.boundaries.get(key) ?? 1) - 1;
    if (uses === 0) this.boundaries.delete(key);
    else this.boundaries.set(key, uses);
  }
}
