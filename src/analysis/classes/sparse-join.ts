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
  intersectSets,
  intersectionSize,
  peersEmpty,
  peersHave,
  peersSize,
  peersUnion,
  samePeers,
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
class AtomPatterns {
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
  // `allAtoms` is set once the atoms are known (below); ALL_ATOMS records a pair on every atom.
  let allAtoms = 0;
  const record = (sourcePos: number, destinationPos: number, atom: number): void => {
    const key = (classAt[sourcePos] as number) * n + (classAt[destinationPos] as number);
    if (atom === ALL_ATOMS) {
      pairs.set(key, allAtoms);
      return;
    }
    const pattern = pairs.get(key) ?? 0;
    // Overlapping parts of a peer set may offer a pair twice on one atom.
    if (pattern !== 0 && patterns.atomOf[pattern] === atom) return;
    pairs.set(key, patterns.child(pattern, atom));
  };
  const peersSizeOf = (peers: PeerSet): number => peersSize(peers, size);
  // Members a (shared) part has in common with a set of this atom, listed once per part and set:
  // a team's namespaces are the peers of every policy of theirs, met by the same sets.
  let commonMemo = new Map<IntervalSet, Map<IntervalSet, Int32Array>>();
  const commonOf = (part: IntervalSet, set: IntervalSet): Int32Array => {
    let bySet = commonMemo.get(part);
    if (!bySet) commonMemo.set(part, (bySet = new Map<IntervalSet, Int32Array>()));
    let found = bySet.get(set);
    if (!found) {
      const members: number[] = [];
      forEachCommon(part, set, size, (m) => members.push(m));
      bySet.set(set, (found = Int32Array.from(members)));
    }
    return found;
  };
  let sizeMemo = new Map<IntervalSet, Map<IntervalSet, number>>();
  /** How many members a peer set has in common with a set (a bound: parts may overlap), counted without listing them. */
  const commonSize = (peers: PeerSet, set: IntervalSet): number => {
    let total = 0;
    for (const part of peers) {
      let bySet = sizeMemo.get(part);
      if (!bySet) sizeMemo.set(part, (bySet = new Map<IntervalSet, number>()));
      let found = bySet.get(set);
      if (found === undefined) bySet.set(set, (found = intersectionSize(part, set)));
      total += found;
    }
    return total;
  };
  /** Members common to a peer set and a set, visited part by part (a member may come twice). */
  const common = (peers: PeerSet, set: IntervalSet, visit: (member: number) => void): void => {
    for (const part of peers) for (const m of commonOf(part, set)) visit(m);
  };
  /** Whether a peer set is every class of the family. */
  const isEveryone = (peers: PeerSet): boolean => {
    for (const part of peers) if (setsEqual(part, everyone)) return true;
    // Parts that only together cover everyone: rare, and only worth checking when they might.
    return peers.length > 1 && peersSizeOf(peers) >= size(everyone) && setsEqual(peersUnion(peers), everyone);
  };

  // Sides that let the same peers through on every port (port-less rules, open sides): a pair of
  // two such is allowed on every atom or none, so it is joined once, not once per atom.
  const constantE = egressGroups.map((g) => isConstant(g.answer));
  const constantI = ingressGroups.map((g) => isConstant(g.answer));
  const constantSources = membersOf(egressGroups, constantE);
  const constantDestinations = membersOf(ingressGroups, constantI);
  const varyingSources = membersOf(
    egressGroups,
    constantE.map((c) => !c),
  );
  const varyingDestinations = membersOf(
    ingressGroups,
    constantI.map((c) => !c),
  );
  for (let i = 0; i < atoms.length; i++) allAtoms = patterns.child(allAtoms, i);

