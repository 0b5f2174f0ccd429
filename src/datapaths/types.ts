/**
 * The renderers' contracts. A renderer realizes compiled tables on a target (nftables, VPP,
 * Neutron, a classifier): every change reaches it as a transaction — `render` each affected pod
 * with its current tables (or none: the pod is gone or postponed), then `changes()` tells what
 * the transaction would alter and `commit()` realizes it. With `resync`, pods not rendered in
 * the transaction are removed.
 *
 * A render target wraps a renderer for everything that picks datapaths by name — `palisade
 * render --target`, the node agent's `--datapath`, the conformance suite: what it can do, how it
 * is built over a store, what it prints, and how its output matches packets.
 */
import type { Cidr, IpAddress } from '../net/ip.ts';
import type { Cluster, Protocol } from '../model/types.ts';
import type { PodTables } from '../configurator/types.ts';
import type { CompilingStore } from '../state/types.ts';
import type { EtcdStore } from '../etcd/types.ts';
import type { VerdictEvent } from '../flows/types.ts';

export interface RenderedPod {
  readonly id: string;
  readonly ips: readonly IpAddress[];
  readonly node?: string;
}

export interface RendererTxn<Changes = unknown> {
  render(pod: RenderedPod, tables: PodTables | undefined): void;
  /**
   * Address groups whose members changed, and the pods that joined, left or changed in them;
   * set-based renderers update their sets.
   */
  groupsChanged?(groups: ReadonlySet<string>, pods: ReadonlySet<string>): void;
  changes(): Changes;
  commit(): void;
}

export interface Renderer<Changes = unknown> {
  readonly name: string;
  /**
   * What the renderer reads — one, never both. 'tables': the configurator's compiled tables each
   * `render(pod, tables)` hands it, and nothing else (nftables, VPP ACL, VPPTCP). 'store': the
   * cluster through the `CompilingStore` read interface it was built over (its endpoints,
   * ordered policy and address groups), ignoring the tables it is handed (the classifier and
   * eBPF build their own classifier from it; Neutron's groups are per policy). A pipeline whose
   * every renderer reads the store compiles no tables, and renders pods with none.
   */
  readonly reads: 'tables' | 'store';
  newTxn(options: { readonly resync: boolean }): RendererTxn<Changes>;
}

/** What a target can do; callers read these instead of comparing target names. */
interface TargetCapabilities {
  /**
   * 'node': an instance realizes one node's pods (and that node's global table), as a node
   * agent does; 'cluster': one instance realizes the whole cluster (Neutron's security groups are
   * cluster-wide; the classifier answers for every endpoint).
   */
  readonly scope: 'node' | 'cluster';
  /** Node targets: a node must be named (its output is one node's); otherwise every node is rendered. */
  readonly nodeRequired: boolean;
  /**
   * Ordered cluster policy (AdminNetworkPolicy, BaselineAdminNetworkPolicy,
   * ClusterNetworkPolicy): `true` when enforced; otherwise why the target cannot express it, and
   * input with any is refused rather than enforced differently from the reference.
   */
  readonly orderedClusterPolicy: true | { readonly refusal: string };
  /**
   * Calico's and Cilium's policies (tiers in any number, a Pass to a later tier, NetworkPolicy's
   * tier shared with them, blocks outside the cluster): `true` when enforced; otherwise why not,
   * and input with any is refused. Absent: as `orderedClusterPolicy`.
   */
  readonly enginePolicy?: { readonly refusal: string };
  /**
   * Whether traffic between a pod and its own node passes through the target's policy (VPP's
   * host reaches its pods before any ACL or session rule). Where it does not, ordered cluster
   * policy on that traffic is not enforced, and the target's notes say so.
   */
  readonly policesOwnNode: boolean;
  /**
   * Where the target realizes its output itself, besides printing it: 'kernel' (the node's own
   * datapath; needs root). Absent: the target only prints — another program applies the
   * document (a vpp-agent, Neutron's API), which is what a node agent writes for it.
   */
  readonly applies?: 'kernel';
}

/**
 * Options a target may read (each reads those that mean something to it and ignores the rest).
 * Entry points resolve them once from their flags; later datapaths add theirs here.
 */
