/**
 * The tier tables' fast form: a decision per (tier table, peer class, port class), so a tier
 * lookup is the remote's class (in its record), the port's class (one load), and two loads —
 * whatever the number of rules or policies. The rule walk over groups and bitmaps
 * (table-arena.ts) stays for remotes the classifier has no record of (outside addresses), past
 * the memory bound below, and for explaining; NetworkPolicy tables never come here.
 *
 * Each tier table gets a small number (its form). Per (form, peer class) a 16-bit index says
 * which row decides it (0: not computed yet); a row holds two bits per port class — Allow,
 * Deny, or nothing decided (Pass, or no rule matched: the next tier). Rows are computed on first
 * use, from the form's bitmaps: the remote class's rules (`peers`) against each port class's
 * rules, the lowest common bit deciding (bits are in precedence order). Rows that decide alike
 * are one row, whichever tables and classes they decide for, all in one array — a lookup reads
 * the index and then the row, with no per-table array between them (shape (a) with 1,000
 * AdminNetworkPolicies: a few thousand rows for 256 tables and 1,600 classes); the index, two
 * bytes per table and class, stays in cache where a row per (table, class) did not.
 *
 * Memory is bounded: the index takes at most MAX_INDEX_BYTES (tables × classes × 2); classes
 * or tables beyond it walk the rules. Rows and index are emptied when the port classes change
 * (a new port boundary), when the peer classes are numbered afresh, and when the rows reach
 * what the index can name (rows of removed tables stay until then).
 */
import type { IpAddress, IpFamily } from '../net/ip.ts';
import type { AddressRecords } from './address-records.ts';
import { peerClassAt } from './address-records.ts';
import { TierPeerClasses, TierPortClasses } from './tier-decision-keys.ts';
import { portClassRules, type TierForm } from './tier-decision-input.ts';
import { ACTION_ALLOW, ACTION_DENY } from './tier-bitmap-table.ts';

/** A tier's answer (two bits in a row). */
export const TIER_UNDECIDED = 0;
export const TIER_ALLOW = 1;
export const TIER_DENY = 2;
/** `decide`'s answer when the fast form cannot answer: the caller walks the rules. */
export const TIER_WALK = -1;
/** The form number of a table the fast form does not take (past the memory bound). */
export const NO_FORM = -1;

/** Past this many port classes a row would be long: tier lookups walk the rules instead. */
const MAX_PORT_CLASSES = 1024;
/** The (form, peer class) index's largest size. */
const MAX_INDEX_BYTES = 32 << 20;
/** Rows the 16-bit index can name (row + 1; 0 is "not computed"). */
const MAX_ROWS = 0xfffe;

interface Form {
  readonly form: TierForm;
  /** CIDR number (peer classes') → the rules naming it. */
  readonly cidrs: ReadonlyMap<number, Uint32Array>;
  /** The rules of each port class, for the port classes of `generation`. */
  portRules: Uint32Array | undefined;
  generation: number;
}

export class TierDecisions {
  readonly peerClasses: TierPeerClasses;
  private readonly portClasses = new TierPortClasses();
  /**
   * What a lookup reads of the port classes, held here (one load each, not two): whether they
   * must be computed again (a table brought a new boundary), and the class of each port.
   */
  private stalePorts = true;
  private portClassOf = new Uint16Array(0);
  private readonly forms: (Form | undefined)[] = [];
  /** Per packed handle: the table's form number (NO_FORM past the bound) and its form. */
  private readonly byHandle = new Map<number, { readonly number: number; readonly form: TierForm }>();
  private readonly freeForms: number[] = [];
  /** Every row (`words` ints each), and the row of each content seen (to share rows). */
  private rows = new Int32Array(64);
  private rowCount = 0;
  private readonly rowOf = new Map<string, number>();
  /** (form × classCapacity + peer class) → row + 1, 0 when not computed. */
  private index = new Uint16Array(0);
  private formCapacity = 0;
  private classCapacity = 0;
  /** Port classes' generation (rows and port rules of older ones are stale). */
  private generation = 0;
  private usable = true;
  /** Ints per row: two bits per port class. */
  private words = 1;
  private peers = new Uint32Array(16);
  private row = new Int32Array(1);
  /** Rows computed since the classifier was made (for figures). */
  rowsComputed = 0;

