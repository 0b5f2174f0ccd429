/**
 * The nftables renderer: one node's compiled tables as one `inet palisade` table.
 *
 * - Every distinct rule table is one chain (`t_<table id>`), shared by all pods that have it.
 * - Per-pod dispatch is a verdict map per direction and family, keyed by pod address: one O(1)
 *   lookup per packet, never a chain over pods.
 * - Address groups are named sets, filled from the store and updated element by element.
 * - Established and related packets are accepted before policy, so replies always pass.
 * - Fail closed: an address of a local pod (or of the node's pod CIDRs) without a dispatch entry
 *   is dropped.
 *
 * Commits are incremental nft transactions listing only what changed. Between nodes, an update
 * can run in two phases (after Mizar's "delete first, insert after"): `restrict` moves every
 * changed pod to what both the old and the new policy permit, `relax` then to the new policy.
 * When every node finishes the first phase before any starts the second, no packet crossing two
 * nodes meets a mix of versions that permits what neither version permits.
 */
import type { Cidr, IpAddress, IpFamily } from '../../net/ip.ts';
import { formatIp } from '../../net/ip.ts';
import type { RuleTable } from '../../model/rule.ts';
import type { Endpoint } from '../../model/types.ts';
import {
  compiledAllows,
  PARTITION_SEPARATOR,
  stateGroupLookup,
  type GroupLookup,
  type PodTables,
} from '../../configurator/index.ts';
import type { ClusterState } from '../../state/index.ts';
import type { NftRunner, TrackedFlow } from '../../dataplane/index.ts';
import type { Renderer, RendererTxn, RenderedPod } from '../types.ts';
import {
  addressProtocol,
  addressType,
  dispatchMap,
  FAMILIES,
  groupSet,
  intersectionChain,
  localPodsSet,
  podCidrSet,
  tableChain,
} from './names.ts';
import { NftObjects, Dirty, replaceTableScript, tableBlock, type SetDeclaration } from './objects.ts';
import { applyOperations, operationsScript, type Operation } from './operations.ts';
import { renderTableChain } from './table-chain.ts';

export interface NftablesOptions {
  /** The store the compiled tables came from: group members are read from it. */
  readonly state: ClusterState;
  readonly runner: NftRunner;
  /** The node's pod CIDRs: addresses in them without a rendered pod are dropped. */
  readonly podCidrs?: readonly Cidr[];
  /**
   * Traffic between the node itself and its pods (kubelet probes, node-local DNS) bypasses
   * policy, as the reference evaluator's default says. Default true.
   */
  readonly allowNodeLocal?: boolean;
  /** The node's own addresses (for deciding which tracked flows are node-local). */
  readonly nodeAddresses?: readonly IpAddress[];
}

export interface NftablesChanges {
  /** The transaction script that `commit` applies (empty when nothing changed). */
  readonly script: string;
  readonly full: boolean;
  readonly operations: number;
}

interface LocalPod {
  readonly ips: readonly IpAddress[];
  readonly tables: PodTables | undefined;
  readonly verdicts: { readonly ingress: string; readonly egress: string };
}

const ALLOW = 'return';
const addressKey = (ip: IpAddress): string => formatIp(ip);

export class NftablesRenderer implements Renderer<NftablesChanges> {
  readonly name = 'nftables';
  private readonly desired = new NftObjects();
  private applied: NftObjects | undefined;
  private readonly dirty = new Dirty();
  private readonly pods = new Map<string, LocalPod>();
  /** Which local pod owns each address (for tracked-flow verdicts). */
  private readonly podByAddress = new Map<string, string>();
  private readonly tableUse = new Map<
    string,
    { count: number; table: RuleTable; groups: readonly string[] }
  >();
  private readonly groupUse = new Map<
    string,
    { count: number; members: Map<string, readonly IpAddress[]> }
  >();
  /** Per set, how many members hold each address (pods may share one, e.g. host network). */
  private readonly elementCounts = new Map<string, Map<string, number>>();
  private readonly groups: GroupLookup;

