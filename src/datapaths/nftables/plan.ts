/**
 * Planning an nftables transaction: the operations that take the applied table to the desired
 * one, looking only at what the dirty tracker says changed. Phase one ("restrict") holds only
 * what can deny more — element removals from groups, guard additions, entries moved to the
 * intersection of old and new — phase two the rest (see the renderer's file comment).
 */
import { intersectionChain, replyTwin } from './names.ts';
import { NftObjects, type Dirty } from './objects.ts';
import type { Operation } from './operations.ts';

export interface Plan {
  readonly script: string;
  readonly full: boolean;
  readonly operations: Operation[];
  /** The table's fingerprint once the script is committed (see `names.ts`). */
  readonly fingerprint?: { readonly generation: number; readonly nonce: number };
}

/** The chain verdict of a map entry: `goto t_x` → `t_x`; `return` → undefined. */
const chainOf = (verdict: string): string | undefined =>
  verdict.startsWith('goto ') ? verdict.slice('goto '.length) : undefined;

export const isIntersection = (chain: string): boolean => chain.startsWith('x_') || chain.startsWith('rx_');

/** Groups gain members only by permitting more: removed elements restrict, added ones relax. */
const isGroupSet = (name: string): boolean => name.startsWith('g_');

export function planOperations(
  applied: NftObjects,
  desired: NftObjects,
  dirty: Dirty,
  phase: 'restrict' | 'all',
): Operation[] {
  const restrictOnly = phase === 'restrict';
  const ops: Operation[] = [];
  const created = new Set<string>();
  for (const name of dirty.sets) {
    const want = desired.sets.get(name);
    if (want && !applied.sets.has(name)) {
      ops.push({ type: 'add-set', name, declaration: want.declaration, elements: [...want.elements] });
      created.add(name);
    }
  }
  for (const name of dirty.chains) {
    const lines = desired.chains.get(name);
    if (lines && !applied.chains.has(name)) ops.push({ type: 'add-chain', name, lines });
  }
  for (const [set, elements] of dirty.elements) {
    const have = applied.sets.get(set)?.elements;
    const want = desired.sets.get(set)?.elements;
    if (!have || !want || created.has(set)) continue;
    const add: string[] = [];
    const remove: string[] = [];
    for (const element of elements) {
      if (want.has(element) && !have.has(element)) add.push(element);
      else if (!want.has(element) && have.has(element)) remove.push(element);
    }
    const relaxing = isGroupSet(set) ? add : remove;
    const restricting = isGroupSet(set) ? remove : add;
    if (restricting.length > 0)
      ops.push({ type: isGroupSet(set) ? 'del-elements' : 'add-elements', set, elements: restricting });
    if (!restrictOnly && relaxing.length > 0)
      ops.push({ type: isGroupSet(set) ? 'add-elements' : 'del-elements', set, elements: relaxing });
  }
  for (const [map, keys] of dirty.entries) {
    const have = applied.maps.get(map)?.entries;
    const want = desired.maps.get(map)?.entries;
    if (!have || !want) continue;
    for (const key of keys) {
      const current = have.get(key);
      const next = want.get(key);
      if (current === next) continue;
      if (next === undefined) {
        ops.push({ type: 'del-entry', map, key });
        continue;
      }
      if (!restrictOnly) {
        ops.push({ type: 'set-entry', map, key, verdict: next, replace: current !== undefined });
        continue;
      }
      // Phase one: a new pod stays behind its guard; a changed one gets old ∧ new.
      if (current === undefined) continue;
      const from = chainOf(current);
      const to = chainOf(next);
      if (from === undefined && to !== undefined) {
        ops.push({ type: 'set-entry', map, key, verdict: next, replace: true });
      } else if (from !== undefined && to !== undefined) {
        // Reply twins (`rt_…`) get the reply twin of the intersection (`rx_…`).
        const reply = from.startsWith('r');
        const id = (chain: string): string => chain.slice(reply ? 3 : 2);
        const plain = intersectionChain(id(from), id(to));
        const both = reply ? replyTwin(plain) : plain;
        if (!applied.chains.has(both) && !ops.some((op) => op.type === 'add-chain' && op.name === both))
          ops.push({ type: 'add-chain', name: both, lines: [`jump ${from}`, `goto ${to}`] });
        ops.push({ type: 'set-entry', map, key, verdict: `goto ${both}`, replace: true });
      }
    }
  }
  if (restrictOnly) return ops;
  // A chain is deleted only once nothing jumps to it any more: callers before callees, whatever
  // order the changes were noticed in (see deletionRank).
  const gone = [...dirty.chains].filter((name) => !desired.chains.has(name) && applied.chains.has(name));
  for (const name of gone.sort(byDeletionOrder)) ops.push({ type: 'del-chain', name });
  for (const name of dirty.sets)
    if (!desired.sets.has(name) && applied.sets.has(name)) ops.push({ type: 'del-set', name });
  return ops;
}

/**
 * Which chains jump to which: intersections (`x_`) jump to tables and sequences, and one made
 * while an earlier intersection was in force jumps to that one (its name contains the earlier
 * name, so longer goes first); sequences (`s_`) go to their continuations (`c_`), which go to
 * table chains (`t_`). Reply twins (`r…`) rank as their originals.
 */
function deletionRank(name: string): number {
  const plain = name.startsWith('r') ? name.slice(1) : name;
  if (plain.startsWith('x_')) return 0;
  if (plain.startsWith('s_')) return 1;
  if (plain.startsWith('c_')) return 2;
  return 3;
}

const byDeletionOrder = (a: string, b: string): number =>
  deletionRank(a) - deletionRank(b) || b.length - a.length;

export function cloneObjects(source: NftObjects): NftObjects {
  const copy = new NftObjects();
  for (const [name, set] of source.sets)
    copy.sets.set(name, { declaration: set.declaration, elements: new Set(set.elements) });
  for (const [name, map] of source.maps)
    copy.maps.set(name, { type: map.type, entries: new Map(map.entries) });
  for (const [name, lines] of source.chains) copy.chains.set(name, lines);
  return copy;
}