  constructor(records: AddressRecords, membersOf: (group: number) => readonly IpAddress[]) {
    this.peerClasses = new TierPeerClasses(records, membersOf, () => this.forgetRows());
    this.resize(16, 64);
  }

  /** A tier table was packed under `handle`: its groups, CIDRs and ports join the classes. */
  add(handle: number, form: TierForm): void {
    for (const group of form.groups.keys()) this.peerClasses.useGroup(group);
    const cidrs = new Map<number, Uint32Array>();
    for (const { cidr, rules } of form.cidrs) cidrs.set(this.peerClasses.useCidr(cidr), rules);
    for (let bit = 0; bit < form.actions.length; bit++)
      this.portClasses.use(
        form.ports[3 * bit] as number,
        form.ports[3 * bit + 1] as number,
        form.ports[3 * bit + 2] as number,
      );
    this.stalePorts = this.portClasses.dirty;
    // A free number is inside the index; a new one may need it grown.
    const number = this.freeForms.pop() ?? this.forms.length;
    if (number >= this.formCapacity && !this.resize(2 * this.formCapacity, this.classCapacity)) {
      // Past the memory bound: this table's lookups walk its rules.
      this.byHandle.set(handle, { number: NO_FORM, form });
      return;
    }
    this.forms[number] = { form, cidrs, portRules: undefined, generation: -1 };
    this.byHandle.set(handle, { number, form });
  }

  /** The form number of the table packed under `handle` (NO_FORM: its lookups walk the rules). */
  formOf(handle: number): number {
    return this.byHandle.get(handle)?.number ?? NO_FORM;
  }

  /** Before the table's block is freed. */
  remove(handle: number): void {
    const registered = this.byHandle.get(handle);
    if (!registered) return;
    this.byHandle.delete(handle);
    const { number, form } = registered;
    for (const group of form.groups.keys()) this.peerClasses.releaseGroup(group);
    for (const { cidr } of form.cidrs) this.peerClasses.releaseCidr(cidr);
    for (let bit = 0; bit < form.actions.length; bit++)
      this.portClasses.release(
        form.ports[3 * bit] as number,
        form.ports[3 * bit + 1] as number,
        form.ports[3 * bit + 2] as number,
      );
    if (number === NO_FORM) return;
    this.forms[number] = undefined;
    this.index.fill(0, number * this.classCapacity, (number + 1) * this.classCapacity);
    this.freeForms.push(number);
  }

  /**
   * The decision of tier table `form` for a remote address with a record (`remote` in `data`;
   * the address as `words`): TIER_ALLOW, TIER_DENY, TIER_UNDECIDED, or TIER_WALK when the fast
   * form does not apply.
   */
  decide(
    form: number,
    data: Int32Array,
    remote: number,
    family: IpFamily,
    words: Uint32Array,
    protocol: number,
    port: number,
  ): number {
    if (this.stalePorts) this.refreshPorts();
    let peerClass = peerClassAt(data, remote);
    if (peerClass < 0) peerClass = this.peerClasses.classOf(data, remote, family, words);
    if (peerClass >= this.classCapacity && !this.resize(this.formCapacity, 2 * peerClass + 2))
      return TIER_WALK;
    let row = (this.index[form * this.classCapacity + peerClass] as number) - 1;
    if (row < 0 && (row = this.fill(form, peerClass)) < 0) return TIER_WALK;
    const portClass = this.portClassOf[(protocol << 16) | port] as number;
    return ((this.rows[row * this.words + (portClass >>> 4)] as number) >>> ((portClass & 15) << 1)) & 3;
  }

  /**
   * Bytes of the index, the rows and the port classes — what lookups read — and of the forms
   * rows are computed from (each table's rule bitmaps per peer and per port class).
   */
  get bytes(): { lookups: number; forms: number } {
    const rows = this.rows.byteLength;
    let forms = 0;
    for (const entry of this.forms) {
      if (!entry) continue;
      const { form } = entry;
      forms += form.anywhere.byteLength + form.ports.byteLength + (entry.portRules?.byteLength ?? 0);
      for (const bits of form.groups.values()) forms += bits.byteLength;
      for (const { rules } of form.cidrs) forms += rules.byteLength;
    }
    return { lookups: this.index.byteLength + rows + this.portClasses.classOf.byteLength, forms };
  }

