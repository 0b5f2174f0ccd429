/**
 * What the mirror holds at a key when its value will not do: `mismatch` says why a readable
 * object cannot stand at its key (another kind, namespace or name than the key names — a
 * value copied or written by hand), and `isolatingPolicy` is what a new NetworkPolicy key that
 * cannot be read stands for until it can: its whole namespace isolated both ways (fail closed).
 */
import type { DecodedObject } from '../ingest/types.ts';
import { MATCH_ALL } from '../model/selector.ts';
import type { NetworkPolicy } from '../model/types.ts';

/** The model kind each reflected kind's values must decode to. */
const DECODED_KIND: Record<string, DecodedObject['kind']> = {
  Namespace: 'Namespace',
  Node: 'Node',
  NetworkPolicy: 'NetworkPolicy',
  AdminNetworkPolicy: 'ClusterPolicy',
  BaselineAdminNetworkPolicy: 'ClusterPolicy',
  ClusterNetworkPolicy: 'ClusterPolicy',
};

/**
 * What an unreadable new NetworkPolicy stands for: every pod of its namespace isolated both ways
 * with nothing allowed by it — what the policy might have selected, fail closed. It has the
 * policy's name, so the first readable value replaces it.
 */
export function isolatingPolicy(namespace: string, name: string, key: string): NetworkPolicy {
  return {
    apiVersion: 'networking.k8s.io/v1',
    namespace,
    name,
    podSelector: MATCH_ALL,
    affectsIngress: true,
    affectsEgress: true,
    policyTypesExplicit: true,
    ingress: [],
    egress: [],
    location: { file: key, line: 0, column: 0 },
  };
}

/** Why a readable object cannot stand at its key (another kind, namespace or name), if it cannot. */
export function mismatch(
  object: DecodedObject,
  at: { readonly kind: string; readonly namespace?: string; readonly name: string },
): string | undefined {
  // A staged policy stands at its kind's key like an enforced one.
  if (object.kind === 'Staged') return mismatch(object.object, at);
  const expected = DECODED_KIND[at.kind] ?? 'Endpoint';
  if (object.kind !== expected) return `the value is a ${object.kind}, not a ${at.kind}`;
  const [namespace, name] =
    object.kind === 'Endpoint'
      ? [object.endpoint.namespace, object.endpoint.name]
      : object.kind === 'NetworkPolicy'
        ? [object.policy.namespace, object.policy.name]
        : object.kind === 'Namespace'
          ? [undefined, object.namespace.name]
          : object.kind === 'Node'
            ? [undefined, object.node.name]
            : object.kind === 'ClusterPolicy'
              ? [undefined, object.policy.name]
              : [undefined, undefined];
  // The reflector writes none of the other kinds (Calico's, Cilium's, ServiceAccounts).
  if (name === undefined) return `the value is a ${object.kind}, which the agent does not read`;
  if (namespace !== at.namespace || name !== at.name)
    return `the value names ${namespace ? `${namespace}/` : ''}${name}, not the key's ${at.namespace ? `${at.namespace}/` : ''}${at.name}`;
  const kind =
    object.kind === 'Endpoint'
      ? object.endpoint.kind
      : object.kind === 'ClusterPolicy'
        ? object.policy.kind
        : at.kind;
  if (kind !== at.kind) return `the value is a ${kind}, not a ${at.kind}`;
  return undefined;
}
