/**
 * A resync as one diff per kind of object: what the store holds and a snapshot lacks is removed,
 * what the snapshot has that the store does not hold as the very same object is upserted, and
 * each is recorded for the resync's delta. ClusterState runs it for namespaces, pods, policies,
 * cluster policies and nodes, in the order the store needs.
 */
import type { Touched } from './types.ts';

/**
 * Removes what the store holds and the snapshot lacks, recording each as gone. The held entries
 * are copied first: removing changes the map being read.
 */
export function removeGone<T>(
  touched: Touched<T>[],
  held: Iterable<readonly [string, T]>,
  stays: (key: string) => boolean,
  remove: (key: string) => unknown,
): void {
  for (const [key, before] of [...held]) {
    if (stays(key)) continue;
    touched.push({ before });
    remove(key);
  }
}

/**
 * Upserts the snapshot's objects that the store does not hold as the very same object (a
 * changed object is a new object), recording before and after. Each object's key is made once,
 * for looking it up and for storing it (a policy's key is built from its namespace and name).
 */
export function upsertChanged<T>(
  touched: Touched<T>[],
  next: Iterable<T>,
  keyOf: (object: T) => string,
  held: (key: string) => T | undefined,
  upsert: (key: string, object: T) => unknown,
): void {
  for (const object of next) {
    const key = keyOf(object);
    const before = held(key);
    if (before === object) continue;
    // By assignment, not a spread of a temporary: this runs for every object of a resync.
    touched.push(before ? { before, after: object } : { after: object });
    upsert(key, object);
  }
}

/** A snapshot's keys as a set, built only if asked (a first resync has nothing to remove). */
export function lazyKeys(keys: () => readonly string[]): () => ReadonlySet<string> {
  let set: ReadonlySet<string> | undefined;
  return () => (set ??= new Set(keys()));
}
