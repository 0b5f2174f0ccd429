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
import type { ReadonlyStore } from '../../state/index.ts';
import { DataplaneError, type NftRunner } from '../../dataplane/index.ts';
import type { Renderer, RendererTxn, RenderedPod } from '../types.ts';
import { hash, randomInt } from 'node:crypto';
import {
  addressType,
  continuationChain,
  dispatchMap,
  FAMILIES,
  localDispatchMap,
  sequenceChain,
  groupSet,
  localPodsSet,
  podCidrSet,
  replyTwin,
  replyVerdict,
  tableChain,
} from './names.ts';
import {
  NftObjects,
  Dirty,
  fingerprintScript,
  replaceTableScript,
  tableBlock,
  type SetDeclaration,
} from './objects.ts';
import {
  fingerprintText,
  readBack,
  readFingerprint,
  type Fingerprint,
  type KernelTable,
} from './readback.ts';
import { applyOperations, operationsScript } from './operations.ts';
import { baseChains, generationScript, type BaseChainOptions } from './base-chains.ts';
import { cloneObjects, isIntersection, planOperations, type Plan } from './plan.ts';
import { renderOrderedChain, renderTableChain, type NetSet } from './table-chain.ts';
import type { TieredTable } from '../../configurator/index.ts';

export interface NftablesOptions extends BaseChainOptions {
  /** The store the compiled tables came from: group members are read from it. */
  readonly state: ReadonlyStore;
  readonly runner: NftRunner;
  /** The node's pod CIDRs: addresses in them without a rendered pod are dropped. */
  readonly podCidrs?: readonly Cidr[];
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
  /** Node-local dispatch (only for directions with cluster policy). */
  readonly localVerdicts: { readonly ingress?: string; readonly egress?: string };
  /** Sequence chains (cluster policy) the pod uses. */
  readonly sequences: readonly Sequence[];
}

/**
 * One direction's ordered policy as chains: `forward` continues into the NetworkPolicy table,
 * `local` (traffic with the pod's own node) allows what NetworkPolicy isolation would decide.
 */
interface Sequence {
  readonly key: string;
  readonly tiers: TieredTable;
  readonly np: RuleTable | undefined;
  readonly context: 'forward' | 'local';
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
    { count: number; table: RuleTable; groups: readonly string[]; sets: readonly string[] }
  >();
  /** Named address-range sets (see `netSet`) and how many table chains use each. */
  private readonly netSetUse = new Map<string, number>();
  private readonly sequenceUse = new Map<string, { count: number; groups: readonly string[] }>();
  private readonly groupUse = new Map<
    string,
    { count: number; members: Map<string, readonly IpAddress[]> }
  >();
  /** Per set, how many members hold each address (pods may share one, e.g. host network). */
  private readonly elementCounts = new Map<string, Map<string, number>>();
  /**
   * The kernel table's fingerprint as of the last commit or read-back. Its generation is bumped by
   * every commit; flows stamped with an older one are re-checked.
   */
  private fingerprint: Fingerprint = { generation: 0, nonce: 0 };
  /** Chains the kernel holds with other rules than their name stands for (found reading back). */
  private readonly flushFirst = new Set<string>();
  /** While set, commits are held back (the desired table is built before attaching to the kernel). */
  private paused = false;
  private readonly families: readonly IpFamily[];
  /** Bumped whenever the applied copy may have moved (plans made before are stale). */
  private appliedVersion = 0;

  constructor(private readonly options: NftablesOptions) {
    this.families = options.families ?? FAMILIES;
    for (const family of this.families) {
      for (const direction of ['ingress', 'egress'] as const) {
        const maps = [dispatchMap(direction, family)];
        if (options.allowNodeLocal !== false) maps.push(localDispatchMap(direction, family));
        for (const name of maps.flatMap((m) => [m, replyTwin(m)]))
          this.desired.maps.set(name, { type: addressType(family), entries: new Map() });
      }
      this.declareSet(localPodsSet(family), { type: addressType(family) });
      const cidrs = (options.podCidrs ?? []).filter((c) => c.family === family);
      if (cidrs.length > 0) {
        this.declareSet(podCidrSet(family), { type: addressType(family), interval: true });
        const set = this.desired.sets.get(podCidrSet(family));
        for (const cidr of cidrs) set?.elements.add(cidr.text);
      }
    }
  }

  /** The base chains for a generation (see `base-chains.ts`). */
  baseChains(generation = this.fingerprint.generation): Map<string, string[]> {
    return baseChains(this.options, (family) => this.desired.sets.has(podCidrSet(family)), generation);
  }

