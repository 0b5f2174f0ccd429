/**
 * How the reflector names an API object in diagnostics: its API path (`/api/v1/namespaces/shop/pods/web`).
 */
import { objectPath } from '../kube/index.ts';
import type { RawApiObject, ServedResource } from '../kube/types.ts';

/** The object's API path, naming it in diagnostics. */
export function apiPathOf(served: readonly ServedResource[]): (object: RawApiObject) => string {
  const byKind = new Map(served.map((s) => [s.resource.kind, s]));
  return (object) => {
    const s = byKind.get(String(object.kind));
    const metadata = (object.metadata ?? {}) as { name?: unknown; namespace?: unknown };
    const name = typeof metadata.name === 'string' ? metadata.name : '?';
    const namespace = typeof metadata.namespace === 'string' ? metadata.namespace : undefined;
    return s ? objectPath(s, namespace, name) : `${String(object.kind)} ${name}`;
  };
}
