/**
 * Objects read from the API as ingest's raw objects, so they go through the decoders and
 * validation files go through. There is no file, line or column: a location is the object's API
 * path, with the field path after `#` (`/api/v1/namespaces/shop/pods/web#status.podIP`).
 */
import type { FieldPath, Locator, RawObject } from '../ingest/types.ts';
import type { SourceLocation } from '../model/types.ts';
import type { ApiObject } from './read-cluster.ts';

export function apiRawObjects(objects: readonly ApiObject[]): RawObject[] {
  return objects.map(({ value, path }) => ({
    value,
    file: path,
    basePath: [],
    locator: objectLocator(path),
  }));
}

/** A locator naming an object by a string (its API path, or its etcd key) and fields by their path. */
export function objectLocator(name: string): Locator {
  const at = (path: FieldPath): SourceLocation => ({
    file: path.length ? `${name}#${formatPath(path)}` : name,
    line: 0,
    column: 0,
  });
  return { valueAt: at, keyAt: at };
}

function formatPath(path: FieldPath): string {
  let text = '';
  for (const part of path) text += typeof part === 'number' ? `[${part}]` : text === '' ? part : `.${part}`;
  return text;
}
