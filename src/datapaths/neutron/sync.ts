/**
 * Kuryr's controller applying a desired state to Neutron: only the difference from what Neutron
 * holds, in an order that never allows more than the old state or the new one did, and that fails
 * closed when Neutron refuses part of it.
 *
 *   1. groups that are missing are created, their tags set, and the rules Neutron adds to every
 *      new group (egress to anywhere) deleted before any port is bound to them; changed tags
 *      (a policy's new generation) are rewritten;
 *   2. missing rules are added (in bulk, one call per group; one by one when the bulk is refused,
 *      so a duplicate is adopted and an exhausted quota stops only what it must);
 *   3. ports are bound to their groups — only groups that exist: a pod whose group could not be
 *      created loses access rather than keeping what it should no longer have; the lab's ports are
 *      created here, with their groups already set (never Neutron's permissive `default` group);
 *   4. rules no longer wanted are deleted, then groups no longer wanted. Ports of pods that are
 *      gone are released before any port is bound (a new pod may have the old one's address).
 *
 * A refusal is recorded and the rest goes on; the call then throws one error naming what could
 * not be done, and the agent retries with backoff. What succeeded is remembered (`held`), so a
 * retry sends only what is still missing. A 404 for something being deleted is success; a 409 for
 * a rule that exists adopts it; a port that vanished is forgotten (the lab's is recreated).
 */
import { existingRuleId, NeutronError, type NeutronClient } from './client.ts';
import { CREATED_OWNER, type DesiredGroup, type DesiredState, type RuleFields } from './desired.ts';
import { findPorts, readHeld, type HeldGroup, type HeldPort, type HeldState } from './held.ts';

interface SyncOptions {
  /** The network the lab's ports are created in (absent: ports are found, never created). */
  readonly network?: string;
  /** Most rules in one bulk create. */
  readonly bulk?: number;
}

/** Some of a desired state could not be applied; `problems` says what, one line each. */
class NeutronSyncError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(
      `Neutron refused ${problems.length} ${problems.length === 1 ? 'change' : 'changes'}: ${problems.slice(0, 3).join('; ')}${problems.length > 3 ? `; and ${problems.length - 3} more` : ''}`,
    );
  }
}

interface ApiCreatedGroup {
  readonly security_group: {
    readonly id: string;
    readonly security_group_rules?: readonly { readonly id: string }[];
  };
}

export class NeutronSync {
  /** What Neutron holds, as last read and since changed by this controller. */
  held: HeldState | undefined;
  /** Desired pods with no port in Neutron (none created, none found). */
  portless = new Set<string>();
  private problems: string[] = [];
  private quotaHit = false;

  constructor(
    private readonly client: NeutronClient,
    private readonly options: SyncOptions = {},
  ) {}

  async read(isPod: (key: string) => boolean): Promise<HeldState> {
    this.held = await readHeld(this.client, isPod);
    return this.held;
  }

  async apply(desired: DesiredState): Promise<void> {
    const held = this.held ?? (await this.read((key) => desired.ports.has(key)));
    this.problems = [];
    this.quotaHit = false;
    for (const group of desired.groups.values()) await this.ensureGroup(held, group);
    for (const group of desired.groups.values()) await this.addRules(held, group);
    // Ports of pods that are gone first: their addresses may be a new pod's now.
    for (const port of [...held.ports.values()])
      if (!desired.ports.has(port.key)) await this.releasePort(held, port);
    await this.bindPorts(held, desired);
    for (const group of desired.groups.values()) {
      const had = held.groups.get(group.key);
      if (had) await this.deleteRules(had, (identity) => !group.rules.has(identity));
    }
    for (const group of [...held.groups.values()])
      if (!desired.groups.has(group.key)) await this.deleteGroup(held, group);
    await this.deleteStrays(held);
    if (this.problems.length > 0) throw new NeutronSyncError(this.problems);
  }

  /** Second copies of a group (bound to no port of Palisade's: bindings name the first). */
  private async deleteStrays(held: HeldState): Promise<void> {
    for (const id of [...held.strays]) {
      const done = await this.attempt(`deleting a duplicate group ${id}`, () =>
        this.deleteQuietly(`/v2.0/security-groups/${id}`),
      );
      if (done !== undefined) held.strays.splice(held.strays.indexOf(id), 1);
    }
  }

  /** Deletes everything Palisade's tags mark (the lab's ports, then every group). */
  async removeAll(): Promise<{ groups: number; ports: number }> {
    const held = await this.read(() => false);
    this.problems = [];
    const ports = held.ports.size;
    for (const port of [...held.ports.values()]) await this.releasePort(held, port);
    const groups = held.groups.size + held.strays.length;
    for (const group of [...held.groups.values()]) await this.deleteGroup(held, group);
    await this.deleteStrays(held);
    if (this.problems.length > 0) throw new NeutronSyncError(this.problems);
    return { groups, ports };
  }

