/**
 * The VPP stacks do not police traffic between a pod and its own node (the host reaches its
 * pods before any ACL or session rule applies). NetworkPolicy always allows that traffic, so
 * nothing is lost for it; ordered cluster policy may deny it, and that part is not enforced.
 */
import type { CacheSnapshot } from './renderer-cache.ts';

/** The local pods whose ordered cluster policy the cache flattened into their tables, sorted. */
export function flattenedPods(snapshot: CacheSnapshot): string[] {
  return [...snapshot.pods.values()]
    .filter((known) => known.flattened !== undefined)
    .map((known) => known.pod.id)
    .sort();
}

export function ownNodeNotes(snapshot: CacheSnapshot): string[] {
  const tiered = flattenedPods(snapshot).length;
  return tiered === 0
    ? []
    : [
        `ordered cluster policy of ${tiered} pod${tiered === 1 ? '' : 's'} is not enforced on traffic between a pod and its own node: VPP does not police it`,
      ];
}
