/**
 * An object with a field of the wrong type cannot be decoded, so the API server (and Palisade)
 * stopped at its type errors, and the user fixed them only to meet the object's other problems
 * in a second round. To report those too, the mistyped fields are left out of a copy, which is
 * then checked as usual; what that check says about a removed field's siblings is dropped, since
 * it may only be the removal speaking (an `endPort` "without a port" whose port was mistyped).
 */
import type { z } from 'zod';
import type { Diagnostic } from '../model/diagnostics.ts';
import { formatPath, valueAt } from './decode-context.ts';
import type { FieldPath } from './types.ts';

/**
 * A copy of `value` without the fields at the issues' paths, and the sibling test; undefined
 * when an issue is not a field's type (a list element's type, a missing field: nothing to leave
 * out without changing what the other paths name).
 */
export function pruneMistyped(
  value: unknown,
  issues: readonly z.core.$ZodIssue[],
): { value: unknown; isSibling: (diagnostic: Diagnostic) => boolean } | undefined {
  const paths: FieldPath[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') continue; // the lenient schema takes those
    if (issue.code !== 'invalid_type' && issue.code !== 'invalid_union') return undefined;
    const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
    const last = path[path.length - 1];
    if (typeof last !== 'string' || valueAt(value, path) === undefined) return undefined;
    paths.push(path);
  }
  if (paths.length === 0) return undefined;
  const copy = structuredClone(value);
  for (const path of paths) {
    const parent = valueAt(copy, path.slice(0, -1)) as Record<string, unknown>;
    delete parent[path[path.length - 1] as string];
  }
  const parents = new Set(paths.map((p) => formatPath(p.slice(0, -1))));
  const isSibling = (diagnostic: Diagnostic): boolean => {
    const at = diagnostic.path ?? '';
    for (const parent of parents) {
      // The parent itself ("a peer must set podSelector…" once its only selector is gone) or
      // one of its direct fields.
      if (at === parent) return true;
      const rest = parent === '' ? at : at.startsWith(`${parent}.`) ? at.slice(parent.length + 1) : undefined;
      if (rest !== undefined && !/[.[]/.test(rest)) return true;
    }
    return false;
  };
  return { value: copy, isSibling };
}
