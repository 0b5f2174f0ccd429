/**
 * Where an object named in an explanation, a finding or a diff came from: its file, line and
 * column, and its content as YAML, so the page can show it next to the link. Only objects of
 * the input are found: the API never reads a path a request names.
 */
import { stringify } from 'yaml';
import type { RawObject } from '../ingest/types.ts';
import { objectIdentity } from '../ingest/index.ts';
import type { ObjectSource } from './api-types.ts';

/** The last definition of the object in the input (as the cluster is built), or undefined. */
export function objectSource(rawObjects: readonly RawObject[], object: string): ObjectSource | undefined {
  let found: RawObject | undefined;
  // Findings and explanations name Calico's and other engines' objects with their group; the
  // diagnostics of reading them, by kind alone (`NetworkPolicy ns/x`): either finds it.
  for (const raw of rawObjects) {
    const identity = objectIdentity(raw.value);
    if (identity === object || (identity && plainIdentity(identity) === object)) found = raw;
  }
  if (!found) return undefined;
  const at = found.locator.valueAt(found.basePath);
  return { object, file: found.file, line: at.line, column: at.column, yaml: stringify(found.value) };
}

/** `NetworkPolicy.projectcalico.org ns/x` → `NetworkPolicy ns/x`: the name without its group. */
function plainIdentity(identity: string): string {
  const space = identity.indexOf(' ');
  const kind = identity.slice(0, space);
  const dot = kind.indexOf('.');
  return dot < 0 ? identity : `${kind.slice(0, dot)}${identity.slice(space)}`;
}
