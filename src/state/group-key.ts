/**
 * Canonical address-group keys and the membership rule. Keys are built from canonical selector
 * keys so equal peers in different policies share one group.
 */
import { cidrContains } from '../net/ip.ts';
import { selectorMatches } from '../model/selector.ts';
import type { Endpoint, Labels } from '../model/types.ts';
import type { GroupSpec } from './types.ts';

export function groupKey(spec: GroupSpec): string {
  // Concatenated directly (no parts array): this runs for every peer of every policy.
  let key = spec.namespace !== undefined ? `ns=${spec.namespace}` : '';
  if (spec.namespaceSelector) key = joined(key, `nssel=${spec.namespaceSelector.key || '*'}`);
  if (spec.podSelector) key = joined(key, `pod=${spec.podSelector.key || '*'}`);
  if (spec.ipBlock) key = joined(key, `ip=${spec.ipBlock.cidr.map((c) => c.text).join('+')}`);
  if (spec.namedPort) key = joined(key, `port=${spec.namedPort.name}/${spec.namedPort.protocol}`);
  return key;
}

function joined(key: string, part: string): string {
  return key === '' ? part : `${key};${part}`;
}

/**
 * Whether a pod belongs to a group, and with which named-port number. Selector groups never
 * hold host-network pods (selectors do not select them); address-based groups (ipBlock) do,
 * since they match the node address those pods use.
 */
export function groupAdmits(
  spec: GroupSpec,
  pod: Endpoint,
  namespaceLabels: Labels | undefined,
): { admitted: boolean; port?: number } {
  if (pod.ips.length === 0) return { admitted: false };
  if (spec.ipBlock) {
    if (!pod.ips.some((ip) => spec.ipBlock?.cidr.some((c) => cidrContains(c, ip))))
      return { admitted: false };
  } else {
    if (pod.hostNetwork) return { admitted: false };
    if (spec.namespace !== undefined && pod.namespace !== spec.namespace) return { admitted: false };
    if (
      spec.namespaceSelector &&
      !(namespaceLabels && selectorMatches(spec.namespaceSelector, namespaceLabels))
    ) {
      return { admitted: false };
    }
    if (spec.podSelector && !selectorMatches(spec.podSelector, pod.labels)) return { admitted: false };
  }
  if (!spec.namedPort) return { admitted: true };
  const { name, protocol } = spec.namedPort;
  const port = pod.ports.find((p) => p.name === name && p.protocol === protocol)?.port;
  return port === undefined ? { admitted: false } : { admitted: true, port };
}
