/**
 * `palisade agent --datapath neutron`: Kuryr's controller as a datapath lifecycle. It is not a
 * node's datapath but the cluster's — Neutron's security groups are cluster-wide and held by
 * Neutron — so one agent runs it (its `--node` names the controller, not a node), its mirror
 * decodes every policy (`scope: 'cluster'`), and each realization renders the whole cluster's
 * groups and sends Neutron only the difference from what it holds.
 *
 *   prepare  reads what Neutron holds under Palisade's tags (the seed's start-up sync); nothing is
 *            written until the first snapshot is rendered, so a restart over an unchanged cluster
 *            writes nothing at all. Neutron down at start is not fatal: it is read before the
 *            first write, which the agent retries.
 *   realize  renders, compares and applies (sync.ts: minimal, never wider, fails closed). Ordered
 *            cluster policy is refused, as `render --target neutron` refuses it: groups cannot deny.
 *   verify   reads Neutron again and lists what differs from what was realized (someone deleted a
 *            rule, unbound a port, deleted a group); repair applies the realized state again.
 *   cleanup  deletes every group Palisade's tags mark and the ports it created.
 */
import { storeReader } from '../store-reader.ts';
import type { NodeContext, NodeDatapath } from '../types.ts';
import { NeutronClient, type NeutronCallCounts } from './client.ts';
import { desiredState, type DesiredState } from './desired.ts';
import { readHeld, type HeldState } from './held.ts';
import { renderNeutron } from './render.ts';
import { NeutronSync } from './sync.ts';

/** The Neutron datapath, with what it cost (tests and benchmarks count writes). */
export interface NeutronNodeDatapath extends NodeDatapath {
  calls(): NeutronCallCounts;
  /** Pods that have no port in Neutron (none found by device id, none created). */
  portless(): readonly string[];
}

export function openNeutronNode(context: NodeContext): NeutronNodeDatapath {
  const options = context.neutron;
  if (!options) throw new Error('the neutron datapath needs the Neutron API (--neutron-url)');
  const client = new NeutronClient({
    url: options.url,
    project: options.project,
    ...(options.token !== undefined ? { headers: { 'X-Auth-Token': options.token } } : {}),
  });
  const sync = new NeutronSync(client, options.network !== undefined ? { network: options.network } : {});
  let realized: DesiredState | undefined;
  const desiredNow = (): DesiredState => desiredState(renderNeutron(context.state), context.state);
  return {
    name: 'neutron',
    scope: 'cluster',
    renderer: storeReader('neutron'),
    async prepare() {
      try {
        const held = await sync.read(() => false);
        const rules = [...held.groups.values()].reduce((n, g) => n + g.rules.size, 0);
        return `Neutron at ${options.url} holds ${held.groups.size} security groups (${rules} rules) and ${held.ports.size} ports of Palisade's: kept as they are until the first snapshot is rendered`;
      } catch (error) {
        sync.held = undefined;
        return `Neutron at ${options.url} cannot be read yet (${error instanceof Error ? error.message : String(error)}): what it holds is read before the first write`;
      }
    },
    async realize() {
      // Groups only allow: a Deny or a tier order would be enforced as nothing at all (wider).
      const ordered = context.state.allClusterPolicies().length;
      if (ordered > 0)
        throw new Error(
          `Neutron cannot express ordered cluster policy (${ordered} AdminNetworkPolicy, BaselineAdminNetworkPolicy or ClusterNetworkPolicy objects): security groups only add allows; what Neutron holds is left as it is`,
        );
      const desired = desiredNow();
      await sync.apply(desired);
      realized = desired;
    },
    counts() {
      const groups = realized?.groups.values() ?? [];
      let tables = 0;
      let rules = 0;
      for (const group of groups) {
        tables++;
        rules += group.rules.size;
      }
      return { tables, rules, sets: 0 };
    },
    async verify() {
      if (!realized) return [];
      const want = realized;
      const fresh = await readHeld(client, (key) => want.ports.has(key));
      const differences = compare(want, fresh, sync.portless);
      sync.held = fresh;
      return differences.length > 12
        ? [...differences.slice(0, 12), `and ${differences.length - 12} more`]
        : differences;
    },
    async repair() {
      if (realized) await sync.apply(realized);
    },
    async cleanup() {
      const removed = await sync.removeAll();
      return `deleted ${removed.groups} security groups and ${removed.ports} ports of Palisade's in Neutron at ${options.url}`;
    },
    async close() {},
    calls: () => client.counts(),
    portless: () => [...sync.portless].sort(),
  };
}

/** What Neutron holds that differs from what was realized, one line each. */
function compare(want: DesiredState, held: HeldState, portless: ReadonlySet<string>): string[] {
  const differences: string[] = [];
  for (const group of want.groups.values()) {
    const had = held.groups.get(group.key);
    if (!had) {
      differences.push(`security group ${group.name} is missing`);
      continue;
    }
    if (had.tags.join(',') !== group.tags.join(','))
      differences.push(`security group ${group.name}'s tags changed`);
    for (const identity of group.rules.keys())
      if (!had.rules.has(identity)) differences.push(`security group ${group.name} lacks rule ${identity}`);
    for (const identity of had.rules.keys())
      if (!group.rules.has(identity))
        differences.push(`security group ${group.name} has a rule not Palisade's: ${identity}`);
  }
  for (const key of held.groups.keys())
    if (!want.groups.has(key)) differences.push(`security group palisade-sg=${key} is not in the policy`);
  for (const port of want.ports.values()) {
    if (portless.has(port.pod)) continue;
    const had = held.ports.get(port.key);
    if (!had) {
      differences.push(`the port of ${port.pod} is missing`);
      continue;
    }
    const ids = port.groups.map((key) => held.groups.get(key)?.id ?? `missing:${key}`).sort();
    if (had.securityGroups.join(',') !== ids.join(','))
      differences.push(`the port of ${port.pod} is bound to other security groups`);
  }
  return differences;
}
