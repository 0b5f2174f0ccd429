/**
 * What Neutron should hold, keyed the way the controller finds it there again: every security
 * group carries the tag `palisade` and an identity tag `palisade-sg=<hash>` derived from what it
 * renders — a policy's group from the policy's UID (the seed: "tagged with network_policy UID;
 * hashing applied for length"), its named-port groups from the UID and the resolved number,
 * peer groups from the selector they stand for, the default groups from their direction. A
 * policy's group also carries `palisade-policy=<uid>` and `palisade-generation=<n>`. A pod's
 * port is found by its device id, the pod's UID (as Kuryr's ports carry it). Rules are identified by content (Neutron refuses two
 * equal rules in a group), with a remote group named by its identity rather than its Neutron id.
 */
import { hash } from 'node:crypto';
import { parseCidr } from '../../net/ip.ts';
import type { ReadonlyStore } from '../../state/index.ts';
import { policyKey } from '../../model/types.ts';
import type { NeutronRendering, SecurityGroupRule } from './model.ts';

export const OWNER_TAG = 'palisade';
export const GROUP_TAG = 'palisade-sg=';
const POLICY_TAG = 'palisade-policy=';
const GENERATION_TAG = 'palisade-generation=';
/** The device owner of ports the controller created itself (the lab's; in production Kuryr or Nova creates them). */
export const CREATED_OWNER = 'compute:palisade-lab';

/** A rule's fields as Neutron takes them, its remote group by identity. */
export interface RuleFields {
  readonly direction: 'ingress' | 'egress';
  readonly ethertype: 'IPv4' | 'IPv6';
  readonly protocol: string | null;
  readonly port_range_min: number | null;
  readonly port_range_max: number | null;
  readonly remote_ip_prefix: string | null;
  /** The remote group's identity tag value, or `id:<neutron id>` for a group that is not Palisade's. */
  readonly remote_group: string | null;
}

export interface DesiredGroup {
  /** The identity tag's value (after `palisade-sg=`). */
  readonly key: string;
  readonly name: string;
  readonly description: string;
  /** Every tag it carries, sorted (the owner and identity tags included). */
  readonly tags: readonly string[];
  /** Rules by identity. */
  readonly rules: ReadonlyMap<string, RuleFields>;
}

interface DesiredPort {
  /** The port's device id: the pod's UID, or a hash of `ns/name` for a pod without one. */
  readonly key: string;
  readonly pod: string;
  readonly fixedIps: readonly string[];
  /** Its groups' identities, sorted. */
  readonly groups: readonly string[];
}

export interface DesiredState {
  readonly groups: ReadonlyMap<string, DesiredGroup>;
  readonly ports: ReadonlyMap<string, DesiredPort>;
}

const digest = (text: string): string => hash('sha256', text).slice(0, 32);

/** A rule's identity: its fields in a fixed order (what Neutron compares to refuse a duplicate). */
export function ruleIdentity(rule: RuleFields): string {
  return [
    rule.direction,
    rule.ethertype,
    rule.protocol ?? '',
    rule.port_range_min ?? '',
    rule.port_range_max ?? '',
    rule.remote_ip_prefix ?? '',
    rule.remote_group ?? '',
  ].join('|');
}

/**
 * A prefix as one text however Neutron or the renderer wrote it. A /0 is no prefix at all:
 * Neutron takes `0.0.0.0/0` for the rule without one (it refuses the second as a duplicate).
 */
export function canonicalPrefix(text: string | null | undefined): string | null {
  if (text === null || text === undefined) return null;
  const parsed = parseCidr(text);
  if (!parsed.ok) return text;
  return parsed.value.prefix === 0 ? null : parsed.value.text;
}

/** A port range as one value: every port (1–65535) is no range, as a rule without one matches. */
export function canonicalRange(min: number | null, max: number | null): [number | null, number | null] {
  if (min === null || (min <= 1 && (max ?? min) >= 65535)) return [null, null];
  return [min, max ?? min];
}

/** The desired state for a rendering of the store. */
export function desiredState(rendering: NeutronRendering, state: ReadonlyStore): DesiredState {
  const policies = new Map([...state.allPolicies()].map((p) => [policyKey(p), p] as const));
  const uids = new Map<string, string>();
  for (const pod of state.allPods()) if (pod.uid !== undefined) uids.set(pod.id, pod.uid);
  // A group's identity: its rendered name, with the policy's UID when it renders a policy.
  const keyOf = new Map<string, string>();
  for (const group of rendering.security_groups) {
    const uid = group.policy !== undefined ? policies.get(group.policy)?.uid : undefined;
    keyOf.set(group.name, digest(uid !== undefined ? `${group.name}@${uid}` : group.name));
  }
  const groups = new Map<string, DesiredGroup>();
  for (const group of rendering.security_groups) {
    const key = keyOf.get(group.name)!;
    const policy = group.policy !== undefined ? policies.get(group.policy) : undefined;
    const tags = [OWNER_TAG, `${GROUP_TAG}${key}`];
    if (policy?.uid !== undefined) tags.push(`${POLICY_TAG}${policy.uid}`);
    if (policy?.generation !== undefined) tags.push(`${GENERATION_TAG}${policy.generation}`);
    const rules = new Map<string, RuleFields>();
    for (const rule of group.rules) {
      const fields = ruleFields(rule, (name) => keyOf.get(name) ?? name);
      rules.set(ruleIdentity(fields), fields);
    }
    groups.set(key, { key, name: group.name, description: group.description, tags: tags.sort(), rules });
  }
  const ports = new Map<string, DesiredPort>();
  for (const port of rendering.ports) {
    const key = uids.get(port.pod) ?? `h-${digest(port.pod)}`;
    ports.set(key, {
      key,
      pod: port.pod,
      fixedIps: port.fixed_ips,
      groups: port.security_groups.map((name) => keyOf.get(name)!).sort(),
    });
  }
  return { groups, ports };
}

function ruleFields(rule: SecurityGroupRule, keyOf: (name: string) => string): RuleFields {
  const [min, max] = canonicalRange(rule.port_range_min ?? null, rule.port_range_max ?? null);
  return {
    direction: rule.direction,
    ethertype: rule.ethertype,
    protocol: rule.protocol,
    port_range_min: min,
    port_range_max: max,
    remote_ip_prefix: canonicalPrefix(rule.remote_ip_prefix),
    remote_group: rule.remote_group_id !== undefined ? keyOf(rule.remote_group_id) : null,
  };
}
