/**
 * The nftables renderer: one node's compiled tables as one `inet palisade` table.
 *
 * - Every distinct rule table is one chain (`t_<table id>`), shared by all pods that have it.
 * - Per-pod dispatch is a verdict map per direction and family, keyed by pod address: one O(1)
 *   lookup per packet, never a chain over pods.
 * - Address groups are named sets, filled from the store and updated element by element.
 * - Packets of tracked flows are accepted before policy, so replies always pass — but only for
 *   flows checked under the current policy. Every commit stamps a new generation into the
 *   table; a flow's connection mark carries the generation it was last checked under. The next
 *   packet of an older flow is checked again (in the reply direction through the tables' reply
 *   twins, which judge it as its original direction) and either re-stamped or dropped, so an
 *   update that denies a flow cuts it at its next packet — the kernel's own means, no conntrack
 *   deletes and no scan of the tracking table.
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
import { parseGroupReference, referenceMembers, type PodTables } from '../../configurator/index.ts';
import type { ClusterState } from '../../state/index.ts';
import type { NftRunner } from '../../dataplane/index.ts';
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
  replyTwin,
  replyVerdict,
  TABLE,
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
  /**
   * Re-check tracked flows after each update, cutting those the new policy denies. Default
   * true; false keeps established flows whatever the policy becomes.
   */
  readonly recheckFlows?: boolean;
}

