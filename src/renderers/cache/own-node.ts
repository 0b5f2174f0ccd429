/**
 * The VPP stacks do not police traffic between a pod and its own node (the host reaches its
 * pods before any ACL or session rule applies). NetworkPolicy always allows that traffic, so
 * nothing is lost for it; ordered cluster policy may deny it, and that part is not enforced.
 */
import type { CacheSnapshot } from './renderer-cache.ts';

export function ownNodeNotes(snapshot: CacheSnapshot): string[] {
  const tiered = [...snapshot.pods.values()].filter((known) => known.expanded !== undefined).length;
  return tiered === 0
    ? []
    : [
        `ordered cluster policy of ${tiered} pod${tiered === 1 ? '' : 's'} is not enforced on traffic between a pod and its own node: VPP does not police it`,
      ];
}