export interface TargetOptions {
  /** The node's pod CIDRs: addresses in them without a rendered pod are dropped (fail closed). Default none. */
  readonly podCidrs?: readonly Cidr[];
  /** Traffic between a node and its own pods bypasses policy, as the evaluator says. Default true. */
  readonly allowNodeLocal?: boolean;
  /** Tracked connections a later policy denies are cut at their next packet. Default true. */
  readonly recheckFlows?: boolean;
  /**
   * eBPF: packets between two pods of the node, in connections the host's conntrack does not
   * translate, go straight into the receiver's namespace once both sides allow them. Default true.
   */
  readonly directDelivery?: boolean;
  /** Targets that apply: realize the output (undefined: record it for printing only). */
  readonly apply?: { readonly netns?: string };
}

/** Where an instance is built: its node (node targets) and its options. */
interface TargetContext {
  readonly node?: string;
  readonly options: TargetOptions;
}

/** A target built over one store: its renderer joins that store's pipeline. */
export interface TargetInstance<Output> {
  readonly renderer: Renderer;
  /** What the instance has realized so far, in the target's own model (computed when asked). */
  output(): Output;
}

/** One instance's output, with its node for node targets. */
export interface Rendered<Output> {
  readonly node?: string;
  readonly output: Output;
}

/** How `render` prints outputs. */
interface PrintOptions {
  /** One of the target's `formats`. */
  readonly format: string;
  /** Also print counts (targets that keep any). */
  readonly stats: boolean;
  /**
   * An earlier printed output, already checked by the target's `checkPrevious`: targets that
   * print API calls print only those that turn it into this one.
   */
  readonly previous?: unknown;
}

/** What `render` prints: one document on stdout; warnings and counts on stderr. */
export interface Printed {
  readonly document: { readonly json: unknown } | { readonly text: string };
  /** What the target cannot express, one line each (without the `palisade: warning:` prefix). */
  readonly warnings: readonly string[];
  /** A line of counts, when asked for and kept. */
  readonly stats?: string;
}

/** A packet as interpreters judge it: the first packet of a connection, one address family. */
export interface VerdictPacket {
  readonly src: IpAddress;
  readonly dst: IpAddress;
  readonly protocol: Protocol;
  readonly port: number;
}

/**
 * How a target's output matches packets, written after the target's own semantics — the shared
 * conformance suite holds it to the reference evaluator.
 */
interface PacketInterpreter<Output> {
  /**
   * Verdicts for packets between the cluster's addresses, given the target's output for the
   * whole cluster (node targets: one per node that has pods, as `renderCluster` builds them).
   */
  verdicts(rendered: readonly Rendered<Output>[], cluster: Cluster): (packet: VerdictPacket) => boolean;
  /** Packets the target does not police at all: the suite skips them, for this reason. */
  unpoliced?(packet: VerdictPacket): string | undefined;
  /**
   * Packets the target can only deny where it cannot match exactly: the suite asserts only
   * "never allowed where the reference denies", for this reason.
   */
  deniesOnly?(packet: VerdictPacket): string | undefined;
}

/**
 * A render target's implementation (its folder's `target.ts`); the registry adds its name and
 * description and loads it on first use.
 */
export interface TargetImplementation<Output = unknown> {
  readonly capabilities: TargetCapabilities;
  /** Formats `render -o` accepts; the first is the default. */
  readonly formats: readonly [string, ...string[]];
  /**
   * An instance over a store: for node targets only that node's pods reach it (the pipeline is
   * scoped to the node); its renderer must join the pipeline before the first change.
   */
  create(store: CompilingStore, context: TargetContext): TargetInstance<Output>;
  /** The document for rendered outputs (node targets: one per node, in node order). */
  print(rendered: readonly Rendered<Output>[], options: PrintOptions): Printed;
  /** Checks an earlier printed output given to `print` as `previous`: a problem, or undefined. */
  checkPrevious?(value: unknown): string | undefined;
  /** In-process packet matching; absent when only the kernel can judge the output (the lab probes it). */
  readonly interpreter?: PacketInterpreter<Output>;
}

/** A registered render target: its name and description, and its implementation once loaded. */
export interface RenderTarget<Output = unknown> extends TargetImplementation<Output> {
  /** What `--target` and `--datapath` take. */
  readonly name: string;
  /** One line for help texts. */
  readonly description: string;
}