  /** The whole table as an atomic replace script (what `palisade render` prints). */
  fullScript(fingerprint: Fingerprint = this.fingerprint): string {
    return replaceTableScript(
      tableBlock(this.desired, this.baseChains(fingerprint.generation), fingerprintText(fingerprint)),
    );
  }

  /** Holds commits back until `attach` (build the desired table first, then compare). */
  pause(): void {
    this.paused = true;
  }

  /**
   * Reads back what the kernel holds and plans every later transaction from it (resuming commits
   * if paused). Returns how far the kernel is from the desired table: 0 when it holds exactly
   * that, otherwise the number of operations the next commit will send ('replace' when it will
   * replace the whole table). Throws DataplaneError when the table cannot be read.
   */
  attach(): number | 'replace' {
    this.adopt(readBack(this.options.runner));
    this.paused = false;
    return this.pending();
  }

  /**
   * Checks the kernel's fingerprint against this renderer's last commit — one small read — and
   * reads the whole table back when it differs (another process, a deleted table, a lost
   * commit). Returns whether it was as expected. Throws DataplaneError when nft cannot be read.
   */
  verify(): boolean {
    const seen = this.applied ? readFingerprint(this.options.runner) : undefined;
    if (seen && sameFingerprint(seen, this.fingerprint)) return true;
    this.adopt(readBack(this.options.runner));
    return false;
  }

  /** Operations the next commit sends (0: the kernel holds the desired table). */
  pending(): number | 'replace' {
    if (!this.applied) return 'replace';
    return planOperations(this.applied, this.desired, this.dirty, 'all').length;
  }

  /** Counts of what the table holds, for reports and benchmarks. */
  stats(): { chains: number; rules: number; sets: number; elements: number; mapEntries: number } {
    const base = this.baseChains();
    let rules = 0;
    for (const lines of this.desired.chains.values()) rules += lines.length;
    for (const lines of base.values()) rules += lines.length;
    let elements = 0;
    for (const set of this.desired.sets.values()) elements += set.elements.size;
    let mapEntries = 0;
    for (const map of this.desired.maps.values()) mapEntries += map.entries.size;
    return {
      chains: this.desired.chains.size + base.size,
      rules,
      sets: this.desired.sets.size,
      elements,
      mapEntries,
    };
  }