/** The connection-mark bits that carry the policy generation (the low 16 bits are left alone). */
const GENERATION_MASK = '0xffff0000';
const generationMark = (generation: number): string =>
  `0x${((generation % 0xffff) + 1).toString(16).padStart(4, '0')}0000`;

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
  /** Bumped by every commit; flows stamped with an older one are re-checked. */
  private generation = 0;

  constructor(private readonly options: NftablesOptions) {
    for (const family of FAMILIES) {
      for (const direction of ['ingress', 'egress'] as const)
        for (const name of [dispatchMap(direction, family), replyTwin(dispatchMap(direction, family))])
          this.desired.maps.set(name, { type: addressType(family), entries: new Map() });
      this.declareSet(localPodsSet(family), { type: addressType(family) });
      const cidrs = (options.podCidrs ?? []).filter((c) => c.family === family);
      if (cidrs.length > 0) {
        this.declareSet(podCidrSet(family), { type: addressType(family), interval: true });
        const set = this.desired.sets.get(podCidrSet(family));
        for (const cidr of cidrs) set?.elements.add(cidr.text);
      }
    }
  }

  /**
   * The base chains: hooks, the tracked-flow fast path, dispatch in both directions, the
   * fail-closed guards, and the generation stamp.
   */
  baseChains(generation = this.generation): Map<string, string[]> {
    const dispatch = (field: 'saddr' | 'daddr', map: (f: IpFamily) => string): string[] =>
      FAMILIES.flatMap((f) => {
        const ip = addressProtocol(f);
        const lines = [`${ip} ${field} vmap @${map(f)}`, `${ip} ${field} @${localPodsSet(f)} drop`];
        if (this.desired.sets.has(podCidrSet(f))) lines.push(`${ip} ${field} @${podCidrSet(f)} drop`);
        return lines;
      });
    const recheck = this.options.recheckFlows ?? true;
    const mark = generationMark(generation);
    const hook = (name: string, police: string[]): string[] => [
      `type filter hook ${name} priority filter; policy accept;`,
      'jump flow_fastpath',
      'ct direction reply goto reply_check',
      ...police,
      'jump flow_stamp',
    ];
    const chains = new Map<string, string[]>([
      ['pod_egress', dispatch('saddr', (f) => dispatchMap('egress', f))],
      ['pod_ingress', dispatch('daddr', (f) => dispatchMap('ingress', f))],
      // A reply packet's destination is the flow's source pod, its source the destination pod.
      ['reply_egress', dispatch('daddr', (f) => replyTwin(dispatchMap('egress', f)))],
      ['reply_ingress', dispatch('saddr', (f) => replyTwin(dispatchMap('ingress', f)))],
      [
        'flow_fastpath',
        recheck
          ? [
              'ct state related accept',
              `ct state established ct mark and ${GENERATION_MASK} == ${mark} accept`,
            ]
          : ['ct state established,related accept'],
      ],
      ['flow_stamp', recheck ? [`ct mark set ct mark and 0x0000ffff or ${mark}`] : []],
      ['reply_check', ['jump reply_egress', 'jump reply_ingress', 'jump flow_stamp']],
      ['forward', hook('forward', ['jump pod_egress', 'jump pod_ingress'])],
    ]);
    if (this.options.allowNodeLocal === false) {
      // The node's own traffic to its pods is policed too: on output (to pods), input (from them).
      chains.set('output', hook('output', ['jump pod_ingress']));
      chains.set('input', hook('input', ['jump pod_egress']));
    }
    return chains;
  }

  /** The generation-dependent base chains, rewritten in every transaction. */
  private generationScript(generation: number): string {
    const chains = this.baseChains(generation);
    const lines: string[] = [];
    for (const name of ['flow_fastpath', 'flow_stamp']) {
      lines.push(`flush chain ${TABLE} ${name}`);
      for (const rule of chains.get(name) ?? []) lines.push(`add rule ${TABLE} ${name} ${rule}`);
    }
    return lines.join('\n') + '\n';
  }

  /** The whole table as an atomic replace script (what `palisade render` prints). */
  fullScript(generation = this.generation): string {
    return replaceTableScript(tableBlock(this.desired, this.baseChains(generation)));
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
        for (const direction of ['ingress', 'egress'] as const)
          this.setEntry(dispatchMap(direction, ip.family), key);
        this.countElement(localPodsSet(ip.family), key, -1);
      }
      for (const table of tablesOf(before.tables)) this.releaseTable(table);
    }
    if (after) {
      for (const ip of after.ips) {
        const key = addressKey(ip);
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
    this.desired.chains.set(replyTwin(tableChain(table.id)), chain.replyLines);
    this.dirty.chains.add(tableChain(table.id));
    this.dirty.chains.add(replyTwin(tableChain(table.id)));
  }

  private releaseTable(table: RuleTable): void {
    const use = this.tableUse.get(table.id);
    if (!use || --use.count > 0) return;
    this.tableUse.delete(table.id);
    for (const name of [tableChain(table.id), replyTwin(tableChain(table.id))]) {
      this.desired.chains.delete(name);
      this.dirty.chains.add(name);
    }
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
    for (const member of referenceMembers(this.options.state, reference))
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
      const { key, port } = parseGroupReference(reference);
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

  /** Sets (or with no verdict, removes) a dispatch entry and its reply-direction twin. */
  private setEntry(map: string, key: string, verdict?: string): void {
    const twins: [string, string | undefined][] = [
      [map, verdict],
      [replyTwin(map), verdict === undefined ? undefined : replyVerdict(verdict)],
    ];
    for (const [name, value] of twins) {
      const entries = this.desired.maps.get(name)?.entries;
      if (!entries || entries.get(key) === value) continue;
      if (value === undefined) entries.delete(key);
      else entries.set(key, value);
      this.dirty.entry(name, key);
    }
  }

  /**
   * What to send to nft: the whole table when nothing is applied yet, otherwise the changed
   * elements, entries, chains and sets (only the restrictive part for phase one).
   */
  private plan(phase: 'restrict' | 'all'): { script: string; full: boolean; operations: Operation[] } {
    const next = this.generation + 1;
    if (!this.applied) {
      if (phase === 'restrict') return { script: '', full: false, operations: [] };
      return { script: this.fullScript(next), full: true, operations: [] };
    }
    const operations = planOperations(this.applied, this.desired, this.dirty, phase);
    if (operations.length === 0) return { script: '', full: false, operations };
    // Every change may deny a tracked flow: a new generation has every flow checked again.
    return { script: operationsScript(operations) + this.generationScript(next), full: false, operations };
  }

  private applyPlan(
    planned: { script: string; full: boolean; operations: Operation[] },
    complete = true,
  ): void {
    if (planned.script !== '') {
      this.options.runner.apply(planned.script);
      this.generation++;
    }
    if (planned.full) this.applied = cloneObjects(this.desired);
    else if (this.applied) applyOperations(this.applied, planned.operations);
    if (complete) this.dirty.clear();
    else
      for (const op of planned.operations)
        if (op.type === 'add-chain' && isIntersection(op.name)) this.dirty.chains.add(op.name);
  }
}

/** The chain verdict of a map entry: `goto t_x` → `t_x`; `return` → undefined. */
const chainOf = (verdict: string): string | undefined =>
  verdict.startsWith('goto ') ? verdict.slice('goto '.length) : undefined;

const isIntersection = (chain: string): boolean => chain.startsWith('x_') || chain.startsWith('rx_');

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
        // Reply twins (`rt_…`) get the reply twin of the intersection (`rx_…`).
        const reply = from.startsWith('r');
        const id = (chain: string): string => chain.slice(reply ? 3 : 2);
        const plain = intersectionChain(id(from), id(to));
        const both = reply ? replyTwin(plain) : plain;
        if (!applied.chains.has(both) && !ops.some((op) => op.type === 'add-chain' && op.name === both))
          ops.push({ type: 'add-chain', name: both, lines: [`jump ${from}`, `goto ${to}`] });
        ops.push({ type: 'set-entry', map, key, verdict: `goto ${both}`, replace: true });
      }
    }
  }
  if (restrictOnly) return ops;
  for (const name of dirty.chains)
    if (!desired.chains.has(name) && applied.chains.has(name) && isIntersection(name))
      ops.push({ type: 'del-chain', name });
  for (const name of dirty.chains)
    if (!desired.chains.has(name) && applied.chains.has(name) && !isIntersection(name))
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

function sameAddresses(a: readonly IpAddress[], b: readonly IpAddress[]): boolean {
  return a.length === b.length && a.every((ip, i) => ip.family === b[i]?.family && ip.value === b[i]?.value);
}

export type { IpFamily };
