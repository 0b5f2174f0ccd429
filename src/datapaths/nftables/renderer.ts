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
 * What the table should hold is kept pod by pod in `desired-table.ts`; this file turns it into
 * transactions and keeps them in step with the kernel. Commits are incremental nft transactions
 * listing only what changed. Between nodes, an update
 * can run in two phases (after Mizar's "delete first, insert after"): `restrict` moves every
 * changed pod to what both the old and the new policy permit, `relax` then to the new policy.
 * When every node finishes the first phase before any starts the second, no packet crossing two
 * nodes meets a mix of versions that permits what neither version permits.
 */
import type { Cidr, IpFamily } from '../../net/ip.ts';
import type { ReadonlyStore } from '../../state/index.ts';
import { DataplaneError, type NftRunner } from '../../dataplane/index.ts';
import type { Renderer, RendererTxn } from '../types.ts';
import { hash, randomInt } from 'node:crypto';
import { FAMILIES, podCidrSet, TABLE } from './names.ts';
import type { NftObjects, Dirty } from './objects.ts';
import { fingerprintScript, replaceTableScript, tableBlock } from './objects.ts';
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
import { DesiredTable } from './desired-table.ts';
import { auditTable, learnFromEcho } from './audit.ts';

interface NftablesOptions extends BaseChainOptions {
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

export class NftablesRenderer implements Renderer<NftablesChanges> {
  readonly reads = 'tables' as const;
  readonly name = 'nftables';
  private readonly table: DesiredTable;
  private readonly desired: NftObjects;
  private applied: NftObjects | undefined;
  private readonly dirty: Dirty;
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
  /** Chains' rules as the kernel printed them when first audited (audit.ts). */
  private readonly learned = new Map<string, string>();
  /** The digest of the last listing found to hold exactly the committed table. */
  private lastAudited: string | undefined;
  /** Fingerprints of the latest commits, newest last (to tell this renderer's transactions from others'). */
  private readonly committed: string[] = [];

  constructor(private readonly options: NftablesOptions) {
    this.families = options.families ?? FAMILIES;
    this.table = new DesiredTable(options, this.families);
    this.desired = this.table.objects;
    this.dirty = this.table.dirty;
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

  /**
   * Compares the kernel's table with what the last commit left (audit.ts): one line per
   * difference, none when it holds exactly that or nothing was committed yet. One read of the
   * table; a listing equal to the last one found right is not compared again. `learn`: chains
   * not audited since their commit are learned as the kernel prints them (pass false when
   * another writer may have touched the table since). Throws DataplaneError when nft fails.
   */
  audit(learn: boolean): readonly string[] {
    if (!this.applied || this.paused) return [];
    const listing = this.options.runner.query(`list table ${TABLE}`);
    const digest = listing === undefined ? undefined : hash('sha1', listing);
    if (digest !== undefined && digest === this.lastAudited) return [];
    const committed = { fingerprint: this.fingerprint, objects: this.applied, baseChains: this.baseChains() };
    const { differences } = auditTable(listing, committed, this.learned, learn);
    if (differences.length === 0) this.lastAudited = digest;
    return differences;
  }

  /**
   * Replaces the kernel's table with the committed one, whole, in one transaction (the repair of
   * whatever another writer did to it), and learns the chains' rules from that transaction's
   * echo (audit.ts). Returns whether it learned them (false: the runner reaches no kernel).
   * Throws DataplaneError when nft refused.
   */
  replaceAll(): boolean {
    this.applied = undefined;
    this.learned.clear();
    this.lastAudited = undefined;
    const planned = this.plan('all');
    const echo = this.applyPlan(planned, true, true);
    const generation = this.fingerprint.generation;
    const base = this.baseChains(generation);
    return learnFromEcho(echo, (chain) => (base.has(chain) ? `${chain}@${generation}` : chain), this.learned);
  }

  /** Whether `fingerprint` (`generation . nonce`) is one of this renderer's latest commits. */
  committedFingerprint(fingerprint: string): boolean {
    return this.committed.includes(fingerprint);
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
        this.table.renderPod(pod, tables);
      },
      groupsChanged: (groups, pods) => {
        planned = undefined;
        this.table.refreshGroups(groups, pods);
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
    this.table.removeAllPods();
    this.applied = undefined;
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

  /** Commits a plan; with `echo`, returns nft's echo of the transaction (see NftRunner.apply). */
  private applyPlan(planned: Plan, complete = true, echo = false): string {
    this.appliedVersion++;
    let echoed = '';
    if (planned.script !== '' && planned.fingerprint) {
      // Noted before sending: the kernel's notification of the commit may come before nft returns.
      this.committed.push(fingerprintText(planned.fingerprint));
      if (this.committed.length > 64) this.committed.shift();
      echoed = this.send(planned.script, planned.fingerprint, echo);
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
    return echoed;
  }

  /**
   * Applies a script. When nft fails or does not answer, what the kernel holds is read back
   * before anything is said about it: a transaction committed after all (its fingerprint is in
   * the kernel) counts as done; otherwise the renderer adopts what the kernel holds, so the next
   * commit starts from it, and the error says what was found.
   */
  private send(script: string, next: Fingerprint, echo = false): string {
    try {
      return this.options.runner.apply(script, { echo });
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
      // Committed; the answer (and any echo) was lost.
      if (kernel?.fingerprint && sameFingerprint(kernel.fingerprint, next)) return '';
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

export type { IpFamily };
