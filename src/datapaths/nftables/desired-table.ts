/**
 * What one node's nftables table should hold, kept up to date pod by pod: the chains of the rule
 * tables and cluster-policy sequences the node's pods use (shared, reference-counted), the address
 * group and CIDR sets they read, and the dispatch entries that send each pod's traffic to its
 * chains. Every change is recorded in `dirty`, so a transaction lists only what changed; the
 * renderer (`renderer.ts`) turns the difference against what the kernel holds into nft scripts.
 */
import type { Cidr, IpAddress, IpFamily } from '../../net/ip.ts';
import type { ReadonlyStore } from '../../state/index.ts';
import { formatIp } from '../../net/ip.ts';
import type { Rule, RuleTable } from '../../model/rule.ts';
import {
  parseGroupReference,
  referenceMembers,
  type PodTables,
  type TieredTable,
} from '../../configurator/index.ts';
import type { RenderedPod } from '../types.ts';
import { hash } from 'node:crypto';
import {
  addressType,
  continuationChain,
  dispatchMap,
  groupSet,
  localDispatchMap,
  localPodsSet,
  netSetType,
  podCidrSet,
  replyTwin,
  denyVerdict,
  replyVerdict,
  sequenceChain,
  tableChain,
} from './names.ts';
import { Dirty, NftObjects, type SetDeclaration } from './objects.ts';
import { renderOrderedChain, renderTableChain, type NetSet } from './table-chain.ts';

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

/** What the desired table reads of the renderer's options (see `NftablesOptions`). */
interface DesiredTableOptions {
  /** The store the compiled tables came from: group members are read from it. */
  readonly state: ReadonlyStore;
  /** The node's pod CIDRs: addresses in them without a rendered pod are dropped. */
  readonly podCidrs?: readonly Cidr[];
  /** Whether pods with cluster policy get node-local dispatch entries (default true). */
  readonly allowNodeLocal?: boolean;
  /** With the flow log, policy drops go through its deny chain (base-chains.ts). */
  readonly flowLog?: { readonly group: number };
}

/** The desired table and the bookkeeping that keeps it in step with the node's pods. */
export class DesiredTable {
  readonly objects = new NftObjects();
  /** What changed in `objects` since the last commit. */
  readonly dirty = new Dirty();
  private readonly pods = new Map<string, LocalPod>();
  private readonly tableUse = new Map<
    string,
    { count: number; table: RuleTable; groups: readonly string[]; sets: readonly string[] }
  >();
  /** Named address-range sets (see `netSet`) and how many table chains use each. */
  private readonly netSetUse = new Map<string, number>();
  private readonly sequenceUse = new Map<
    string,
    { count: number; groups: readonly string[]; chains: readonly string[] }
  >();
  private readonly groupUse = new Map<
    string,
    { count: number; members: Map<string, readonly IpAddress[]> }
  >();
  /** Per set, how many members hold each address (pods may share one, e.g. host network). */
  private readonly elementCounts = new Map<string, Map<string, number>>();

  constructor(
    private readonly options: DesiredTableOptions,
    private readonly families: readonly IpFamily[],
  ) {
    for (const family of families) {
      for (const direction of ['ingress', 'egress'] as const) {
        const maps = [dispatchMap(direction, family)];
        if (options.allowNodeLocal !== false) maps.push(localDispatchMap(direction, family));
        for (const name of maps.flatMap((m) => [m, replyTwin(m)]))
          this.objects.maps.set(name, { type: addressType(family), entries: new Map() });
      }
      this.declareSet(localPodsSet(family), { type: addressType(family) });
      const cidrs = (options.podCidrs ?? []).filter((c) => c.family === family);
      if (cidrs.length > 0) {
        this.declareSet(podCidrSet(family), { type: addressType(family), interval: true });
        const set = this.objects.sets.get(podCidrSet(family));
        for (const cidr of cidrs) set?.elements.add(cidr.text);
      }
    }
  }

  /** Removes every pod (a resync renders them again). */
  removeAllPods(): void {
    for (const id of [...this.pods.keys()]) this.renderPod({ id, ips: [] }, undefined);
  }

  /** Renders one pod (no tables or no addresses: removes it), acquiring before releasing. */
  renderPod(pod: RenderedPod, tables: PodTables | undefined): void {
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
    const np = sequence.np;
    // Each tier its own chain (a pass goes on to the next tier's, or out of the list).
    const admin = tierChains(
      sequence.tiers.admin,
      sequence.tiers.adminBreaks,
      sequenceChain(sequence.key),
      `goto ${next}`,
      this.families,
      denyVerdict(this.options.flowLog),
    );
    const continuation: TierChains = np
      ? sequence.context === 'local'
        ? { chains: [[next, [ALLOW], [ALLOW]]], groups: [] }
        : {
            chains: [[next, [`goto ${tableChain(np.id)}`], [`goto ${replyTwin(tableChain(np.id))}`]]],
            groups: [],
          }
      : tierChains(
          sequence.tiers.baseline,
          sequence.tiers.baselineBreaks,
          next,
          ALLOW,
          this.families,
          denyVerdict(this.options.flowLog),
        );
    const groups = [...new Set([...admin.groups, ...continuation.groups])];
    for (const group of groups) this.acquireGroup(group);
    // Continuations first: a chain must exist before a rule can jump to it.
    const chains = [...continuation.chains, ...admin.chains];
    this.sequenceUse.set(sequence.key, { count: 1, groups, chains: chains.map(([name]) => name) });
    for (const [name, lines, replyLines] of chains) {
      this.objects.chains.set(name, lines);
      this.dirty.chains.add(name);
      this.objects.chains.set(replyTwin(name), replyLines);
      this.dirty.chains.add(replyTwin(name));
    }
  }

