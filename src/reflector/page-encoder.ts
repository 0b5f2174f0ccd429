/**
 * A list page from the API's JSON text to what the writer needs of each item — its key, reduced
 * value, the value's digest and diagnostics — without keeping the parsed objects. Pure and
 * self-contained, so it runs in the reflector's worker threads (encode-pool.ts) or, where they
 * are not available, on the main thread with the same result.
 */
import { apiPathOf } from './api-path.ts';
import { KubeApiError, parseListBody } from '../kube/index.ts';
import type { RawApiObject, ServedResource } from '../kube/types.ts';
import { encodeObject, valueDigest } from '../reflected/index.ts';
import type { EncodedObject, KeyLayout } from '../reflected/index.ts';
import type { EncodedItem, EncodedPage } from './types.ts';

/** Encodes one object as the writer would (null when its kind is not reflected). */
export function encodeItem(layout: KeyLayout, object: RawApiObject, where: string): EncodedItem | null {
  let encoded: EncodedObject;
  try {
    encoded = encodeObject(layout, object, where);
  } catch {
    return null; // not a reflected kind
  }
  return { ...encoded, digest: encoded.value === undefined ? undefined : valueDigest(encoded.value) };
}

/** Parses and encodes a list page's text; throws a KubeApiError when it is not a list. */
export function encodePage(
  text: string,
  path: string,
  layout: KeyLayout,
  served: readonly ServedResource[],
): EncodedPage {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new KubeApiError('server', `the API server's answer to list ${path} is not JSON`);
  }
  const page = parseListBody(body, path);
  const describe = apiPathOf(served);
  return {
    resourceVersion: page.resourceVersion,
    ...(page.continue !== undefined ? { continue: page.continue } : {}),
    ...(page.remainingItemCount !== undefined ? { remainingItemCount: page.remainingItemCount } : {}),
    items: page.items.map((object) => encodeItem(layout, object, describe(object))),
  };
}
