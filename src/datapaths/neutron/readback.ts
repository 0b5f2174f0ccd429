/**
 * Neutron's security groups, rules and ports read back through its API as a NeutronRendering —
 * groups named by their Neutron ids, rules' remote groups by id, ports with the addresses Neutron
 * gave them — so that the renderer's own interpreter (how Neutron matches a packet) judges what
 * Neutron actually holds, independently of what the controller believes it wrote. Also the lab's
 * pod network: one network with a subnet per pod CIDR, for ports to take the pods' addresses.
 */
import type { NeutronClient } from './client.ts';
import type { ApiRule } from './held.ts';
import type { NeutronRendering, SecurityGroupRule } from './model.ts';

interface ReadPort {
  readonly id: string;
  readonly name: string;
  readonly device_id: string;
  readonly security_groups: readonly string[];
  readonly fixed_ips: readonly { readonly ip_address: string }[];
  readonly port_security_enabled?: boolean;
}

/** Everything in the client's project, as the interpreter's model. */
export async function readNeutronRendering(client: NeutronClient): Promise<NeutronRendering> {
  const project = encodeURIComponent(client.project);
  const { security_groups } = await client.get<{
    security_groups: { id: string; description: string }[];
  }>(`/v2.0/security-groups?project_id=${project}`);
  const { security_group_rules } = await client.get<{ security_group_rules: ApiRule[] }>(
    `/v2.0/security-group-rules?project_id=${project}`,
  );
  const { ports } = await client.get<{ ports: ReadPort[] }>(`/v2.0/ports?project_id=${project}`);
  const rulesOf = new Map<string, SecurityGroupRule[]>();
  for (const rule of security_group_rules) {
    let list = rulesOf.get(rule.security_group_id);
    if (!list) rulesOf.set(rule.security_group_id, (list = []));
    list.push({
      direction: rule.direction,
      ethertype: rule.ethertype,
      protocol: rule.protocol as SecurityGroupRule['protocol'],
      ...(rule.port_range_min !== null ? { port_range_min: rule.port_range_min } : {}),
      ...(rule.port_range_max !== null ? { port_range_max: rule.port_range_max } : {}),
      ...(rule.remote_ip_prefix !== null ? { remote_ip_prefix: rule.remote_ip_prefix } : {}),
      ...(rule.remote_group_id !== null ? { remote_group_id: rule.remote_group_id } : {}),
    });
  }
  return {
    security_groups: security_groups.map((g) => ({
      name: g.id,
      description: g.description,
      rules: rulesOf.get(g.id) ?? [],
    })),
    ports: ports
      // A port without port security is not policed by its groups at all: it would allow
      // everything, which the interpreter must not take for "no groups".
      .filter((p) => p.port_security_enabled !== false)
      .map((p) => ({
        pod: p.name || p.device_id,
        fixed_ips: p.fixed_ips.map((f) => f.ip_address),
        security_groups: [...p.security_groups],
      })),
  };
}

/** A network for the lab's pods with one subnet per CIDR (no DHCP, no gateway); returns its id. */
export async function createPodNetwork(
  client: NeutronClient,
  name: string,
  cidrs: readonly string[],
): Promise<string> {
  const { network } = await client.post<{ network: { id: string } }>('/v2.0/networks', {
    network: { name, project_id: client.project },
  });
  for (const cidr of cidrs)
    await client.post('/v2.0/subnets', {
      subnet: {
        network_id: network.id,
        project_id: client.project,
        ip_version: cidr.includes(':') ? 6 : 4,
        cidr,
        enable_dhcp: false,
        gateway_ip: null,
      },
    });
  return network.id;
}