  private releaseSequence(sequence: Sequence): void {
    const use = this.sequenceUse.get(sequence.key);
    if (!use || --use.count > 0) return;
    this.sequenceUse.delete(sequence.key);
    for (const name of use.chains.flatMap((chain) => [chain, replyTwin(chain)])) {
      this.objects.chains.delete(name);
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
    const chain = renderTableChain(table, this.families, denyVerdict(this.options.flowLog));
    for (const group of chain.groups) this.acquireGroup(group);
    for (const set of chain.sets) this.acquireNetSet(set);
    this.tableUse.set(table.id, {
      count: 1,
      table,
      groups: chain.groups,
      sets: chain.sets.map((s) => s.name),
    });
    this.objects.chains.set(tableChain(table.id), chain.lines);
    this.objects.chains.set(replyTwin(tableChain(table.id)), chain.replyLines);
    this.dirty.chains.add(tableChain(table.id));
    this.dirty.chains.add(replyTwin(tableChain(table.id)));
  }

  private releaseTable(table: RuleTable): void {
    const use = this.tableUse.get(table.id);
    if (!use || --use.count > 0) return;
    this.tableUse.delete(table.id);
    for (const name of [tableChain(table.id), replyTwin(tableChain(table.id))]) {
      this.objects.chains.delete(name);
      this.dirty.chains.add(name);
    }
    for (const group of use.groups) this.releaseGroup(group);
    for (const set of use.sets) this.releaseNetSet(set);
  }

  private acquireNetSet(set: NetSet): void {
    const count = this.netSetUse.get(set.name) ?? 0;
    this.netSetUse.set(set.name, count + 1);
    if (count > 0) return;
    this.declareSet(set.name, { type: netSetType(set.family), interval: true });
    const elements = this.objects.sets.get(set.name)?.elements;
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
    for (const element of this.objects.sets.get(name)?.elements ?? []) this.dirty.element(name, element);
    this.objects.sets.delete(name);
    this.elementCounts.delete(name);
    this.dirty.sets.add(name);
  }

  /** Re-reads the changed pods' membership in every used group whose members changed. */
  refreshGroups(groups: ReadonlySet<string>, pods: ReadonlySet<string>): void {
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
    this.objects.sets.set(name, { declaration, elements: new Set() });
    this.elementCounts.set(name, new Map());
    this.dirty.sets.add(name);
  }

  private countElement(set: string, element: string, delta: number): void {
    const counts = this.elementCounts.get(set);
    const elements = this.objects.sets.get(set)?.elements;
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
      const entries = this.objects.maps.get(name)?.entries;
      if (!entries || entries.get(key) === value) continue;
      if (value === undefined) entries.delete(key);
      else entries.set(key, value);
      this.dirty.entry(name, key);
    }
  }
}

/** The chains of a tiered direction, keyed by what they contain. */
/** A tier list's chains (name, lines, reply lines; the later tiers' first) and the groups they use. */
interface TierChains {
  readonly chains: readonly (readonly [string, readonly string[], readonly string[]])[];
  readonly groups: readonly string[];
}

/**
 * An ordered list as one chain per tier (`breaks`: where each tier after the first starts),
 * named `first`, `first_1`, …: a pass, or no match, goes to the next tier's chain, and from
 * the last to `exit`.
 */
function tierChains(
  rules: readonly Rule[],
  breaks: readonly number[] | undefined,
  first: string,
  exit: string,
  families: readonly IpFamily[],
  deny: string,
): TierChains {
  const starts = [0, ...(breaks ?? []), rules.length];
  const chains: (readonly [string, readonly string[], readonly string[]])[] = [];
  const groups = new Set<string>();
  for (let t = starts.length - 2; t >= 0; t--) {
    const name = t === 0 ? first : `${first}_${t}`;
    const onward = t + 2 === starts.length ? exit : `goto ${first}_${t + 1}`;
    const chain = renderOrderedChain(
      rules.slice(starts[t], starts[t + 1]),
      { pass: onward, replyPass: replyVerdict(onward) },
      [onward],
      [replyVerdict(onward)],
      families,
      deny,
    );
    for (const group of chain.groups) groups.add(group);
    chains.push([name, chain.lines, chain.replyLines]);
  }
  return { chains, groups: [...groups] };
}

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