  private async ensureGroup(held: HeldState, group: DesiredGroup): Promise<void> {
    let had = held.groups.get(group.key);
    if (!had) {
      const created = await this.attempt(`creating group ${group.name}`, () =>
        this.client.post<ApiCreatedGroup>('/v2.0/security-groups', {
          security_group: {
            name: group.name.slice(0, 255),
            // The identity, also where a crash before the tags are set still finds it.
            description: `${group.description} [palisade-sg=${group.key}]`.slice(0, 255),
            project_id: this.client.project,
          },
        }),
      );
      if (!created) return;
      had = { id: created.security_group.id, key: group.key, tags: [], rules: new Map() };
      held.groups.set(group.key, had);
      // Neutron gives every new group rules of its own (egress anywhere): gone before any binding.
      const defaults = (created.security_group.security_group_rules ?? []).map((r) => r.id);
      for (const id of defaults)
        await this.attempt(`deleting Neutron's default rule of ${group.name}`, () =>
          this.deleteQuietly(`/v2.0/security-group-rules/${id}`),
        );
    }
    if (had.tags.join(',') !== group.tags.join(',')) {
      const tagged = await this.attempt(`tagging group ${group.name}`, () =>
        this.client.put(`/v2.0/security-groups/${had.id}/tags`, { tags: group.tags }).then(() => true),
      );
      if (tagged !== undefined) had.tags = [...group.tags];
    }
  }

  private async addRules(held: HeldState, group: DesiredGroup): Promise<void> {
    const had = held.groups.get(group.key);
    if (!had || this.quotaHit) return;
    const missing: [string, Record<string, unknown>][] = [];
    for (const [identity, rule] of group.rules) {
      if (had.rules.has(identity)) continue;
      const body = this.ruleBody(held, had, rule);
      if (body) missing.push([identity, body]);
      else this.problems.push(`rule ${identity} of ${group.name}: its remote group does not exist`);
    }
    const size = this.options.bulk ?? 100;
    for (let i = 0; i < missing.length && !this.quotaHit; i += size) {
      const chunk = missing.slice(i, i + size);
      try {
        const { security_group_rules } = await this.client.post<{ security_group_rules: { id: string }[] }>(
          '/v2.0/security-group-rules',
          { security_group_rules: chunk.map(([, body]) => body) },
        );
        chunk.forEach(([identity], n) => this.recordRule(had, identity, group, security_group_rules[n]!.id));
      } catch (error) {
        if (!(error instanceof NeutronError) || error.kind === 'unreachable') throw error;
        // The bulk is all or nothing: one by one, a duplicate is adopted and a quota stops here.
        for (const [identity, body] of chunk) await this.addRule(had, group, identity, body);
      }
    }
  }

  private async addRule(
    had: HeldGroup,
    group: DesiredGroup,
    identity: string,
    body: Record<string, unknown>,
  ): Promise<void> {
    if (this.quotaHit) return;
    try {
      const { security_group_rule } = await this.client.post<{ security_group_rule: { id: string } }>(
        '/v2.0/security-group-rules',
        { security_group_rule: body },
      );
      this.recordRule(had, identity, group, security_group_rule.id);
    } catch (error) {
      if (!(error instanceof NeutronError) || error.kind === 'unreachable') throw error;
      const existing = error.kind === 'exists' ? existingRuleId(error) : undefined;
      if (existing) return this.recordRule(had, identity, group, existing);
      if (error.kind === 'quota') this.quotaHit = true;
      this.problems.push(`adding a rule to ${group.name}: ${error.message}`);
    }
  }

  private recordRule(had: HeldGroup, identity: string, group: DesiredGroup, id: string): void {
    had.rules.set(identity, { id, fields: group.rules.get(identity)! });
  }

  private ruleBody(held: HeldState, group: HeldGroup, rule: RuleFields): Record<string, unknown> | undefined {
    const remote = rule.remote_group !== null ? held.groups.get(rule.remote_group)?.id : undefined;
    if (rule.remote_group !== null && remote === undefined) return undefined;
    return {
      security_group_id: group.id,
      project_id: this.client.project,
      direction: rule.direction,
      ethertype: rule.ethertype,
      protocol: rule.protocol,
      ...(rule.port_range_min !== null
        ? { port_range_min: rule.port_range_min, port_range_max: rule.port_range_max }
        : {}),
      ...(rule.remote_ip_prefix !== null ? { remote_ip_prefix: rule.remote_ip_prefix } : {}),
      ...(remote !== undefined ? { remote_group_id: remote } : {}),
    };
  }

