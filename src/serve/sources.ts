/**
 * Where an object named in an explanation, a finding or a diff came from: its file, line and
 * column, and its content as YAML, so the page can show it next to the link. Only objects of
 * the input are found: the API never reads a path a request names.
 */
import { stringify } from 'yaml';
import type { RawObject } from '../ingest/types.ts';
import { rawIdentity } from '../analysis/index.ts';
import type { ObjectSource } from './api-types.ts';

/** The last definition of the object in the input (as the cluster is built), or undefined. */
export function objectSource(rawObjects: readonly RawObject[], object: string): ObjectSource | undefined {
  let found: RawObject | undefined;
  for (const raw of rawObjects) if (rawIdentity(raw.value) === object) found = raw;
  if (!found) return undefined;
  const at = found.locator.valueAt(found.basePath);
  return { object, file: found.file, line: at.line, column: at.column, yaml: stringify(found.value) };
}
