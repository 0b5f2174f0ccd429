/**
 * The identities one MapState transaction reaches, grouped by their class and by which of the
 * transaction's identity sets hold them: identities of one group get the same new class and the
 * same changes, so the MapState computes those once per group. Per identity the work is a few
 * array reads and writes (IdentityMarks) — no Map probe and no allocation — since at 100,000
 * identities that per-identity work, not the per-group computation, is most of an insertion.
 *
 * Groups are the nodes of a trie: a root per class, then one step per identity set holding the
 * identity, in the order the sets are added. An identity walks its path as the sets are read,
 * and where it stops is its group. Each set is read once, so a group has at most one step down
 * for it, made by the first of its identities in that set and kept on the group for the others
 * (an array read, not a Map probe keyed by group and set: identities of different groups
 * alternate, as pods are numbered across namespaces).
 *
 * One object serves every transaction of a map (`begin` … `release`): objects made per
 * transaction and dropped after it let V8 collect their hidden class at the next full
 * collection and throw away the optimized code that had embedded it, so each insertion ran
 * unoptimized (measured: steady-state CPU 55–75 ms against 20–25 ms kept).
 */
import { type IdentityIndex, IdentityMarks } from './identity-index.ts';
import { objectArray } from './map-entries.ts';

/**
 * What a class carries for the grouping: the root of its identities in the transaction under
 * way, kept on the class itself because identities of different classes alternate (pods are
 * numbered across namespaces), so a cache of the last class misses and a Map costs a hash probe
 * per identity.
 */
export interface Groupable {
  /** The transaction `groupRoot` belongs to (TransactionGroups' serial number). */
  groupTransaction: number;
  groupRoot: number;
}

export class TransactionGroups<C extends Groupable> {
  /** Every identity reached, in the order it was first reached. */
  readonly reached: number[] = [];
  /** Per group: the class its identities were in when the transaction began. */
  readonly classOf: (C | undefined)[] = objectArray();
  /** Per group: how many identities end there (kept as identities step down; 0 for a step passed). */
  readonly size: number[] = [];
  /** Per group: the group one step up (-1 at a root) and the set that step added. */
  private readonly parent: number[] = [];
  private readonly set: number[] = [];
  /** Per group: the set of its last step down (-1: none yet) and the group it led to. */
  private readonly downSet: number[] = [];
  private readonly downTo: number[] = [];
  /** The root of identities in no class. */
  private unclassedRoot = -1;
  /** Numbers the transactions, for Groupable. */
  private serial = 0;
  /** Each reached identity's group + 1 (0: not reached). */
  private readonly marks = new IdentityMarks();
  /** How many identities `leave` has forgotten. */
  private left = 0;

  /** `classes`: the map's class of each identity, read when an identity is first reached. */
  constructor(private readonly classes: IdentityIndex<C>) {}

  /** Starts a transaction. */
  begin(): void {
    this.serial++;
  }

  /** How many groups there are (some may have ended empty). */
  get count(): number {
    return this.size.length;
  }

  /** Identity set number `index` (each once, in increasing order) holds these identities. */
  addSet(index: number, identities: ReadonlySet<number>): void {
    const { marks, size } = this;
    let lastFrom = -1;
    let lastTo = -1;
    for (const identity of identities) {
      const mark = marks.get(identity);
      const from = mark > 0 ? mark - 1 : this.reach(identity);
      if (from !== lastFrom) {
        lastFrom = from;
        lastTo = this.step(from, index);
      }
      marks.set(identity, lastTo + 1);
      size[from] = (size[from] as number) - 1;
      size[lastTo] = (size[lastTo] as number) + 1;
    }
  }

  /** An identity that is in no set but must be regrouped (its rules changed otherwise). */
  touch(identity: number): void {
    if (this.marks.get(identity) === 0) this.reach(identity);
  }

  /**
   * The group a reached identity ends in, which the transaction then forgets: called once for
   * every reached identity, it spares `release` a pass over them.
   */
  leave(identity: number): number {
    this.left++;
    return this.marks.take(identity) - 1;
  }

  /** The sets on a group's path, in increasing order. */
  setsOf(group: number): number[] {
    const sets: number[] = [];
    for (let at = group; (this.parent[at] as number) >= 0; at = this.parent[at] as number)
      sets.push(this.set[at] as number);
    return sets.reverse();
  }

  /** Ends the transaction (call once the groups are read, also when it failed). */
  release(): void {
    if (this.left < this.reached.length) this.marks.clear(this.reached);
    this.left = 0;
    const arrays = [this.reached, this.classOf, this.size, this.parent, this.set, this.downSet, this.downTo];
    for (const array of arrays) array.length = 0;
    this.unclassedRoot = -1;
  }

  private reach(identity: number): number {
    this.reached.push(identity);
    const cls = this.classes.get(identity);
    let root: number;
    if (cls === undefined) {
      if (this.unclassedRoot < 0) this.unclassedRoot = this.node(-1, -1, cls);
      root = this.unclassedRoot;
    } else if (cls.groupTransaction === this.serial) root = cls.groupRoot;
    else {
      root = cls.groupRoot = this.node(-1, -1, cls);
      cls.groupTransaction = this.serial;
    }
    this.marks.set(identity, root + 1);
    this.size[root] = (this.size[root] as number) + 1;
    return root;
  }

  private step(from: number, set: number): number {
    if (this.downSet[from] === set) return this.downTo[from] as number;
    const to = this.node(from, set, this.classOf[from]);
    this.downSet[from] = set;
    this.downTo[from] = to;
    return to;
  }

  private node(parent: number, set: number, cls: C | undefined): number {
    this.parent.push(parent);
    this.set.push(set);
    this.classOf.push(cls);
    this.size.push(0);
    this.downSet.push(-1);
    this.downTo.push(-1);
    return this.parent.length - 1;
  }
}
