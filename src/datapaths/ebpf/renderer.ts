/**
 * The eBPF renderer: one node's policy in the BPF maps its program reads. A node-scoped
 * classifier (src/classifier, the same tables `render --target bitmap` prints) is kept current
 * from the pipeline's transactions; each commit turns what changed — the tables of the pods
 * rendered, the members of the groups that changed — into map entries (NodeMaps) and writes them
 * with the safe update (SidedWriter): new tables beside the old, records on the side no packet
 * reads, one epoch switch, the rest after a grace period. Only changed entries are written.
 *
 * Over the kernel's maps, the renderer starts from what they hold (read back), so a new process
 * attaching to a running node continues incrementally and never trusts a file.
 */
import type { IpAddress } from '../../net/ip.ts';
import type { Endpoint } from '../../model/types.ts';
import type { CompilingStore } from '../../state/index.ts';
import { Classifier, type DirectionTable, type TierTable } from '../../classifier/index.ts';
import { layout, type BpfMaps } from './kernel/index.ts';
import type { Renderer, RendererTxn, RenderedPod } from '../types.ts';
import { NodeMaps, type CommitPlan } from './node-maps.ts';
import type { EbpfContent } from './output.ts';
import { SidedWriter, type CommitCounts, type MapSink } from './commit.ts';
import { tableEntries, type TableEntries } from './table-entries.ts';
import { readBack, type Readback } from './readback.ts';

interface EbpfRendererOptions {
  readonly state: CompilingStore;
  /** The node whose pods this renderer enforces. */
  readonly node: string;
  /** NetworkPolicy allows traffic between a pod and its own node (the reference's default). */
  readonly allowNodeLocal?: boolean;
  /** Tracked connections are judged again after each update (a newly denied one is cut). */
  readonly recheckFlows?: boolean;
  /**
   * Packets between two pods of the node whose both sides are current and allowed, in
   * connections the host does not translate, go straight into the receiver's namespace
   * (bpf/palisade.h, struct peer). Default true.
   */
  readonly directDelivery?: boolean;
  /** New connections' verdicts are counted for the flow reader (CFG_FLOW_EVENTS). Default false. */
  readonly flowEvents?: boolean;
  /** The node's pinned maps; without them the renderer only records what it would write. */
  readonly kernel?: BpfMaps;
  /** Told, after each commit, of local pods that appeared (to attach their interfaces). */
  readonly onNewPods?: (pods: readonly Endpoint[]) => void;
}

/** A transaction that can also run the first phase of an update across nodes (`restrict`). */
interface EbpfTxn extends RendererTxn<EbpfChanges> {
  /**
   * Makes live what the previous and the new policy both allow (new tables beside the old,
   * records restricted); `commit` then makes the new policy live and deletes the old tables.
   */
  restrict(): void;
}

interface Prepared {
  readonly plan: CommitPlan;
  readonly appeared: readonly Endpoint[];
  readonly started: number;
}

export interface EbpfChanges {
  /** Pods rendered and groups changed in the transaction. */
  readonly pods: number;
  readonly groups: number;
}

/** A recorder's counts per map, for printing and statistics. */
interface Recorded {
  readonly operations: number;
  readonly byMap: ReadonlyMap<string, number>;
}

/** The table slots of a record, from a pod's classifier maps. */
function slotsOf(maps: ReturnType<Classifier['mapsOf']>): (DirectionTable | TierTable | undefined)[] {
  const tables = new Array<DirectionTable | TierTable | undefined>(layout.TABLE_SLOTS).fill(undefined);
  tables[layout.T_INGRESS] = maps?.ingress;
  tables[layout.T_EGRESS] = maps?.egress;
  tables[layout.T_ADMIN_INGRESS] = maps?.admin?.ingress;
  tables[layout.T_ADMIN_EGRESS] = maps?.admin?.egress;
  tables[layout.T_BASELINE_INGRESS] = maps?.baseline?.ingress;
  tables[layout.T_BASELINE_EGRESS] = maps?.baseline?.egress;
  return tables;
}

