/**
 * What Neutron holds under Palisade's tags, read through its API: the security groups tagged
 * `palisade` with their rules, and the ports whose device id is a pod's identity (Kuryr's way). Read at start (the
 * seed's controller start-up sync), on verification, and for ports not found yet. Rules are keyed
 * by the same identity the desired state uses, so the two compare directly.
 */
import type { NeutronClient } from './client.ts';
import {
  canonicalPrefix,
  canonicalRange,
  CREATED_OWNER,
  GROUP_TAG,
  OWNER_TAG,
  ruleIdentity,
  type RuleFields,
} from './desired.ts';

interface HeldRule {
  readonly id: string;
  readonly fields: RuleFields;
}

export interface HeldGroup {
  readonly id: string;
  readonly key: string;
  tags: string[];
  /** Rules by identity. */
  readonly rules: Map<string, HeldRule>;
}

export interface HeldPort {
  readonly id: string;
  readonly key: string;
  /** Its groups' Neutron ids, as Neutron holds them. */
  securityGroups: string[];
  fixedIps: string[];
  /** Created by this controller (the lab's ports): deleted with its pod. */
  readonly created: boolean;
}

export interface HeldState {
  /** Groups by identity. */
  readonly groups: Map<string, HeldGroup>;
  /** Ids of second groups with an identity already held (a create retried after a lost answer): deleted. */
  readonly strays: string[];
  /** Ports by pod identity. */
  readonly ports: Map<string, HeldPort>;
}

interface ApiGroup {
  readonly id: string;
  readonly tags?: readonly string[];
  readonly description?: string;
}

export interface ApiRule {
  readonly id: string;
  readonly security_group_id: string;
  readonly direction: 'ingress' | 'egress';
  readonly ethertype: 'IPv4' | 'IPv6';
  readonly protocol: string | null;
  readonly port_range_min: number | null;
  readonly port_range_max: number | null;
  readonly remote_ip_prefix: string | null;
  readonly remote_group_id: string | null;
}

interface ApiPort {
  readonly id: string;
  readonly device_id?: string;
  readonly device_owner?: string;
  readonly security_groups?: readonly string[];
  readonly fixed_ips?: readonly { readonly ip_address: string }[];
}

const PORT_FIELDS = ['id', 'device_id', 'device_owner', 'security_groups', 'fixed_ips']
  .map((f) => `fields=${f}`)
  .join('&');
const GROUP_FIELDS = ['id', 'tags', 'description'].map((f) => `fields=${f}`).join('&');

/** A tag's value after its prefix, on an object's tags. */
function tagValue(tags: readonly string[] | undefined, prefix: string): string | undefined {
  return tags?.find((t) => t.startsWith(prefix))?.slice(prefix.length);
}

/** The identity a group's description records (`[palisade-sg=<key>]`), for a group whose tags were never set. */
function describedKey(description: string | undefined): string | undefined {
  return /\[palisade-sg=([0-9a-f]+)\]/.exec(description ?? '')?.[1];
}

/**
 * Everything of Palisade's in its project: groups tagged `palisade` (or, when a crash came
 * between a group's creation and its tags, described as Palisade's), their rules, and the ports
 * of pods (device id = the pod's identity) that `isPod` recognizes or that this controller created.
 */
export async function readHeld(client: NeutronClient, isPod: (key: string) => boolean): Promise<HeldState> {
  const project = encodeURIComponent(client.project);
  const { security_groups } = await client.get<{ security_groups: ApiGroup[] }>(
    `/v2.0/security-groups?project_id=${project}&${GROUP_FIELDS}`,
  );
  const groups = new Map<string, HeldGroup>();
  const byId = new Map<string, HeldGroup>();
  const strays: string[] = [];
  for (const group of security_groups) {
    const tagged = group.tags?.includes(OWNER_TAG) ?? false;
    const key = tagged ? tagValue(group.tags, GROUP_TAG) : describedKey(group.description);
    if (key === undefined) continue; // not one of ours
    if (groups.has(key)) {
      strays.push(group.id);
      continue;
    }
    const held: HeldGroup = { id: group.id, key, tags: [...(group.tags ?? [])].sort(), rules: new Map() };
    groups.set(key, held);
    byId.set(group.id, held);
  }
  const { security_group_rules } = await client.get<{ security_group_rules: ApiRule[] }>(
    `/v2.0/security-group-rules?project_id=${project}`,
  );
  const keyOfId = (id: string): string => byId.get(id)?.key ?? `id:${id}`;
  for (const rule of security_group_rules) {
    const group = byId.get(rule.security_group_id);
    if (!group) continue;
    const fields = heldRuleFields(rule, keyOfId);
    group.rules.set(ruleIdentity(fields), { id: rule.id, fields });
  }
  const { ports } = await client.get<{ ports: ApiPort[] }>(
    `/v2.0/ports?project_id=${project}&${PORT_FIELDS}`,
  );
  const held = new Map<string, HeldPort>();
  for (const port of ports) {
    const found = heldPort(port);
    if (found && (found.created || isPod(found.key))) held.set(found.key, found);
  }
  return { groups, strays, ports: held };
}

/** Ports of these pods (made by someone else: a CNI, Nova), by device id, in chunks that fit a URL. */
export async function findPorts(client: NeutronClient, keys: readonly string[]): Promise<HeldPort[]> {
  const found: HeldPort[] = [];
  for (let i = 0; i < keys.length; i += 40) {
    const ids = keys
      .slice(i, i + 40)
      .map((k) => `device_id=${encodeURIComponent(k)}`)
      .join('&');
    const { ports } = await client.get<{ ports: ApiPort[] }>(`/v2.0/ports?${ids}&${PORT_FIELDS}`);
    for (const port of ports) {
      const held = heldPort(port);
      if (held) found.push(held);
    }
  }
  return found;
}

function heldPort(port: ApiPort): HeldPort | undefined {
  if (!port.device_id) return undefined;
  return {
    id: port.id,
    key: port.device_id,
    securityGroups: [...(port.security_groups ?? [])].sort(),
    fixedIps: (port.fixed_ips ?? []).map((f) => f.ip_address),
    created: port.device_owner === CREATED_OWNER,
  };
}

function heldRuleFields(rule: ApiRule, keyOfId: (id: string) => string): RuleFields {
  const [min, max] = canonicalRange(rule.port_range_min ?? null, rule.port_range_max ?? null);
  return {
    direction: rule.direction,
    ethertype: rule.ethertype,
    protocol: rule.protocol ?? null,
    port_range_min: min,
    port_range_max: max,
    remote_ip_prefix: canonicalPrefix(rule.remote_ip_prefix),
    remote_group: rule.remote_group_id ? keyOfId(rule.remote_group_id) : null,
  };
}