/** What a node's datapath holds, for status and metrics. */
export interface DatapathCounts {
  /** Rule tables (nftables chains, ACLs, session-rule tables, classifier tables). */
  readonly tables: number;
  readonly rules: number;
  /** Address sets (nftables); 0 where the target has none. */
  readonly sets: number;
}

/**
 * A datapath opened on one node — the one lifecycle every backend implements (its folder's
 * `node.ts`), which `palisade agent` drives: open (the registry's `openNodeDatapath`), prepare,
 * realize each batch, verify and repair, clean up, close. Its renderer joins the node's pipeline; a
 * kernel backend realizes inside the pipeline's commit (which throws when the kernel refused,
 * leaving it as it was), a document backend in `realize`, after the commit. The world drifts: what
 * the datapath holds is verified against what was last realized, and repaired, on the agent's
 * timer and when the datapath's own notifications (`watch`) say something changed it.
 */
export interface NodeDatapath {
  /** Its name as `palisade agent --datapath` takes it. */
  readonly name: string;
  /**
   * 'cluster': it realizes the whole cluster, not one node's pods (Neutron's security groups):
   * the agent's mirror decodes every policy, not only those of namespaces with a pod on the node.
   */
  readonly scope?: 'cluster';
  readonly renderer: Renderer;
  /**
   * Before the first snapshot: reads what the node holds and says in one line what it enforces
   * meanwhile (a kernel keeps the table a previous agent left, or fails closed with an empty one).
   * Commits are held back until `realize(true)`.
   */
  prepare(): Promise<string>;
  /**
   * Realizes what the pipeline's last commit left pending: the first snapshot (`first`), a
   * retry after a failure, or documents to write. Throws if it could not (nothing half-done).
   */
  realize(first: boolean): Promise<void>;
  counts(): DatapathCounts;
  /**
   * What the node holds that differs from what was last realized, one line per difference
   * (empty: it holds exactly that). Throws when it cannot be read.
   */
  verify(): Promise<readonly string[]>;
  /** Brings the node back to what was last realized, in one transaction. Throws if it could not. */
  repair(): Promise<void>;
  /**
   * Starts watching for changes made by others (kernel notifications), calling `suspect` when one
   * may have touched what this datapath holds. Optional: without it only the timer verifies.
   */
  watch?(suspect: (why: string) => void): void;
  /**
   * With `NodeContext.flowLog`: the new connections' verdicts the kernel reported since the last
   * call (never waits; eBPF: counted by kind in the kernel, an event per kind with its count).
   * Absent where the datapath cannot report them.
   */
  flows?(): readonly VerdictEvent[];
  /**
   * Whether the kernel reported connections that the next `flows()` calls give and the last did
   * not (eBPF's counts are read a poll after they are made): the agent polls again soon, rather
   * than later as it does when nothing happens. Absent: never.
   */
  flowsPending?(): boolean;
  /**
   * Reports the kernel or the reader had to drop (overload), since the start: eBPF, connections;
   * nftables, nflog overruns and stages left unmatched.
   */
  flowsLost?(): number;
  /** Removes everything this datapath installed on the node; returns what was removed, in one line. */
  cleanup(): Promise<string>;
  close(): Promise<void>;
}

/** What a datapath is opened with: the node, the store its renderer reads, and where documents go. */
export interface NodeContext {
  readonly node: string;
  readonly state: CompilingStore;
  /** The etcd the agent watches: document datapaths write their keys there (required by them). */
  readonly store?: EtcdStore;
  /** Kernel targets: apply in this network namespace (default: the agent's own). */
  readonly netns?: string;
  /** The node's pod CIDRs: addresses in them without a rendered pod are dropped (fail closed). */
  readonly podCidrs?: readonly Cidr[];
  /** Kernel targets: how long to wait for another holder of the datapath's lock, ms (default 0). */
  readonly lockWaitMs?: number;
  /** Where locks and state live (`--run-dir`, default /run/palisade): locks in `<runDir>/datapath`. */
  readonly runDir?: string;
  /** The caller holds the datapath's lock for the process (`lockForProcess`): do not take it again. */
  readonly lockHeld?: boolean;
  /** Node-to-own-pod traffic bypasses policy, as the reference evaluator says. Default true. */
  readonly allowNodeLocal?: boolean;
  /** Tracked connections a later policy denies are cut at their next packet. Default true. */
  readonly recheckFlows?: boolean;
  /**
   * eBPF: packets between two pods of the node, in connections the host's conntrack does not
   * translate, go straight into the receiver's namespace. Default true (off, with a note, where
   * the node's conntrack could not take such a connection back: host-conntrack.ts).
   */
  readonly directDelivery?: boolean;
  /** VPP datapaths: the vpp-agent's microservice label (default: the node name). */
  readonly vppAgentLabel?: string;
  /** VPP datapaths: the vpp-agent key prefix (default `/vnf-agent/`). */
  readonly vppAgentPrefix?: string;
  /** Most operations in one etcd transaction (etcd's --max-txn-ops, default 128). */
  readonly maxTxnOps?: number;
  /** Kernel targets: report new connections' verdicts (`NodeDatapath.flows`). Default false. */
  readonly flowLog?: boolean;
  /** The Neutron datapath: Neutron's API and the project its objects go in. */
  readonly neutron?: NeutronConnection;
}