  newTxn(options: { readonly resync: boolean }): RendererTxn<NftablesChanges> {
    if (options.resync) this.reset();
    // A plan stays good until the desired table (render, groupsChanged) or the applied one
    // (a first phase, commitRestrict) moves: then it is made again.
    let planned: { plan: Plan; applied: number } | undefined;
    const plan = (): Plan => {
      if (planned?.applied !== this.appliedVersion)
        planned = { plan: this.plan('all'), applied: this.appliedVersion };
      return planned.plan;
    };
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
        if (this.paused) return;
        this.applyPlan(plan());
        planned = undefined;
      },
    };
  }

  /** Applies the first phase of a two-phase update (see the file comment); commit finishes it. */
  commitRestrict(): NftablesChanges {
    if (this.paused) return { script: '', full: false, operations: 0 };
    const planned = this.plan('restrict');
    this.applyPlan(planned, false);
    return { script: planned.script, full: planned.full, operations: planned.operations.length };
  }

  private reset(): void {
    for (const id of [...this.pods.keys()]) this.renderPod({ id, ips: [] }, undefined);
    this.applied = undefined;
  }

  private renderPod(pod: RenderedPod, tables: PodTables | undefined): void {
    const before = this.pods.get(pod.id);
    const gone = tables === undefined || pod.ips.length === 0;
    const after: LocalPod | undefined = gone ? undefined : this.localPod(pod.ips, tables);
    // Acquire the new tables before releasing the old, so shared chains and sets never churn.
    if (after) {
      for (const table of tablesOf(after.tables)) this.acquireTable(table);
      for (const sequence of after.sequences) this.acquireSequence(sequence);
    }
    if (before) {
      for (const ip of before.ips) {
        const key = addressKey(ip);
        for (const direction of ['ingress', 'egress'] as const) {
          this.setEntry(dispatchMap(direction, ip.family), key);
          if (this.options.allowNodeLocal !== false)
            this.setEntry(localDispatchMap(direction, ip.family), key);
        }
        this.countElement(localPodsSet(ip.family), key, -1);
      }
      // Sequences first: their chains jump to the tables' chains, which must outlive them.
      for (const sequence of before.sequences) this.releaseSequence(sequence);
      for (const table of tablesOf(before.tables)) this.releaseTable(table);
    }
    if (after) {
      for (const ip of after.ips) {
        const key = addressKey(ip);
        for (const direction of ['ingress', 'egress'] as const) {
          this.setEntry(dispatchMap(direction, ip.family), key, after.verdicts[direction]);
          const local = after.localVerdicts[direction];
          if (local !== undefined) this.setEntry(localDispatchMap(direction, ip.family), key, local);
        }
        this.countElement(localPodsSet(ip.family), key, +1);
      }
      this.pods.set(pod.id, after);
    } else {
      this.pods.delete(pod.id);
    }
  }

  /** A pod's dispatch verdicts: its NetworkPolicy table, or the sequence of its ordered tiers. */
  private localPod(ips: readonly IpAddress[], tables: PodTables): LocalPod {
    const sequences: Sequence[] = [];
    const verdicts = { ingress: ALLOW, egress: ALLOW };
    const localVerdicts: { ingress?: string; egress?: string } = {};
    for (const direction of ['ingress', 'egress'] as const) {
      const np = tables[direction];
      const tiers = direction === 'ingress' ? tables.ingressTiers : tables.egressTiers;
      if (!tiers) {
        verdicts[direction] = np ? `goto ${tableChain(np.id)}` : ALLOW;
        continue;
      }
      const forward = sequenceOf(tiers, np, 'forward');
      sequences.push(forward);
      verdicts[direction] = `goto ${sequenceChain(forward.key)}`;
      if (this.options.allowNodeLocal !== false) {
        const local = sequenceOf(tiers, np, 'local');
        sequences.push(local);
        localVerdicts[direction] = `goto ${sequenceChain(local.key)}`;
      }
    }
    return { ips, tables, verdicts, localVerdicts, sequences };
  }

  /**
   * The sequence chain runs the Admin rules (pass, or no match: on to the continuation); the
   * continuation is the NetworkPolicy table when the pod is isolated (for node-local traffic:
   * allowed), else the Baseline rules and then the default, allowed.
   */
  private acquireSequence(sequence: Sequence): void {
    const use = this.sequenceUse.get(sequence.key);
    if (use) {
      use.count++;
      return;
    }
    const next = continuationChain(sequence.key);
    const admin = renderOrderedChain(
      sequence.tiers.admin,
      { pass: `goto ${next}`, replyPass: `goto ${replyTwin(next)}` },
      [`goto ${next}`],
      [`goto ${replyTwin(next)}`],
      this.families,
    );
    const np = sequence.np;
    const continuation = np
      ? sequence.context === 'local'
        ? { lines: [ALLOW], replyLines: [ALLOW], groups: [] }
        : {
            lines: [`goto ${tableChain(np.id)}`],
            replyLines: [`goto ${replyTwin(tableChain(np.id))}`],
            groups: [],
          }
      : renderOrderedChain(
          sequence.tiers.baseline,
          { pass: ALLOW, replyPass: ALLOW },
          [ALLOW],
          [ALLOW],
          this.families,
        );
    const groups = [...new Set([...admin.groups, ...continuation.groups])];
    for (const group of groups) this.acquireGroup(group);
    this.sequenceUse.set(sequence.key, { count: 1, groups });
    // Continuations first: a chain must exist before a rule can jump to it.
    const chains: [string, readonly string[]][] = [
      [next, continuation.lines],
      [replyTwin(next), continuation.replyLines],
      [sequenceChain(sequence.key), admin.lines],
      [replyTwin(sequenceChain(sequence.key)), admin.replyLines],
    ];
    for (const [name, lines] of chains) {
      this.desired.chains.set(name, lines);
      this.dirty.chains.add(name);
    }
  }

  private releaseSequence(sequence: Sequence): void {
    const use = this.sequenceUse.get(sequence.key);
    if (!use || --use.count > 0) return;
    this.sequenceUse.delete(sequence.key);
    const next = continuationChain(sequence.key);
    for (const name of [
      sequenceChain(sequence.key),
      replyTwin(sequenceChain(sequence.key)),
      next,
      replyTwin(next),
    ]) {
      this.desired.chains.delete(name);
      this.dirty.chains.add(name);
    }
    for (const group of use.groups) this.releaseGroup(group);
  }

  private acquireTable(table: RuleTable): void {
    const use = this.tableUse.get(table.id);
    if (use) {
      use.count++;
      return;
    }
    const chain = renderTableChain(table, this.families);
    for (const group of chain.groups) this.acquireGroup(group);
    for (const set of chain.sets) this.acquireNetSet(set);
    this.tableUse.set(table.id, {
      count: 1,
      table,
      groups: chain.groups,
      sets: chain.sets.map((s) => s.name),
    });
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
    for (const set of use.sets) this.releaseNetSet(set);
  }

  private acquireNetSet(set: NetSet): void {
    const count = this.netSetUse.get(set.name) ?? 0;
    this.netSetUse.set(set.name, count + 1);
    if (count > 0) return;
    this.declareSet(set.name, { type: addressType(set.family), interval: true });
    const elements = this.desired.sets.get(set.name)?.elements;
    for (const element of set.elements) {
      elements?.add(element);
      this.dirty.element(set.name, element);
    }
  }

  private releaseNetSet(name: string): void {
    const count = (this.netSetUse.get(name) ?? 0) - 1;
    if (count > 0) {
      this.netSetUse.set(name, count);
      return;
    }
    this.netSetUse.delete(name);
    this.dropSet(name);
  }

  private acquireGroup(reference: string): void {
    const use = this.groupUse.get(reference);
    if (use) {
      use.count++;
      return;
    }
    const record = { count: 1, members: new Map<string, readonly IpAddress[]>() };
    this.groupUse.set(reference, record);
    for (const family of this.families)
      this.declareSet(groupSet(reference, family), { type: addressType(family), comment: reference });
    for (const member of referenceMembers(this.options.state, reference))
      this.setMember(reference, record.members, member.pod, member.ips);
  }

  private releaseGroup(reference: string): void {
    const use = this.groupUse.get(reference);
    if (!use || --use.count > 0) return;
    this.groupUse.delete(reference);
    for (const family of this.families) this.dropSet(groupSet(reference, family));
  }

  private dropSet(name: string): void {
    // Its elements count as changed: the set may come back within the same transaction.
    for (const element of this.desired.sets.get(name)?.elements ?? []) this.dirty.element(name, element);
    this.desired.sets.delete(name);
    this.elementCounts.delete(name);
    this.dirty.sets.add(name);
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
    // countElement ignores sets that do not exist (a family the node does not carry).
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
   * What to send to nft: the whole table when nothing is applied yet (or the kernel's table could
   * not be read), otherwise the changed elements, entries, chains and sets (only the restrictive
   * part for phase one), with the generation chains and the fingerprint replaced.
   */
  private plan(phase: 'restrict' | 'all'): Plan {
    const generation = (this.fingerprint.generation + 1) % 0x7fffffff;
    if (!this.applied) {
      if (phase === 'restrict') return { script: '', full: false, operations: [] };
      const next = { generation, nonce: nonceOf(generation, this.fullScript({ generation, nonce: 0 })) };
      return { script: this.fullScript(next), full: true, operations: [], fingerprint: next };
    }
    const operations = planOperations(this.applied, this.desired, this.dirty, phase).map((op) =>
      op.type === 'add-chain' && this.flushFirst.has(op.name) ? { ...op, flush: true } : op,
    );
    if (operations.length === 0) return { script: '', full: false, operations };
    const changes = operationsScript(operations) + generationScript(this.baseChains(generation));
    const next = { generation, nonce: nonceOf(generation, changes) };
    // Every change may deny a tracked flow: a new generation has every flow checked again.
    return {
      script: changes + fingerprintScript(fingerprintText(this.fingerprint), fingerprintText(next)),
      full: false,
      operations,
      fingerprint: next,
    };
  }

  private applyPlan(planned: Plan, complete = true): void {
    this.appliedVersion++;
    if (planned.script !== '' && planned.fingerprint) {
      this.send(planned.script, planned.fingerprint);
      this.fingerprint = planned.fingerprint;
    }
    for (const op of planned.operations) if (op.type === 'add-chain') this.flushFirst.delete(op.name);
    if (planned.full) {
      this.applied = cloneObjects(this.desired);
      this.flushFirst.clear();
    } else if (this.applied) applyOperations(this.applied, planned.operations);
    if (complete) this.dirty.clear();
    else
      for (const op of planned.operations)
        if (op.type === 'add-chain' && isIntersection(op.name)) this.dirty.chains.add(op.name);
  }

  /**
   * Applies a script. When nft fails or does not answer, what the kernel holds is read back
   * before anything is said about it: a transaction committed after all (its fingerprint is in
   * the kernel) counts as done; otherwise the renderer adopts what the kernel holds, so the next
   * commit starts from it, and the error says what was found.
   */
  private send(script: string, next: Fingerprint): void {
    try {
      this.options.runner.apply(script);
      return;
    } catch (error) {
      if (!(error instanceof DataplaneError)) throw error;
      const before = this.applied ? this.fingerprint : undefined;
      let kernel: KernelTable | undefined;
      try {
        kernel = readBack(this.options.runner);
      } catch (readError) {
        this.applied = undefined;
        throw new DataplaneError(
          `${error.message}\nwhat the kernel holds could not be read back (${(readError as Error).message}); ` +
            'the next commit replaces the whole table',
          true,
        );
      }
      if (kernel?.fingerprint && sameFingerprint(kernel.fingerprint, next)) return; // committed; the answer was lost
      const unchanged =
        before !== undefined &&
        kernel?.fingerprint !== undefined &&
        sameFingerprint(kernel.fingerprint, before);
      this.adopt(kernel);
      throw new DataplaneError(
        `${error.message}\n` +
          (unchanged
            ? 'read back from the kernel: the table is as it was before this transaction'
            : 'read back from the kernel: the table is not as it was before this transaction; the next commit starts from what it holds'),
        false,
      );
    }
  }

  /**
   * Takes what the kernel holds as applied, so the next plan is the difference between it and the
   * desired table. A table whose structure differs (base chains, maps, set types, no fingerprint)
   * or no table at all is replaced whole by the next commit.
   */
  private adopt(kernel: KernelTable | undefined): void {
    this.flushFirst.clear();
    // Unknown history: a random generation, so flows stamped by an earlier table are re-checked.
    this.fingerprint = kernel?.fingerprint ?? { generation: randomInt(1, 0xffff), nonce: 0 };
    if (!kernel || !this.structureMatches(kernel)) {
      this.applied = undefined;
      return;
    }
    const applied = kernel.objects;
    for (const name of this.baseChains().keys()) applied.chains.delete(name);
    for (const name of new Set([...applied.sets.keys(), ...this.desired.sets.keys()])) {
      this.dirty.sets.add(name);
      for (const e of applied.sets.get(name)?.elements ?? []) this.dirty.element(name, e);
      for (const e of this.desired.sets.get(name)?.elements ?? []) this.dirty.element(name, e);
    }
    for (const [name, map] of this.desired.maps) {
      for (const key of map.entries.keys()) this.dirty.entry(name, key);
      for (const key of applied.maps.get(name)?.entries.keys() ?? []) this.dirty.entry(name, key);
    }
    for (const name of new Set([...applied.chains.keys(), ...this.desired.chains.keys()])) {
      this.dirty.chains.add(name);
      const want = this.desired.chains.get(name);
      const have = applied.chains.get(name);
      if (want && have && want.length !== have.length) {
        applied.chains.delete(name);
        this.flushFirst.add(name);
      }
    }
    this.applied = applied;
  }

  /** Whether the kernel's table can be brought to the desired one by incremental operations. */
  private structureMatches(kernel: KernelTable): boolean {
    if (!kernel.fingerprint) return false;
    // A hooked chain's first line declares its hook; it is not a rule.
    for (const [name, lines] of this.baseChains())
      if (kernel.ruleCounts.get(name) !== lines.filter((l) => !l.startsWith('type ')).length) return false;
    if (kernel.objects.maps.size !== this.desired.maps.size) return false;
    for (const [name, map] of this.desired.maps)
      if (kernel.objects.maps.get(name)?.type !== map.type) return false;
    for (const [name, set] of kernel.objects.sets) {
      const want = this.desired.sets.get(name)?.declaration;
      if (want && (want.type !== set.declaration.type || !want.interval !== !set.declaration.interval))
        return false;
    }
    return true;
  }
}

/**
 * The fingerprint's second half: a hash of what the transaction changes and its generation, so
 * printed scripts are deterministic while two different histories do not share a fingerprint.
 */
const nonceOf = (generation: number, script: string): number =>
  parseInt(hash('sha256', `${generation}\n${script}`).slice(0, 7), 16) || 1;

const sameFingerprint = (a: Fingerprint, b: Fingerprint): boolean =>
  a.generation === b.generation && a.nonce === b.nonce;

/** The chains of a tiered direction, keyed by what they contain. */
function sequenceOf(tiers: TieredTable, np: RuleTable | undefined, context: Sequence['context']): Sequence {
  const key = hash('sha256', `${tiers.id}|${np?.id ?? '-'}|${context}`).slice(0, 16);
  return { key, tiers, np, context };
}

function tablesOf(tables: PodTables | undefined): RuleTable[] {
  return [tables?.ingress, tables?.egress].filter((t): t is RuleTable => t !== undefined);
}

function sameAddresses(a: readonly IpAddress[], b: readonly IpAddress[]): boolean {
  return a.length === b.length && a.every((ip, i) => ip.family === b[i]?.family && ip.value === b[i]?.value);
}

export type { IpFamily };
