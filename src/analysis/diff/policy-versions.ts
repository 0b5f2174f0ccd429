/**
 * A key per policy (NetworkPolicy or cluster policy) of two inputs that is equal exactly when the
 * policies are the same object by identity and by content — what `contentKey` tells apart, found
 * by comparing each new policy with its old version instead of serializing 150,000 policies (at
 * 100,000 pods their keys were a sixth of a diff, and their strings much of its garbage).
 */
import type { Cluster, ClusterPolicy, NetworkPolicy } from '../../model/types.ts';
import {
  byNamespaceAndName,
  clusterPolicyObject,
  contentKey,
  IDENTITY_FIELDS,
  networkPolicyObject,
  sortedStrictly,
} from './objects.ts';

export function policyVersions(before: Cluster, after: Cluster): (policy: object) => string {
  const keys = new Map<object, string>();
  if (
    sortedStrictly(before.policies, byNamespaceAndName) &&
    sortedStrictly(after.policies, byNamespaceAndName)
  )
    walked(before.policies, after.policies, keys);
  else byName(before.policies, after.policies, networkPolicyObject, keys);
  // Names never meet across kinds (each starts with its kind): cluster policies apart.
  byName(before.clusterPolicies, after.clusterPolicies, clusterPolicyObject, keys);
  return (policy) => keys.get(policy) ?? contentKey(policy);
}

/**
 * NetworkPolicies of both inputs in ingest's order (namespace, name), walked side by side: an old
 * policy's key is its place in the old list, and a new one keeps it when its content is the same
 * (no name of either list is written, nor kept in a map).
 */
function walked(
  old: readonly NetworkPolicy[],
  next: readonly NetworkPolicy[],
  keys: Map<object, string>,
): void {
  old.forEach((p, i) => keys.set(p, `#${i}`));
  let i = 0;
  next.forEach((p, j) => {
    while (i < old.length && byNamespaceAndName(old[i] as NetworkPolicy, p) < 0) i++;
    const was = old[i];
    const same = was !== undefined && byNamespaceAndName(was, p) === 0 && sameContent(was, p);
    keys.set(p, same ? `#${i}` : `+${j}`);
  });
}

/** Policies matched by name; a name that occurs twice in one input falls back to the content key. */
function byName<P extends NetworkPolicy | ClusterPolicy>(
  old: readonly P[],
  next: readonly P[],
  nameOf: (policy: P) => string,
  keys: Map<object, string>,
): void {
  const named = (policies: readonly P[]): Map<string, P[]> => {
    const found = new Map<string, P[]>();
    for (const p of policies) {
      const name = nameOf(p);
      const list = found.get(name);
      if (list) list.push(p);
      else found.set(name, [p]);
    }
    return found;
  };
  const before = named(old);
  for (const [name, list] of before)
    for (const p of list) keys.set(p, list.length === 1 ? `${name}\u0000old` : contentKey(p));
  for (const [name, list] of named(next)) {
    const was = before.get(name);
    for (const p of list) {
      if (list.length > 1 || (was && was.length > 1)) keys.set(p, contentKey(p));
      else if (was && sameContent(was[0], p)) keys.set(p, `${name}\u0000old`);
      else keys.set(p, `${name}\u0000new`);
    }
  }
}

/**
 * Whether two model values are equal as `contentKey` sees them (locations left out, and the uid
 * and generation of the objects themselves), without building either key.
 */
function sameContent(a: unknown, b: unknown, top = true): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameContent(a[i], b[i], false)) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  // The two key lists walked side by side, past the keys contentKey leaves out (locations, a
  // top object's identity, and undefined values, absent to JSON) — no filtered copies: 150,000
  // policies are compared this way.
  const xs = Object.keys(x);
  const ys = Object.keys(y);
  let i = 0;
  let j = 0;
  for (;;) {
    while (i < xs.length && leftOut(x, xs[i] as string, top)) i++;
    while (j < ys.length && leftOut(y, ys[j] as string, top)) j++;
    if (i === xs.length || j === ys.length) return i === xs.length && j === ys.length;
    const k = xs[i] as string;
    // contentKey keeps key order: objects built alike list their keys alike.
    if (k !== ys[j] || !sameContent(x[k], y[k], false)) return false;
    i++;
    j++;
  }
}

function leftOut(o: Record<string, unknown>, key: string, top: boolean): boolean {
  return key === 'location' || o[key] === undefined || (top && IDENTITY_FIELDS.has(key));
}
