/**
 * Turning clusters into pipeline change events, for incremental-versus-full tests.
 */
export { upsertsOf, changesBetween } from '../../src/pipeline/index.ts';

/** A mix of two object lists: per object identity, the first's version, the second's, or none. */
export function mixObjects<T extends { kind?: unknown; metadata?: unknown }>(
  a: readonly T[],
  b: readonly T[],
  picks: readonly number[],
): T[] {
  const identity = (o: T): string => {
    const m = (o.metadata ?? {}) as { namespace?: string; name?: string };
    return `${String(o.kind)}/${m.namespace ?? ''}/${m.name ?? ''}`;
  };
  const byKey = new Map<string, [T | undefined, T | undefined]>();
  for (const o of a) byKey.set(identity(o), [o, byKey.get(identity(o))?.[1]]);
  for (const o of b) byKey.set(identity(o), [byKey.get(identity(o))?.[0], o]);
  return [...byKey.values()]
    .map(([x, y], i) => {
      const pick = picks[i % Math.max(picks.length, 1)] ?? 0;
      return pick === 0 ? (x ?? y) : pick === 1 ? (y ?? x) : undefined;
    })
    .filter((o): o is T => o !== undefined);
}