  constructor(private readonly options: NftablesOptions) {
    this.groups = stateGroupLookup(options.state);
    for (const family of FAMILIES) {
      for (const direction of ['ingress', 'egress'] as const)
        this.desired.maps.set(dispatchMap(direction, family), {
          type: addressType(family),
          entries: new Map(),
        });
      this.declareSet(localPodsSet(family), { type: addressType(family) });
      const cidrs = (options.podCidrs ?? []).filter((c) => c.family === family);
      if (cidrs.length > 0) {
        this.declareSet(podCidrSet(family), { type: addressType(family), interval: true });
        const set = this.desired.sets.get(podCidrSet(family));
        for (const cidr of cidrs)
          set?.elements.add(`${formatIp({ family, value: cidr.base })}/${cidr.prefix}`);
      }
    }
  }

  /** The base chains: hooks, connection tracking, dispatch and the fail-closed guards. */
  baseChains(): Map<string, string[]> {
    const guards = (field: 'saddr' | 'daddr', direction: 'ingress' | 'egress'): string[] =>
      FAMILIES.flatMap((f) => {
        const ip = addressProtocol(f);
        const lines = [`${ip} ${field} vmap @${dispatchMap(direction, f)}`];
        lines.push(`${ip} ${field} @${localPodsSet(f)} drop`);
        if (this.desired.sets.has(podCidrSet(f))) lines.push(`${ip} ${field} @${podCidrSet(f)} drop`);
        return lines;
      });
    const chains = new Map<string, string[]>([
      ['pod_egress', guards('saddr', 'egress')],
      ['pod_ingress', guards('daddr', 'ingress')],
      [
        'forward',
        [
          'type filter hook forward priority filter; policy accept;',
          'ct state established,related accept',
          'ct state invalid drop',
          'jump pod_egress',
          'jump pod_ingress',
        ],
      ],
    ]);
    if (this.options.allowNodeLocal === false) {
      // The node's own traffic to its pods is policed too: on output (to pods), input (from them).
      chains.set('output', [
        'type filter hook output priority filter; policy accept;',
        'ct state established,related accept',
        'jump pod_ingress',
      ]);
      chains.set('input', [
        'type filter hook input priority filter; policy accept;',
        'ct state established,related accept',
        'jump pod_egress',
      ]);
    }
    return chains;
  }

  /** The whole table as an atomic replace script (what `palisade render` prints). */
  fullScript(): string {
    return replaceTableScript(tableBlock(this.desired, this.baseChains()));
  }

  /** Counts of what the table holds, for reports and benchmarks. */
  stats(): { chains: number; rules: number; sets: number; elements: number; mapEntries: number } {
    let rules = 0;
    for (const lines of this.desired.chains.values()) rules += lines.length;
    for (const lines of this.baseChains().values()) rules += lines.length;
    let elements = 0;
    for (const set of this.desired.sets.values()) elements += set.elements.size;
    let mapEntries = 0;
    for (const map of this.desired.maps.values()) mapEntries += map.entries.size;
    return {
      chains: this.desired.chains.size + this.baseChains().size,
      rules,
      sets: this.desired.sets.size,
      elements,
      mapEntries,
    };
  }

  newTxn(options: { readonly resync: boolean }): RendererTxn<NftablesChanges> {
    if (options.resync) this.reset();
    let planned: { script: string; full: boolean; operations: Operation[] } | undefined;
    const plan = (): { script: string; full: boolean; operations: Operation[] } =>
      (planned ??= this.plan('all'));
    return {
      render: (pod, tables) => {
        planned = undefined;
        this.renderPod(pod, tables);
      },
      groupsChanged: (groups, pods) => {
        planned = undefined;
        this.refreshGroups(groups, pods);
      },
      changes: () => {
        const { script, full, operations } = plan();
        return { script, full, operations: operations.length };
      },
      commit: () => {
        // Planned afresh: a first phase (commitRestrict) may have moved the applied state since.
        this.applyPlan(this.plan('all'));
        planned = undefined;
      },
    };
  }

  /** Applies the first phase of a two-phase update (see the file comment); commit finishes it. */
  commitRestrict(): NftablesChanges {
    const planned = this.plan('restrict');
    this.applyPlan(planned, false);
    return { script: planned.script, full: planned.full, operations: planned.operations.length };
  }

  /** Takes the desired state as already in the kernel (re-attaching to a table applied earlier). */
  adoptApplied(): void {
    this.applied = cloneObjects(this.desired);
    this.dirty.clear();
  }

  /** Forgets what is applied: the next commit replaces the whole table. */
  forgetApplied(): void {
    this.applied = undefined;
  }