  private async bindPorts(held: HeldState, desired: DesiredState): Promise<void> {
    const missing = [...desired.ports.keys()].filter((key) => !held.ports.has(key));
    if (missing.length > 0 && this.options.network === undefined)
      for (const port of await findPorts(this.client, missing)) held.ports.set(port.key, port);
    // The lab's ports whose pod's addresses changed are made again: deleted first, so that
    // addresses moving between pods are free before any port takes them.
    for (const port of desired.ports.values()) {
      const had = held.ports.get(port.key);
      if (had?.created && had.fixedIps.join(',') !== port.fixedIps.join(','))
        await this.releasePort(held, had);
    }
    this.portless = new Set();
    for (const port of desired.ports.values()) {
      // Only groups that exist: one that could not be created is left out (narrower, not wider).
      const groups = port.groups
        .map((key) => held.groups.get(key)?.id)
        .filter((id): id is string => id !== undefined)
        .sort();
      const had = held.ports.get(port.key);
      if (!had) {
        if (this.options.network === undefined) this.portless.add(port.pod);
        else await this.createPort(held, port.key, port.pod, port.fixedIps, groups);
        continue;
      }
      if (had.securityGroups.join(',') === groups.join(',')) continue;
      try {
        await this.client.put(`/v2.0/ports/${had.id}`, { port: { security_groups: groups } });
        had.securityGroups = groups;
      } catch (error) {
        if (!(error instanceof NeutronError) || error.kind === 'unreachable') throw error;
        if (error.kind === 'not-found') held.ports.delete(port.key); // vanished: found or made again next time
        this.problems.push(`binding the port of ${port.pod}: ${error.message}`);
      }
    }
  }

  private async createPort(
    held: HeldState,
    key: string,
    pod: string,
    fixedIps: readonly string[],
    groups: readonly string[],
  ): Promise<void> {
    const created = await this.attempt(`creating the port of ${pod}`, () =>
      this.client.post<{ port: { id: string } }>('/v2.0/ports', {
        port: {
          network_id: this.options.network,
          project_id: this.client.project,
          name: pod,
          device_id: key,
          device_owner: CREATED_OWNER,
          fixed_ips: fixedIps.map((ip_address) => ({ ip_address })),
          security_groups: groups,
        },
      }),
    );
    if (created)
      held.ports.set(key, {
        id: created.port.id,
        key,
        securityGroups: [...groups],
        fixedIps: [...fixedIps],
        created: true,
      });
  }

  /** A port whose pod is gone: the lab's is deleted; another's keeps only groups not Palisade's. */
  private async releasePort(held: HeldState, port: HeldPort): Promise<void> {
    const ours = new Set([...held.groups.values()].map((g) => g.id));
    if (port.created) {
      const done = await this.attempt(`deleting the port ${port.id}`, () =>
        this.deleteQuietly(`/v2.0/ports/${port.id}`),
      );
      if (done !== undefined) held.ports.delete(port.key);
      return;
    }
    const kept = port.securityGroups.filter((id) => !ours.has(id));
    if (kept.length !== port.securityGroups.length) {
      const done = await this.attempt(`unbinding the port ${port.id}`, () =>
        this.client.put(`/v2.0/ports/${port.id}`, { port: { security_groups: kept } }).then(() => true),
      );
      if (done === undefined) return;
    }
    held.ports.delete(port.key);
  }

  private async deleteRules(had: HeldGroup, unwanted: (identity: string) => boolean): Promise<void> {
    for (const [identity, rule] of [...had.rules])
      if (unwanted(identity)) {
        const done = await this.attempt(`deleting a rule of ${had.key}`, () =>
          this.deleteQuietly(`/v2.0/security-group-rules/${rule.id}`),
        );
        if (done !== undefined) had.rules.delete(identity);
      }
  }

  private async deleteGroup(held: HeldState, group: HeldGroup): Promise<void> {
    const done = await this.attempt(`deleting group ${group.key}`, () =>
      this.deleteQuietly(`/v2.0/security-groups/${group.id}`),
    );
    if (done !== undefined) held.groups.delete(group.key);
  }

  /** A DELETE for which 404 (already gone) is success. */
  private async deleteQuietly(path: string): Promise<true> {
    try {
      await this.client.delete(path);
    } catch (error) {
      if (!(error instanceof NeutronError) || error.kind !== 'not-found') throw error;
    }
    return true;
  }

  /** Runs one call; a refusal is recorded (undefined), Neutron unreachable aborts the whole apply. */
  private async attempt<T>(what: string, call: () => Promise<T>): Promise<T | undefined> {
    try {
      return await call();
    } catch (error) {
      if (!(error instanceof NeutronError) || error.kind === 'unreachable') throw error;
      if (error.kind === 'quota') this.quotaHit = true;
      this.problems.push(`${what}: ${error.message}`);
      return undefined;
    }
  }
}