/** Where the Neutron datapath (Kuryr's controller) finds Neutron. */
export interface NeutronConnection {
  /** The API's root, e.g. `http://127.0.0.1:9696`. */
  readonly url: string;
  /** The project (tenant) Palisade's security groups are created in. */
  readonly project: string;
  /** A Keystone token, sent as `X-Auth-Token` (absent: Neutron runs with noauth). */
  readonly token?: string;
  /** The network to create pods' ports in when none exists (the lab's; absent: ports are only found). */
  readonly network?: string;
}

/** The nodes and pods a fleet spans (the lab's plan is one). */
export interface FleetPlan {
  readonly nodes: readonly { readonly name: string; readonly netns: string }[];
  /** Each pod's node and its veth end in that node's namespace. */
  readonly pods: readonly { readonly node: string; readonly hostInterface: string }[];
}

/** What a fleet is opened with. */
export interface FleetContext {
  readonly plan: FleetPlan;
  readonly store: CompilingStore;
  readonly allowNodeLocal: boolean;
  readonly killDenied: boolean;
  readonly families: readonly (4 | 6)[];
}

/**
 * One backend's datapaths on several nodes driven by one process (the lab): one renderer for the
 * whole fleet, committing in two phases across nodes (prepare on every node, then switch every
 * node), so a change is never live on one node and not another. What each node holds is the same
 * as a NodeDatapath of that backend would hold; the fleet adds the cross-node commit and the
 * lab's checks around it.
 */
export interface FleetDatapath {
  readonly kind: string;
  /** The pipeline's renderer (all nodes). */
  readonly renderer: Renderer;
  /**
   * How attach() leaves the kernel: false — the next commit sends the difference between what
   * the kernel holds and the policy (nftables); true — verify() asks for the resync that does
   * (eBPF, whose renderers only previewed while paused).
   */
  readonly resyncsAfterAttach: boolean;
  /** Before the first resync of a re-opened fleet: build what is desired without committing. */
  pause(): void;
  /** After it: nodes whose kernel state differed from the policy, and by how much. */
  attach(): { readonly node: string; readonly pending: number | 'replace' }[];
  /**
   * Before an apply: checks each node's kernel state is what this process last committed and
   * catches up where another process changed it. True when the pipeline must be resynced
   * (always, for eBPF, after attach()).
   */
  verify(): boolean;
  /** After a rollback: nodes whose kernel state is not what was last committed. */
  unchecked(): string[];
  /** Operations per node of the pipeline result's changes ('whole table' when replaced whole). */
  operations(changes: unknown): Map<string, number | 'whole table'>;
  close(): void;
}

/** A backend's fleet side (its folder's `fleet-datapath.ts`). */
export interface FleetBackend {
  open(context: FleetContext): FleetDatapath;
  /** Removes what the fleet left outside its nodes' namespaces (pins); returns what failed. */
  remove(plan: FleetPlan): string[];
}

/** Why the classifier's targets (bitmap, ebpf) refuse Calico's and Cilium's policies. */
export const CLASSIFIER_ENGINE_REFUSAL =
  "cannot express Calico's or Cilium's policies yet: the classifier holds one Admin and one Baseline table per pod side, so tiers in any number, a Pass to a later tier, NetworkPolicy's tier shared with them and blocks outside the cluster have no form";