export class EbpfRenderer implements Renderer<EbpfChanges> {
  readonly name = 'ebpf';
  readonly reads = 'store' as const;
  private classifier: Classifier;
  private nodesVersion: number;
  private readonly maps: NodeMaps;
  private readonly writer: SidedWriter;
  private readonly recorder = { operations: 0, byMap: new Map<string, number>() };
  private readonly entries = new WeakMap<object, TableEntries>();
  /** What each local pod was last rendered with (to skip pods whose tables did not change). */
  private readonly rendered = new Map<string, { ips: readonly IpAddress[]; tables: readonly unknown[] }>();
  private readback: Readback | undefined;
  private built = false;
  /** The last commit's counts and its time from commit() to the epoch switch. */
  lastCommit: (CommitCounts & { readonly millis: number }) | undefined;
  /** The last first phase's (restrict()). */
  lastRestrict: (CommitCounts & { readonly millis: number }) | undefined;

  constructor(private readonly options: EbpfRendererOptions) {
    const kernel = options.kernel;
    let sink: MapSink;
    if (kernel) {
      this.readback = readBack(kernel);
      kernel.put(
        'config',
        layout.u32(0),
        layout.u32(
          ((options.allowNodeLocal ?? true) ? layout.CFG_ALLOW_NODE_LOCAL : 0) |
            ((options.recheckFlows ?? true) ? layout.CFG_RECHECK_FLOWS : 0) |
            ((options.directDelivery ?? true) ? 0 : layout.CFG_NO_DIRECT) |
            (options.flowEvents ? layout.CFG_FLOW_EVENTS : 0),
        ),
      );
      sink = kernel;
    } else {
      const recorder = this.recorder;
      const count = (map: string) => {
        recorder.operations++;
        recorder.byMap.set(map, (recorder.byMap.get(map) ?? 0) + 1);
      };
      sink = { put: (map) => count(map), remove: (map) => count(map) };
    }
    this.maps = new NodeMaps(options.state, this.readback?.known);
    this.writer = new SidedWriter(sink, this.readback?.start);
    this.classifier = this.build();
    this.nodesVersion = options.state.nodesVersion;
  }

  get node(): string {
    return this.options.node;
  }

  get epoch(): number {
    return this.writer.epoch;
  }

  /** Operations recorded (without a kernel). */
  get recorded(): Recorded {
    return this.recorder;
  }

  /** The in-process classifier behind the maps (this node's pods only). */
  get tablesClassifier(): Classifier {
    return this.classifier;
  }

  /** The maps' content now: every table in use, every address record, the groups' ids. */
  content(): EbpfContent {
    return {
      epoch: this.writer.epoch,
      tables: this.maps.liveTables(),
      records: this.maps.records(),
      groups: this.maps.groupReferences(),
      groupIds: this.maps.groupIds(),
    };
  }

  /** Runs the previous commit's tail now (tests; a closing process). */
  settle(): void {
    this.writer.finishTail();
  }

  newTxn(options: { readonly resync: boolean }): EbpfTxn {
    const pods = new Set<string>();
    const groups = new Set<string>();
    let prepared: Prepared | undefined;
    const prepare = (): Prepared => (prepared ??= this.prepare(pods, groups, options.resync));
    return {
      render: (pod: RenderedPod) => {
        pods.add(pod.id);
      },
      groupsChanged: (changed) => {
        for (const group of changed) groups.add(group);
      },
      changes: () => ({ pods: pods.size, groups: groups.size }),
      restrict: () => {
        const p = prepare();
        const counts = this.writer.commitRestricted(p.plan, (hash) => this.maps.groupId(hash));
        this.lastRestrict = { ...counts, millis: performance.now() - p.started };
      },
      commit: () => {
        const p = prepare();
        const counts = this.writer.commit(p.plan, (hash) => this.maps.groupId(hash));
        this.lastCommit = { ...counts, millis: performance.now() - p.started };
        if (p.appeared.length > 0) this.options.onNewPods?.(p.appeared);
      },
    };
  }

