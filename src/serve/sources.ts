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
  let exact: RawObject | undefined;
  let plain: RawObject | undefined;
  // Answers, findings and diagnostics name Calico's and other engines' objects with their group
  // (`NetworkPolicy.projectcalico.org ns/x`); a name by kind alone finds such an object too, but
  // only when no object has exactly that name — a Kubernetes NetworkPolicy ns/x comes first.
  for (const raw of rawObjects) {
    const identity = objectIdentity(raw.value);
    if (identity === object) exact = raw;
    else if (identity && plainIdentity(identity) === object) plain = raw;
  }
  const found = exact ?? plain;
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