  /** Rows held now, and peer and port classes. */
  get sizes(): { rows: number; peerClasses: number; portClasses: number } {
    return {
      rows: this.rowCount,
      peerClasses: this.peerClasses.size,
      portClasses: this.portClasses.representatives.length,
    };
  }

  /** The row deciding (form, peer class), computed now; -1 when the fast form does not apply. */
  private fill(number: number, peerClass: number): number {
    const entry = this.forms[number];
    if (!entry || !this.usable) return -1;
    const form = entry.form;
    const representatives = this.portClasses.representatives;
    if (entry.generation !== this.generation) {
      entry.portRules = portClassRules(form, representatives);
      entry.generation = this.generation;
    }
    const portRules = entry.portRules as Uint32Array;
    const width = form.width;
    if (this.peers.length < width) this.peers = new Uint32Array(2 * width);
    const peers = this.peers;
    peers.set(form.anywhere);
    const or = (bits: Uint32Array | undefined): void => {
      if (bits) for (let w = 0; w < width; w++) peers[w] = (peers[w] as number) | (bits[w] as number);
    };
    for (const group of this.peerClasses.groupsOf[peerClass] as number[]) or(form.groups.get(group));
    for (const cidr of this.peerClasses.cidrsOf[peerClass] as number[]) or(entry.cidrs.get(cidr));
    const row = this.row.fill(0);
    for (let k = 0; k < representatives.length; k++) {
      const decision = firstAction(form, peers, portRules, k * width, width);
      if (decision !== TIER_UNDECIDED)
        row[k >>> 4] = (row[k >>> 4] as number) | (decision << ((k & 15) << 1));
    }
    const key = row.join(',');
    let at = this.rowOf.get(key);
    if (at === undefined) {
      // Full: start again (rows of removed tables go; the others are computed again on use).
      if (this.rowCount >= MAX_ROWS) this.forgetRows();
      at = this.rowCount++;
      if (at * this.words + this.words > this.rows.length) {
        const grown = new Int32Array(2 * this.rows.length);
        grown.set(this.rows);
        this.rows = grown;
      }
      this.rows.set(row, at * this.words);
      this.rowOf.set(key, at);
    }
    this.index[number * this.classCapacity + peerClass] = at + 1;
    this.rowsComputed++;
    return at;
  }

  private refreshPorts(): void {
    this.portClasses.refresh();
    this.stalePorts = false;
    this.portClassOf = this.portClasses.classOf;
    this.generation++;
    const classes = this.portClasses.representatives.length;
    this.usable = classes <= MAX_PORT_CLASSES;
    this.words = Math.max(1, Math.ceil(classes / 16));
    this.row = new Int32Array(this.words);
    this.forgetRows();
  }

  /** Forgets every row (port or peer classes changed, or the rows are full). */
  private forgetRows(): void {
    this.index.fill(0);
    this.rows = new Int32Array(Math.max(64, 4 * this.words));
    this.rowCount = 0;
    this.rowOf.clear();
  }

  /** The index with room for these many forms and classes; false past the memory bound. */
  private resize(forms: number, classes: number): boolean {
    if (forms * classes * 2 > MAX_INDEX_BYTES) return false;
    const index = new Uint16Array(forms * classes);
    for (let f = 0; f < Math.min(forms, this.formCapacity); f++)
      index.set(
        this.index.subarray(f * this.classCapacity, f * this.classCapacity + this.classCapacity),
        f * classes,
      );
    this.index = index;
    this.formCapacity = forms;
    this.classCapacity = classes;
    return true;
  }
}

/** The decision of the lowest rule in both bitmaps (peers, and port class rules at `at`). */
function firstAction(
  form: TierForm,
  peers: Uint32Array,
  portRules: Uint32Array,
  at: number,
  width: number,
): number {
  for (let w = 0; w < width; w++) {
    const matched = (peers[w] as number) & (portRules[at + w] as number);
    if (matched === 0) continue;
    const action = form.actions[w * 32 + (31 - Math.clz32(matched & -matched))];
    return action === ACTION_ALLOW ? TIER_ALLOW : action === ACTION_DENY ? TIER_DENY : TIER_UNDECIDED;
  }
  return TIER_UNDECIDED;
}