  /**
   * Tracked flows the current policy denies (to delete from conntrack): a flow is judged like its
   * first packet — the local source's egress table and the local destination's ingress table.
   */
  deniedFlows(flows: readonly TrackedFlow[]): TrackedFlow[] {
    const view = {
      podAt: (ip: IpAddress): Endpoint | undefined => {
        const id = this.podByAddress.get(addressKey(ip));
        return id === undefined ? undefined : this.options.state.pod(id);
      },
      tables: (pod: string) => this.pods.get(pod)?.tables,
      nodeAddresses: () => this.options.nodeAddresses ?? [],
      groups: this.groups,
    };
    return flows.filter(
      (flow) =>
        !compiledAllows(
          view,
          { src: flow.src, dst: flow.dst, protocol: flow.protocol, port: flow.dstPort },
          this.options.allowNodeLocal ?? true,
        ),
    );
  }

  private reset(): void {
    for (const id of [...this.pods.keys()]) this.renderPod({ id, ips: [] }, undefined);
    this.applied = undefined;
  }

  private renderPod(pod: RenderedPod, tables: PodTables | undefined): void {
    const before = this.pods.get(pod.id);
    const gone = tables === undefined || pod.ips.length === 0;
    const after: LocalPod | undefined = gone
      ? undefined
      : {
          ips: pod.ips,
          tables,
          verdicts: {
            ingress: tables.ingress ? `goto ${tableChain(tables.ingress.id)}` : ALLOW,
            egress: tables.egress ? `goto ${tableChain(tables.egress.id)}` : ALLOW,
          },
        };
    // Acquire the new tables before releasing the old, so shared chains and sets never churn.
    if (after) for (const table of tablesOf(after.tables)) this.acquireTable(table);
    if (before) {
      for (const ip of before.ips) {
        const key = addressKey(ip);
        if (this.podByAddress.get(key) === pod.id) this.podByAddress.delete(key);
        for (const direction of ['ingress', 'egress'] as const)
          this.setEntry(dispatchMap(direction, ip.family), key);
        this.countElement(localPodsSet(ip.family), key, -1);
      }
      for (const table of tablesOf(before.tables)) this.releaseTable(table);
    }
    if (after) {
      for (const ip of after.ips) {
        const key = addressKey(ip);
        this.podByAddress.set(key, pod.id);
        this.setEntry(dispatchMap('ingress', ip.family), key, after.verdicts.ingress);
        this.setEntry(dispatchMap('egress', ip.family), key, after.verdicts.egress);
        this.countElement(localPodsSet(ip.family), key, +1);
      }
      this.pods.set(pod.id, after);
    } else {
      this.pods.delete(pod.id);
    }
  }

  private acquireTable(table: RuleTable): void {
    const use = this.tableUse.get(table.id);
    if (use) {
      use.count++;
      return;
    }
    const chain = renderTableChain(table);
    for (const group of chain.groups) this.acquireGroup(group);
    this.tableUse.set(table.id, { count: 1, table, groups: chain.groups });
    this.desired.chains.set(tableChain(table.id), chain.lines);
    this.dirty.chains.add(tableChain(table.id));
  }

  private releaseTable(table: RuleTable): void {
    const use = this.tableUse.get(table.id);
    if (!use || --use.count > 0) return;
    this.tableUse.delete(table.id);
    this.desired.chains.delete(tableChain(table.id));
    this.dirty.chains.add(tableChain(table.id));
    for (const group of use.groups) this.releaseGroup(group);
  }

  private acquireGroup(reference: string): void {
    const use = this.groupUse.get(reference);
    if (use) {
      use.count++;
      return;
    }
    const record = { count: 1, members: new Map<string, readonly IpAddress[]>() };
    this.groupUse.set(reference, record);
    for (const family of FAMILIES)
      this.declareSet(groupSet(reference, family), { type: addressType(family), comment: reference });
    const { key, port } = parseReference(reference);
    for (const member of this.options.state.group(key)?.members.values() ?? [])
      if (port === undefined || member.port === port)
        this.setMember(reference, record.members, member.pod, member.ips);
  }

