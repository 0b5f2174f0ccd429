/**
 * Canonical address-group keys and the membership rule. Keys are built from canonical selector
 * keys so equal peers in different policies share one group.
 */
import { cidrContains } from '../net/ip.ts';
import { selectorMatches } from '../model/selector.ts';
import type { Endpoint, Labels } from '../model/types.ts';
import type { AddressGroup, GroupSpec } from './types.ts';

export function groupKey(spec: GroupSpec): string {
  // Concatenated directly (no parts array): this runs for every peer of every policy.
  let key = spec.namespace !== undefined ? `ns=${spec.namespace}` : '';
  if (spec.namespaceSelector) key = joined(key, `nssel=${spec.namespaceSelector.key || '*'}`);
  if (spec.podSelector) key = joined(key, `pod=${spec.podSelector.key || '*'}`);
  if (spec.ipBlock)
    key = joined(
      key,
      `ip=${spec.ipBlock.cidr.map((c) => c.text).join('+')}${spec.ipBlock.podsOnly ? ';pods' : ''}`,
    );
  if (spec.namedPort) key = joined(key, `port=${spec.namedPort.name}/${spec.namedPort.protocol}`);
  return key;
}

/**
 * `groupKey`, made once per spec object: the compiler looks its rules up by group key, and a key
 * string made again is hashed again. For specs that are kept and asked again (cluster policy
 * peers', `clusterRuleNets`); a spec made for one use is better keyed by `groupKey`.
 */
export function sharedGroupKey(spec: GroupSpec): string {
  let key = sharedKeys.get(spec);
  if (key === undefined) sharedKeys.set(spec, (key = groupKey(spec)));
  return key;
}
const sharedKeys = new WeakMap<GroupSpec, string>();

function joined(key: string, part: string): string {
  return key === '' ? part : `${key};${part}`;
}

/** groupAdmits' answer for a pod that is not a member. */
export const NOT_ADMITTED = -1;
/** groupAdmits' answer for a member of a group without a named port. */
export const ADMITTED = 0;

/**
 * Whether a pod belongs to a group, and with which named-port number: NOT_ADMITTED, ADMITTED
 * (no named port) or the number (ports are 1–65535). A number, not an object: this runs for
 * every candidate pod of every group a resync creates. Selector groups never hold host-network
 * pods (selectors do not select them); address-based groups (ipBlock) do, since they match the
 * node address those pods use.
 */
export function groupAdmits(spec: GroupSpec, pod: Endpoint, namespaceLabels: Labels | undefined): number {
  if (pod.ips.length === 0) return NOT_ADMITTED;
  if (spec.ipBlock) {
    if (spec.ipBlock.podsOnly && pod.hostNetwork) return NOT_ADMITTED;
    if (!pod.ips.some((ip) => spec.ipBlock?.cidr.some((c) => cidrContains(c, ip)))) return NOT_ADMITTED;
  } else {
    if (pod.hostNetwork) return NOT_ADMITTED;
    if (spec.namespace !== undefined && pod.namespace !== spec.namespace) return NOT_ADMITTED;
    if (
      spec.namespaceSelector &&
      !(namespaceLabels && selectorMatches(spec.namespaceSelector, namespaceLabels))
    )
      return NOT_ADMITTED;
    if (spec.podSelector && !selectorMatches(spec.podSelector, pod.labels)) return NOT_ADMITTED;
  }
  const named = spec.namedPort;
  if (!named) return ADMITTED;
  return namedPortOf(pod, named) ?? NOT_ADMITTED;
}

/** The number of a pod's port of that name and protocol (undefined: the pod has none). */
export function namedPortOf(pod: Endpoint, named: NonNullable<GroupSpec['namedPort']>): number | undefined {
  for (const p of pod.ports) if (p.name === named.name && p.protocol === named.protocol) return p.port;
  return undefined;
}

/**
 * The numbers a named-port group's members resolve its name to, ascending. Every renderer lists
 * them in this order, so the tables an agent kept current through a history of events equal the
 * ones a fresh render of the same cluster makes (a member's arrival order would otherwise decide).
 */
export function portNumbers(group: AddressGroup | undefined): Iterable<number> {
  if (!group) return [];
  // One number (the usual case) needs no order: its keys as they are, nothing made per call.
  if (group.ports.size < 2) return group.ports.keys();
  return [...group.ports.keys()].sort((a, b) => a - b);
}