  /** The classifier brought up to date and what the commit writes (nothing written yet). */
  private prepare(pods: ReadonlySet<string>, groups: ReadonlySet<string>, resync: boolean): Prepared {
    const started = performance.now();
    const state = this.options.state;
    const candidates = new Set(pods);
    const appeared: Endpoint[] = [];
    if (resync || !this.built || state.nodesVersion !== this.nodesVersion) {
      this.classifier = this.build();
      this.nodesVersion = state.nodesVersion;
      this.built = true;
      this.maps.setNodeAddresses(this.nodeAddresses());
      this.maps.refreshAllGroups();
      for (const id of this.rendered.keys()) candidates.add(id);
      for (const pod of state.allPods()) if (pod.node === this.options.node) candidates.add(pod.id);
    } else {
      for (const id of pods) this.classifier.setPod(id, state.pod(id));
      if (groups.size > 0) {
        this.classifier.groupsChanged(groups);
        this.maps.refreshGroups(groups);
        // Tables that expand named-port groups were rebuilt for their users: look at every pod.
        for (const id of this.rendered.keys()) candidates.add(id);
      }
    }
    for (const id of candidates) {
      const pod = state.pod(id);
      const local = pod && pod.node === this.options.node && !pod.hostNetwork && pod.ips.length > 0;
      const tables = local ? slotsOf(this.classifier.mapsOf(pod.ips[0] as IpAddress)) : undefined;
      const before = this.rendered.get(id);
      if (pod && tables && before && before.ips === pod.ips && before.tables.every((t, i) => t === tables[i]))
        continue;
      if (pod && tables) {
        this.maps.setEndpoint(
          id,
          pod.ips,
          tables.map((t) => t && this.entriesOf(t)),
        );
        if (!before) appeared.push(pod);
        this.rendered.set(id, { ips: pod.ips, tables });
      } else if (before) {
        this.maps.setEndpoint(id, [], undefined);
        this.rendered.delete(id);
      }
    }
    const readback = this.readback;
    this.readback = undefined;
    // Over read-back maps, every record the kernel holds is compared with the model too.
    if (readback) this.maps.touch(readback.addresses);
    this.maps.refreshReplacedGroups();
    let plan = this.maps.plan();
    if (readback) plan = this.withKernelGarbage(plan, readback);
    return { plan, appeared, started };
  }

  /** The first commit over read-back maps: tables and group names it does not take over go in the tail. */
  private withKernelGarbage(plan: CommitPlan, readback: Readback): CommitPlan {
    const live = new Set(this.maps.liveTables().map((t) => t.id));
    const liveGroups = new Set(this.maps.groupReferences().keys());
    return {
      ...plan,
      deadTables: [...plan.deadTables, ...readback.tables.filter((t) => !live.has(t.id))],
      deadGroups: [...plan.deadGroups, ...[...readback.groups.keys()].filter((id) => !liveGroups.has(id))],
      raw: readback.raw,
    };
  }

  private entriesOf(table: DirectionTable | TierTable): TableEntries {
    let entries = this.entries.get(table);
    if (!entries) {
      entries = 'actions' in table ? tableEntries(table.table, table.actions) : tableEntries(table);
      this.entries.set(table, entries);
    }
    return entries;
  }

  /** This node's addresses: its NodeInfo's and its host-network pods' (node-local traffic). */
  private nodeAddresses(): IpAddress[] {
    const state = this.options.state;
    const ips: IpAddress[] = [];
    for (const node of state.nodes())
      if (node.name === this.options.node) for (const ip of node.addresses) ips.push(ip);
    for (const pod of state.allPods())
      if (pod.hostNetwork && pod.node === this.options.node) for (const ip of pod.ips) ips.push(ip);
    return ips;
  }

  private build(): Classifier {
    const classifier = new Classifier(this.options.state, {
      tiers: true,
      allowNodeLocal: this.options.allowNodeLocal ?? true,
      node: this.options.node,
    });
    for (const node of this.options.state.nodes()) classifier.addNodeAddresses(node.name, node.addresses);
    return classifier;
  }
}
