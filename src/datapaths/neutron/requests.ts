/**
 * Neutron API calls that turn one rendering into another. Ids are not known before creation:
 * bodies name groups and ports as `sg:<name>` and `port:<pod>`, for the caller to substitute
 * with the ids the creates return (creates come before the calls that reference them, deletes
 * after the calls that stop referencing). As the seed's resync does, a policy's rules are only
 * compared when its generation changed; otherwise its groups' rules are taken as they are.
 */
import type { NeutronRendering, SecurityGroup, SecurityGroupRule } from './model.ts';

interface NeutronRequest {
  readonly method: 'POST' | 'PUT' | 'DELETE';
  readonly path: string;
  readonly body?: unknown;
}

const ruleId = (group: string, rule: SecurityGroupRule): string => {
  const { remote_ip_prefixes: _bookkeeping, ...identity } = rule;
  void _bookkeeping;
  return `${group}|${JSON.stringify(identity)}`;
};

function ruleBody(group: string, rule: SecurityGroupRule): unknown {
  const { remote_ip_prefixes: _bookkeeping, remote_group_id, ...fields } = rule;
  void _bookkeeping;
  return {
    security_group_rule: {
      security_group_id: `sg:${group}`,
      ...fields,
      ...(remote_group_id !== undefined ? { remote_group_id: `sg:${remote_group_id}` } : {}),
    },
  };
}

export function neutronRequests(
  previous: NeutronRendering | undefined,
  next: NeutronRendering,
): NeutronRequest[] {
  const before = new Map((previous?.security_groups ?? []).map((g) => [g.name, g] as const));
  const after = new Map(next.security_groups.map((g) => [g.name, g] as const));
  const creates: NeutronRequest[] = [];
  const rules: NeutronRequest[] = [];
  const deletes: NeutronRequest[] = [];
  for (const group of next.security_groups) {
    const old = before.get(group.name);
    if (!old)
      creates.push({
        method: 'POST',
        path: '/v2.0/security-groups',
        body: { security_group: { name: group.name, description: group.description } },
      });
    if (old && group.generation !== undefined && old.generation === group.generation) continue;
    for (const change of ruleChanges(group.name, old, group)) rules.push(change);
  }
  const ports: NeutronRequest[] = [];
  const oldPorts = new Map((previous?.ports ?? []).map((p) => [p.pod, p] as const));
  for (const port of next.ports) {
    const old = oldPorts.get(port.pod);
    if (old && old.security_groups.join(',') === port.security_groups.join(',')) continue;
    ports.push({
      method: 'PUT',
      path: `/v2.0/ports/port:${port.pod}`,
      body: { port: { security_groups: port.security_groups.map((g) => `sg:${g}`) } },
    });
  }
  for (const name of before.keys())
    if (!after.has(name)) deletes.push({ method: 'DELETE', path: `/v2.0/security-groups/sg:${name}` });
  return [...creates, ...rules, ...ports, ...deletes];
}

function ruleChanges(name: string, old: SecurityGroup | undefined, group: SecurityGroup): NeutronRequest[] {
  const had = new Set((old?.rules ?? []).map((r) => ruleId(name, r)));
  const has = new Set(group.rules.map((r) => ruleId(name, r)));
  return [
    ...group.rules
      .filter((r) => !had.has(ruleId(name, r)))
      .map((r) => ({ method: 'POST' as const, path: '/v2.0/security-group-rules', body: ruleBody(name, r) })),
    ...(old?.rules ?? [])
      .filter((r) => !has.has(ruleId(name, r)))
      .map((r) => ({
        method: 'DELETE' as const,
        path: `/v2.0/security-group-rules/rule:${ruleId(name, r)}`,
      })),
  ];
}