  /**
   * One pass over the pairs that may connect on one atom (or, `constant`, on every atom: pairs of
   * two constant sides only; otherwise pairs with a side that varies), recording each as `atom`.
   */
  const pass = (e: readonly PeerSet[], v: readonly PeerSet[], constant: boolean, atom: number): void => {
    commonMemo = new Map();
    sizeMemo = new Map();
    const openE = e.map((set, k) => (egressGroups[k] as SideGroup).answer.open || isEveryone(set));
    const openI = v.map((set, k) => (ingressGroups[k] as SideGroup).answer.open || isEveryone(set));
    const takesE = (k: number): boolean => !constant || constantE[k] === true;
    const takesI = (k: number): boolean => !constant || constantI[k] === true;
    const restrictedE = e.map((set, k) => takesE(k) && !openE[k] && !peersEmpty(set));
    const restrictedI = v.map((set, k) => takesI(k) && !openI[k] && !peersEmpty(set));
    const openSources = membersOf(
      egressGroups,
      openE.map((o, k) => o && takesE(k)),
    );
    const restrictedSources = membersOf(egressGroups, restrictedE);
    const admitting = unionSets(
      membersOf(
        ingressGroups,
        openI.map((o, k) => o && takesI(k)),
      ),
      membersOf(ingressGroups, restrictedI),
    );
    const restrictedDestinations = membersOf(ingressGroups, restrictedI);
    // The other end of a pair from a constant side, on one atom: only varying sides (pairs of two
    // constant ones were joined once); with `constant`, only constant ones.
    const otherEnds = (
      set: IntervalSet,
      ofConstant: boolean,
      varying: IntervalSet,
      steady: IntervalSet,
    ): IntervalSet =>
      constant ? intersectSets(set, steady) : ofConstant ? intersectSets(set, varying) : set;
    const admittingFor = [
      otherEnds(admitting, false, varyingDestinations, constantDestinations),
      otherEnds(admitting, true, varyingDestinations, constantDestinations),
    ];
    const restrictedSourcesFor = [
      otherEnds(restrictedSources, false, varyingSources, constantSources),
      otherEnds(restrictedSources, true, varyingSources, constantSources),
    ];
    const openSourcesFor = [
      otherEnds(openSources, false, varyingSources, constantSources),
      otherEnds(openSources, true, varyingSources, constantSources),
    ];
    const which = (flag: boolean | undefined): number => (flag ? 1 : 0);

    // Part 1: restricted sources, towards any destination that admits someone on this atom.
    if (admitting.length > 0 && restrictedSources.length > 0) {
      let fromSources = 0;
      egressGroups.forEach((g, k) => {
        if (restrictedE[k])
          fromSources +=
            g.positions.length *
            commonSize(e[k] as PeerSet, admittingFor[which(constantE[k])] as IntervalSet);
      });
      let fromDestinations = 0;
      ingressGroups.forEach((g, k) => {
        const admits = v[k] as PeerSet;
        if (takesI(k) && !peersEmpty(admits))
          fromDestinations +=
            g.positions.length * commonSize(admits, restrictedSourcesFor[which(constantI[k])] as IntervalSet);
      });
      if (fromSources <= fromDestinations) {
        egressGroups.forEach((g, k) => {
          if (!restrictedE[k]) return;
          common(e[k] as PeerSet, admittingFor[which(constantE[k])] as IntervalSet, (d) => {
            const admits = v[ingressOf[d] as number] as PeerSet;
            for (const s of g.positions) {
              checks++;
              if (peersHave(admits, s)) record(s, d, atom);
            }
          });
        });
      } else {
        ingressGroups.forEach((g, k) => {
          const admits = v[k] as PeerSet;
          if (!takesI(k) || peersEmpty(admits)) return;
          common(admits, restrictedSourcesFor[which(constantI[k])] as IntervalSet, (s) => {
            const reach = e[egressOf[s] as number] as PeerSet;
            for (const d of g.positions) {
              checks++;
              if (peersHave(reach, d)) record(s, d, atom);
            }
          });
        });
      }
    }

    // Part 2: open sources towards restricted destinations (open × open stays implicit).
    if (openSources.length > 0 && restrictedDestinations.length > 0) {
      let byDestination = 0;
      ingressGroups.forEach((g, k) => {
        if (restrictedI[k])
          byDestination +=
            g.positions.length *
            commonSize(v[k] as PeerSet, openSourcesFor[which(constantI[k])] as IntervalSet);
      });
      const bySource = size(openSources) * size(restrictedDestinations);
      if (byDestination <= bySource) {
        ingressGroups.forEach((g, k) => {
          if (!restrictedI[k]) return;
          common(v[k] as PeerSet, openSourcesFor[which(constantI[k])] as IntervalSet, (s) => {
            for (const d of g.positions) record(s, d, atom);
            checks += g.positions.length;
          });
        });
      } else {
        forEachMember(openSources, (s) =>
          forEachMember(restrictedDestinations, (d) => {
            const both =
              constantE[egressOf[s] as number] === true && constantI[ingressOf[d] as number] === true;
            if (both !== constant) return;
            checks++;
            if (peersHave(v[ingressOf[d] as number] as PeerSet, s)) record(s, d, atom);
          }),
        );
      }
    }
  };

  // Pairs of two constant sides, once: their answer on the first atom is their answer on all.
  if (atoms.length > 0) {
    const first = atoms[0] as Atom;
    pass(
      egressGroups.map((g) => answerAt(g.answer, first.protocol, first.from)),
      ingressGroups.map((g) => answerAt(g.answer, first.protocol, first.from)),
      true,
      ALL_ATOMS,
    );
  }
  atoms.forEach((atom, i) => {
    const e = egressGroups.map((g) => answerAt(g.answer, atom.protocol, atom.from));
    const v = ingressGroups.map((g) => answerAt(g.answer, atom.protocol, atom.from));
    // Open sides on this atom: the implicit blocks.
    egressGroups.forEach((g, k) => {
      if (g.answer.open || isEveryone(e[k] as PeerSet)) g.pattern = patterns.child(g.pattern, i);
    });
    ingressGroups.forEach((g, k) => {
      if (g.answer.open || isEveryone(v[k] as PeerSet)) g.pattern = patterns.child(g.pattern, i);
    });
    pass(e, v, false, i);
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

/** Marks a pair allowed on every atom (two constant sides). */
const ALL_ATOMS = -1;

/** Whether a side lets the same peers through on every port. */
function isConstant(answer: SideAnswer): boolean {
  if (answer.open) return true;
  const first = answer.pieces[0];
  return first !== undefined && answer.pieces.every((piece) => samePeers(piece.set, first.set));
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
