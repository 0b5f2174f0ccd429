/**
 * Findings point at fields (`spec.ingress[0].from[1]`), not just objects: the ingest layer kept
 * a locator per parsed object, and this finds the object by its identity and asks it. The last
 * definition of an object wins, as it does when the cluster is built.
 */
import type { RawObject } from '../../ingest/types.ts';
import { objectIdentity } from '../../ingest/index.ts';
import type { SourceLocation } from '../../model/types.ts';
import type { FindingLocation, ObjectLocator } from './types.ts';

export function objectLocator(rawObjects: readonly RawObject[]): ObjectLocator {
  const byIdentity = new Map<string, RawObject>();
  for (const raw of rawObjects) {
    const identity = objectIdentity(raw.value);
    if (identity) byIdentity.set(identity, raw);
  }
  return {
    locate(object, path) {
      const raw = byIdentity.get(object);
      return raw ? raw.locator.valueAt([...raw.basePath, ...path]) : undefined;
    },
  };
}

/** A locator for inputs without files (tests, live sources): every field is at the object's own location. */
export const NO_LOCATOR: ObjectLocator = { locate: () => undefined };

/** `spec.ingress[0].from[1]` from a field path. */
function pathText(path: readonly (string | number)[]): string {
  let text = '';
  for (const part of path) text += typeof part === 'number' ? `[${part}]` : text === '' ? part : `.${part}`;
  return text;
}

/**
 * The location of a field of an object: from the locator when the object came from a file,
 * else the object's own location, else nowhere (line 0).
 */
export function fieldLocation(
  locator: ObjectLocator,
  object: string,
  path: readonly (string | number)[],
  fallback: SourceLocation | undefined,
): FindingLocation {
  const where = locator.locate(object, path) ?? fallback ?? { file: '<input>', line: 0, column: 0 };
  return {
    file: where.file,
    line: where.line,
    column: where.column,
    object,
    ...(path.length > 0 ? { path: pathText(path) } : {}),
  };
}