  private releaseGroup(reference: string): void {
    const use = this.groupUse.get(reference);
    if (!use || --use.count > 0) return;
    this.groupUse.delete(reference);
    for (const family of FAMILIES) {
      const name = groupSet(reference, family);
      // Its elements count as changed: the set may come back within the same transaction.
      for (const element of this.desired.sets.get(name)?.elements ?? []) this.dirty.element(name, element);
      this.desired.sets.delete(name);
      this.elementCounts.delete(name);
      this.dirty.sets.add(name);
    }
  }

  /** Re-reads the changed pods' membership in every used group whose members changed. */
  private refreshGroups(groups: ReadonlySet<string>, pods: ReadonlySet<string>): void {
    for (const [reference, use] of this.groupUse) {
      const { key, port } = parseReference(reference);
      if (!groups.has(key)) continue;
      const group = this.options.state.group(key);
      for (const pod of pods) {
        const member = group?.members.get(pod);
        const ips = member && (port === undefined || member.port === port) ? member.ips : [];
        this.setMember(reference, use.members, pod, ips);
      }
    }
  }

  private setMember(
    reference: string,
    members: Map<string, readonly IpAddress[]>,
    pod: string,
    ips: readonly IpAddress[],
  ): void {
    const before = members.get(pod) ?? [];
    if (sameAddresses(before, ips)) return;
    for (const ip of before) this.countElement(groupSet(reference, ip.family), addressKey(ip), -1);
    for (const ip of ips) this.countElement(groupSet(reference, ip.family), addressKey(ip), +1);
    if (ips.length > 0) members.set(pod, ips);
    else members.delete(pod);
  }

  private declareSet(name: string, declaration: SetDeclaration): void {
    this.desired.sets.set(name, { declaration, elements: new Set() });
    this.elementCounts.set(name, new Map());
    this.dirty.sets.add(name);
  }

  private countElement(set: string, element: string, delta: number): void {
    const counts = this.elementCounts.get(set);
    const elements = this.desired.sets.get(set)?.elements;
    if (!counts || !elements) return;
    const next = (counts.get(element) ?? 0) + delta;
    if (next > 0) counts.set(element, next);
    else counts.delete(element);
    if (next > 0 !== elements.has(element)) {
      if (next > 0) elements.add(element);
      else elements.delete(element);
      this.dirty.element(set, element);
    }
  }

  private setEntry(map: string, key: string, verdict?: string): void {
    const entries = this.desired.maps.get(map)?.entries;
    if (!entries || entries.get(key) === verdict) return;
    if (verdict === undefined) entries.delete(key);
    else entries.set(key, verdict);
    this.dirty.entry(map, key);
  }

  /**
   * What to send to nft: the whole table when nothing is applied yet, otherwise the changed
   * elements, entries, chains and sets (only the restrictive part for phase one).
   */
  private plan(phase: 'restrict' | 'all'): { script: string; full: boolean; operations: Operation[] } {
    if (!this.applied) {
      if (phase === 'restrict') return { script: '', full: false, operations: [] };
      return { script: this.fullScript(), full: true, operations: [] };
    }
    const operations = planOperations(this.applied, this.desired, this.dirty, phase);
    return { script: operationsScript(operations), full: false, operations };
  }

  private applyPlan(
    planned: { script: string; full: boolean; operations: Operation[] },
    complete = true,
  ): void {
    if (planned.script !== '') this.options.runner.apply(planned.script);
    if (planned.full) this.applied = cloneObjects(this.desired);
    else if (this.applied) applyOperations(this.applied, planned.operations);
    if (complete) this.dirty.clear();
    else
      for (const op of planned.operations)
        if (op.type === 'add-chain' && op.name.startsWith('x_')) this.dirty.chains.add(op.name);
  }
}

/** The chain verdict of a map entry: `goto t_x` → `t_x`; `return` → undefined. */
const chainOf = (verdict: string): string | undefined =>
  verdict.startsWith('goto ') ? verdict.slice('goto '.length) : undefined;

/** Groups gain members only by permitting more: removed elements restrict, added ones relax. */
const isGroupSet = (name: string): boolean => name.startsWith('g_');

