/**
 * The pairs of classes that may connect over one address family, from every class's two sides
 * (side-answers.ts), in time that follows the answer rather than the square of the classes.
 *
 * Port by port (per atom: a range within which every side decides alike), a pair is allowed when
 * the source's egress lets the destination through and the destination's ingress lets the source
 * through. Sides that let every class through on that atom are *open*; open sources × open
 * destinations are kept implicitly — each class carries the atoms on which it is open — and only
 * the rest is enumerated: sources whose egress is restricted (each meets the destinations that
 * admit anyone on that atom), and open sources towards restricted destinations (each of those
 * meets the sources it admits). For each part the cheaper direction is walked — from the sources'
 * peer sets or from the destinations' — estimated from the sets' sizes before walking. A cluster
 * where nearly nothing may connect (shape (a)) costs a pass over the classes per atom; one where
 * everything may costs nothing beyond the implicit blocks.
 */
import type { Protocol } from '../../model/types.ts';
import { answerAt, type SideAnswer } from './side-answers.ts';
import {
  EMPTY_SET,
  forEachCommon,
  forEachMember,
  peersEmpty,
  peersHave,
  peersSize,
  peersUnion,
  setOf,
  setSize,
  setsEqual,
  unionSets,
  type IntervalSet,
  type PeerSet,
} from './interval-set.ts';

/** A range of ports of one protocol within which every side decides alike. */
export interface Atom {
  readonly protocol: Protocol;
  readonly from: number;
  readonly to: number;
}

/**
 * Patterns of atoms, interned: pattern 0 is "no atom", and `child(p, i)` is pattern p with atom i
 * added (atoms are added in increasing order, so each set of atoms has one pattern).
 */
export class AtomPatterns {
  readonly parent: number[] = [0];
  readonly atomOf: number[] = [-1];
  private readonly children = new Map<number, number>();

  constructor(private readonly atoms: number) {}

  child(pattern: number, atom: number): number {
    const key = pattern * this.atoms + atom;
    let next = this.children.get(key);
    if (next === undefined) {
      this.children.set(key, (next = this.parent.length));
      this.parent.push(pattern);
      this.atomOf.push(atom);
    }
    return next;
  }

  /** The atoms of a pattern, in increasing order. */
  atomsOf(pattern: number): number[] {
    const out: number[] = [];
    for (let p = pattern; p !== 0; p = this.parent[p] as number) out.push(this.atomOf[p] as number);
    return out.reverse();
  }
}

/** One family's answer: per class the atoms it is open on (as patterns), and the enumerated pairs. */
export interface FamilyJoin {
  readonly atoms: readonly Atom[];
  readonly patterns: AtomPatterns;
  /** Per class: the pattern of atoms on which its egress lets every class through (0: none). */
  readonly openEgress: Int32Array;
  /** Per class: the same for its ingress. */
  readonly openIngress: Int32Array;
  /** Pair key (source class × classes + destination class) → pattern of atoms enumerated for it. */
  readonly pairs: Map<number, number>;
  /** Membership checks made (the work beyond the passes over classes), for the statistics. */
  readonly checks: number;
}

interface SideGroup {
  readonly answer: SideAnswer;
  /** Positions of the classes with this side. */
  readonly positions: number[];
  /** The atoms so far on which this side lets every class through. */
  pattern: number;
}

/**
 * Joins the sides of one family. `egress[pos]`/`ingress[pos]` are the sides of the class at each
 * position (undefined: the class takes no part in this family); `classAt` maps positions to
 * class numbers, which the result is keyed by.
 */
