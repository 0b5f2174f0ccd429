/**
 * The value codec of the key layout. `encodeObject` is the reflector's side: an API object is
 * validated by ingest's decoders exactly as a file's object would be (an invalid one is not
 * written, and its diagnostics name its API path), then reduced to what policy reads.
 * `decodeValue` is the consumers' side: a value read from etcd back into a model object, through
 * the same decoders, with diagnostics naming the key.
 */
import * as crypto from 'node:crypto';
import { decodeObject } from '../ingest/index.ts';
import { objectLocator } from '../kube/index.ts';
import type { RawApiObject } from '../kube/types.ts';
import type { KeyLayout } from './layout.ts';
import { pruneObject } from './prune.ts';
import type { DecodedValue, EncodedObject } from './types.ts';

/** The object's key, and its reduced value when it is valid and belongs in etcd. */
export function encodeObject(layout: KeyLayout, object: RawApiObject, where: string): EncodedObject {
  const kind = String(object.kind);
  const metadata = (object.metadata ?? {}) as { name?: unknown; namespace?: unknown };
  const name = typeof metadata.name === 'string' ? metadata.name : '';
  const namespace =
    typeof metadata.namespace === 'string' && metadata.namespace !== '' ? metadata.namespace : 'default';
  const key = layout.key(kind, namespace, name);
  const outcome = decodeObject({ value: object, file: where, basePath: [], locator: objectLocator(where) });
  if (!outcome.object) return { key, value: undefined, diagnostics: outcome.diagnostics };
  const value = JSON.stringify(pruneObject(object, layout.namespaced(kind) ? namespace : undefined));
  return { key, value, diagnostics: outcome.diagnostics };
}

/** A value from etcd as a model object (undefined, with diagnostics, if it does not decode). */
export function decodeValue(key: string, value: string): DecodedValue {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return { key, object: undefined, diagnostics: [] };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return { key, object: undefined, diagnostics: [] };
  }
  return decodeParsed(key, parsed);
}

/** A value already parsed from JSON (an object) as a model object, as `decodeValue` reads it. */
export function decodeParsed(key: string, parsed: object): DecodedValue {
  const outcome = decodeObject({ value: parsed, file: key, basePath: [], locator: objectLocator(key) });
  return { key, object: outcome.object, diagnostics: outcome.diagnostics };
}

/** `crypto.hash` (Node ≥ 20.12): one call and no Hash object, about half the cost of createHash per value. */
const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: 'base64') => string })
  .hash;

/** A value's digest: what the writer remembers of each value etcd holds, to skip rewriting it. */
export function valueDigest(value: string): string {
  return oneShotHash
    ? oneShotHash('sha1', value, 'base64')
    : crypto.createHash('sha1').update(value).digest('base64');
}