function planOperations(
  applied: NftObjects,
  desired: NftObjects,
  dirty: Dirty,
  phase: 'restrict' | 'all',
): Operation[] {
  const restrictOnly = phase === 'restrict';
  const ops: Operation[] = [];
  const created = new Set<string>();
  for (const name of dirty.sets) {
    const want = desired.sets.get(name);
    if (want && !applied.sets.has(name)) {
      ops.push({ type: 'add-set', name, declaration: want.declaration, elements: [...want.elements] });
      created.add(name);
    }
  }
  for (const name of dirty.chains) {
    const lines = desired.chains.get(name);
    if (lines && !applied.chains.has(name)) ops.push({ type: 'add-chain', name, lines });
  }
  for (const [set, elements] of dirty.elements) {
    const have = applied.sets.get(set)?.elements;
    const want = desired.sets.get(set)?.elements;
    if (!have || !want || created.has(set)) continue;
    const add: string[] = [];
    const remove: string[] = [];
    for (const element of elements) {
      if (want.has(element) && !have.has(element)) add.push(element);
      else if (!want.has(element) && have.has(element)) remove.push(element);
    }
    const relaxing = isGroupSet(set) ? add : remove;
    const restricting = isGroupSet(set) ? remove : add;
    if (restricting.length > 0)
      ops.push({ type: isGroupSet(set) ? 'del-elements' : 'add-elements', set, elements: restricting });
    if (!restrictOnly && relaxing.length > 0)
      ops.push({ type: isGroupSet(set) ? 'add-elements' : 'del-elements', set, elements: relaxing });
  }
  for (const [map, keys] of dirty.entries) {
    const have = applied.maps.get(map)?.entries;
    const want = desired.maps.get(map)?.entries;
    if (!have || !want) continue;
    for (const key of keys) {
      const current = have.get(key);
      const next = want.get(key);
      if (current === next) continue;
      if (next === undefined) {
        ops.push({ type: 'del-entry', map, key });
        continue;
      }
      if (!restrictOnly) {
        ops.push({ type: 'set-entry', map, key, verdict: next, replace: current !== undefined });
        continue;
      }
      // Phase one: a new pod stays behind its guard; a changed one gets old ∧ new.
      if (current === undefined) continue;
      const from = chainOf(current);
      const to = chainOf(next);
      if (from === undefined && to !== undefined) {
        ops.push({ type: 'set-entry', map, key, verdict: next, replace: true });
      } else if (from !== undefined && to !== undefined) {
        const both = intersectionChain(from.slice(2), to.slice(2));
        if (!applied.chains.has(both) && !ops.some((op) => op.type === 'add-chain' && op.name === both))
          ops.push({ type: 'add-chain', name: both, lines: [`jump ${from}`, `goto ${to}`] });
        ops.push({ type: 'set-entry', map, key, verdict: `goto ${both}`, replace: true });
      }
    }
  }
  if (restrictOnly) return ops;
  for (const name of dirty.chains)
    if (!desired.chains.has(name) && applied.chains.has(name) && name.startsWith('x_'))
      ops.push({ type: 'del-chain', name });
  for (const name of dirty.chains)
    if (!desired.chains.has(name) && applied.chains.has(name) && !name.startsWith('x_'))
      ops.push({ type: 'del-chain', name });
  for (const name of dirty.sets)
    if (!desired.sets.has(name) && applied.sets.has(name)) ops.push({ type: 'del-set', name });
  return ops;
}

function cloneObjects(source: NftObjects): NftObjects {
  const copy = new NftObjects();
  for (const [name, set] of source.sets)
    copy.sets.set(name, { declaration: set.declaration, elements: new Set(set.elements) });
  for (const [name, map] of source.maps)
    copy.maps.set(name, { type: map.type, entries: new Map(map.entries) });
  for (const [name, lines] of source.chains) copy.chains.set(name, lines);
  return copy;
}

function tablesOf(tables: PodTables | undefined): RuleTable[] {
  return [tables?.ingress, tables?.egress].filter((t): t is RuleTable => t !== undefined);
}

function parseReference(reference: string): { key: string; port?: number } {
  const cut = reference.lastIndexOf(PARTITION_SEPARATOR);
  if (cut >= 0 && /^[0-9]+$/.test(reference.slice(cut + 1)))
    return { key: reference.slice(0, cut), port: Number(reference.slice(cut + 1)) };
  return { key: reference };
}

function sameAddresses(a: readonly IpAddress[], b: readonly IpAddress[]): boolean {
  return a.length === b.length && a.every((ip, i) => ip.family === b[i]?.family && ip.value === b[i]?.value);
}

export type { IpFamily };