export function joinFamily(
  egress: readonly (SideAnswer | undefined)[],
  ingress: readonly (SideAnswer | undefined)[],
  classAt: Int32Array,
  /** Every class of the family (a side letting all of them through is open). */
  everyone: IntervalSet,
  atoms: readonly Atom[],
  onAtom?: (done: number, total: number) => void,
): FamilyJoin {
  const n = classAt.length;
  const patterns = new AtomPatterns(atoms.length);
  const pairs = new Map<number, number>();
  const egressGroups = groupSides(egress);
  const ingressGroups = groupSides(ingress);
  const egressOf = groupIndex(egressGroups, n);
  const ingressOf = groupIndex(ingressGroups, n);
  // Sizes of the (shared) sets, computed once each.
  const sizes = new Map<IntervalSet, number>();
  const size = (set: IntervalSet): number => {
    let found = sizes.get(set);
    if (found === undefined) sizes.set(set, (found = setSize(set)));
    return found;
  };
  let checks = 0;
  const record = (sourcePos: number, destinationPos: number, atom: number): void => {
    const key = (classAt[sourcePos] as number) * n + (classAt[destinationPos] as number);
    const pattern = pairs.get(key) ?? 0;
    // Overlapping parts of a peer set may offer a pair twice on one atom.
    if (pattern !== 0 && patterns.atomOf[pattern] === atom) return;
    pairs.set(key, patterns.child(pattern, atom));
  };
  const peersSizeOf = (peers: PeerSet): number => peersSize(peers, size);
  /** Members common to a peer set and a set, visited part by part (a member may come twice). */
  const common = (peers: PeerSet, set: IntervalSet, visit: (member: number) => void): void => {
    for (const part of peers) forEachCommon(part, set, size, visit);
  };
  /** Whether a peer set is every class of the family. */
  const isEveryone = (peers: PeerSet): boolean => {
    for (const part of peers) if (setsEqual(part, everyone)) return true;
    // Parts that only together cover everyone: rare, and only worth checking when they might.
    return peers.length > 1 && peersSizeOf(peers) >= size(everyone) && setsEqual(peersUnion(peers), everyone);
  };

  atoms.forEach((atom, i) => {
    const e = egressGroups.map((g) => answerAt(g.answer, atom.protocol, atom.from));
    const v = ingressGroups.map((g) => answerAt(g.answer, atom.protocol, atom.from));
    const openE = e.map((set, k) => (egressGroups[k] as SideGroup).answer.open || isEveryone(set));
    const openI = v.map((set, k) => (ingressGroups[k] as SideGroup).answer.open || isEveryone(set));
    const restrictedE = e.map((set, k) => !openE[k] && !peersEmpty(set));
    const restrictedI = v.map((set, k) => !openI[k] && !peersEmpty(set));
    // Sources and destinations by kind on this atom.
    const openSources = membersOf(egressGroups, openE);
    const restrictedSources = membersOf(egressGroups, restrictedE);
    const openDestinations = membersOf(ingressGroups, openI);
    const restrictedDestinations = membersOf(ingressGroups, restrictedI);
    const admitting = unionSets(openDestinations, restrictedDestinations);
    egressGroups.forEach((g, k) => {
      if (openE[k]) g.pattern = patterns.child(g.pattern, i);
    });
    ingressGroups.forEach((g, k) => {
      if (openI[k]) g.pattern = patterns.child(g.pattern, i);
    });

    // Part 1: restricted sources, towards any destination that admits someone on this atom.
    if (admitting.length > 0 && restrictedSources.length > 0) {
      const sizeAdmitting = size(admitting);
      const sizeRestrictedSources = size(restrictedSources);
      let fromSources = 0;
      egressGroups.forEach((g, k) => {
        if (restrictedE[k])
          fromSources += g.positions.length * Math.min(peersSizeOf(e[k] as PeerSet), sizeAdmitting);
      });
      let fromDestinations = 0;
      ingressGroups.forEach((g, k) => {
        const admits = v[k] as PeerSet;
        if (!peersEmpty(admits))
          fromDestinations += g.positions.length * Math.min(peersSizeOf(admits), sizeRestrictedSources);
      });
      if (fromSources <= fromDestinations) {
        egressGroups.forEach((g, k) => {
          if (!restrictedE[k]) return;
          common(e[k] as PeerSet, admitting, (d) => {
            const admits = v[ingressOf[d] as number] as PeerSet;
            for (const s of g.positions) {
              checks++;
              if (peersHave(admits, s)) record(s, d, i);
            }
          });
        });
      } else {
        ingressGroups.forEach((g, k) => {
          const admits = v[k] as PeerSet;
          if (peersEmpty(admits)) return;
          common(admits, restrictedSources, (s) => {
            const reach = e[egressOf[s] as number] as PeerSet;
            for (const d of g.positions) {
              checks++;
              if (peersHave(reach, d)) record(s, d, i);
            }
          });
        });
      }
    }

    // Part 2: open sources towards restricted destinations (open × open stays implicit).
    if (openSources.length > 0 && restrictedDestinations.length > 0) {
      const sizeOpenSources = size(openSources);
      let byDestination = 0;
      ingressGroups.forEach((g, k) => {
        if (restrictedI[k])
          byDestination += g.positions.length * Math.min(peersSizeOf(v[k] as PeerSet), sizeOpenSources);
      });
      const bySource = sizeOpenSources * size(restrictedDestinations);
      if (byDestination <= bySource) {
        ingressGroups.forEach((g, k) => {
          if (!restrictedI[k]) return;
          common(v[k] as PeerSet, openSources, (s) => {
            for (const d of g.positions) record(s, d, i);
            checks += g.positions.length;
          });
        });
      } else {
        forEachMember(openSources, (s) =>
          forEachMember(restrictedDestinations, (d) => {
            checks++;
            if (peersHave(v[ingressOf[d] as number] as PeerSet, s)) record(s, d, i);
          }),
        );
      }
    }
    onAtom?.(i + 1, atoms.length);
  });

  const openEgress = new Int32Array(n);
  const openIngress = new Int32Array(n);
  for (let pos = 0; pos < n; pos++) {
    const cls = classAt[pos] as number;
    const e = egressOf[pos] as number;
    const v = ingressOf[pos] as number;
    if (e >= 0) openEgress[cls] = (egressGroups[e] as SideGroup).pattern;
    if (v >= 0) openIngress[cls] = (ingressGroups[v] as SideGroup).pattern;
  }
  return { atoms, patterns, openEgress, openIngress, pairs, checks };
}

/** Classes grouped by their side (one object per distinct side). */
function groupSides(sides: readonly (SideAnswer | undefined)[]): SideGroup[] {
  const byAnswer = new Map<SideAnswer, number[]>();
  sides.forEach((answer, pos) => {
    if (!answer) return;
    const list = byAnswer.get(answer);
    if (list) list.push(pos);
    else byAnswer.set(answer, [pos]);
  });
  return [...byAnswer].map(([answer, positions]) => ({ answer, positions, pattern: 0 }));
}

function groupIndex(groups: readonly SideGroup[], n: number): Int32Array {
  const index = new Int32Array(n).fill(-1);
  groups.forEach((g, k) => {
    for (const pos of g.positions) index[pos] = k;
  });
  return index;
}

/** The classes of the groups marked, as one set (collected, then sorted once). */
function membersOf(groups: readonly SideGroup[], keep: readonly boolean[]): IntervalSet {
  const positions: number[] = [];
  groups.forEach((g, k) => {
    if (keep[k]) for (const pos of g.positions) positions.push(pos);
  });
  return positions.length === 0 ? EMPTY_SET : setOf(positions);
}
