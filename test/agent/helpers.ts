/**
 * Agent test fixtures: objects written to etcd as the reflector writes them (the codec, the
 * layout, a resourceVersion record in the same transaction), a small cluster, and an agent
 * over a datapath built the way `palisade agent` builds it.
 */
import { nftRunner } from '../../src/dataplane/index.ts';
import type { EtcdStore, TxnOp } from '../../src/etcd/index.ts';
import { loadFromObjects } from '../../src/ingest/index.ts';
import type { Cidr } from '../../src/net/ip.ts';
import { PolicyPipeline } from '../../src/pipeline/index.ts';
import { NftablesRenderer } from '../../src/datapaths/nftables/index.ts';
import { EbpfRenderer } from '../../src/datapaths/ebpf/index.ts';
import { PinnedMaps, PreviewMaps } from '../../src/datapaths/ebpf/kernel/index.ts';
import { encodeObject, KeyLayout } from '../../src/reflected/index.ts';
import { ClusterState } from '../../src/state/index.ts';
import { NodeAgent, NodeRealizer, type AgentOptions, type DatapathName } from '../../src/agent/index.ts';
import { openNodeDatapath, type NodeContext, type NodeDatapath } from '../../src/datapaths/index.ts';
import type { Raw } from '../helpers/builders.ts';

/** Writes objects (or deletes them: `{ delete: raw }`) in one transaction; returns its revision. */
export async function writeObjects(
  store: EtcdStore,
  layout: KeyLayout,
  objects: readonly (Raw | { readonly delete: Raw })[],
): Promise<number> {
  const ops: TxnOp[] = objects.map((o) => {
    if ('delete' in o) {
      const encoded = encodeObject(layout, o.delete as never, 'test');
      return { type: 'delete', key: encoded.key };
    }
    const encoded = encodeObject(layout, o, 'test');
    if (!encoded.value) throw new Error(`invalid test object: ${JSON.stringify(encoded.diagnostics)}`);
    return { type: 'put', key: encoded.key, value: encoded.value };
  });
  // The reflector records a resourceVersion with every batch (status compares with it).
  ops.push({ type: 'put', key: `${layout.resourceVersions}pod`, value: String(Date.now()) });
  return (await store.txn([], ops)).revision;
}

export const namespace = (name: string, labels: Record<string, string> = {}): Raw => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, labels },
});

export const pod = (
  ns: string,
  name: string,
  ip: string,
  node: string,
  labels: Record<string, string>,
  ports: number[] = [80],
): Raw => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: ns, labels },
  spec: { nodeName: node, containers: [{ name: 'c', ports: ports.map((p) => ({ containerPort: p })) }] },
  status: {
    phase: 'Running',
    podIP: ip,
    podIPs: [{ ip }],
    hostIP: node === 'n1' ? '172.16.0.1' : '172.16.0.2',
  },
});

export const policy = (
  ns: string,
  name: string,
  selected: Record<string, string>,
  from: Record<string, string>,
  port = 80,
): Raw => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name, namespace: ns },
  spec: {
    podSelector: { matchLabels: selected },
    policyTypes: ['Ingress'],
    ingress: [{ from: [{ podSelector: { matchLabels: from } }], ports: [{ port }] }],
  },
});

/** A Node of the small cluster (n1 or n2) with its pod CIDRs, as the controller-manager sets them. */
export const nodeWithPodCidrs = (name: string, podCIDRs?: string[]): Raw => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels: { 'kubernetes.io/hostname': name } },
  spec: podCIDRs ? { podCIDRs, podCIDR: podCIDRs[0] } : {},
  status: { addresses: [{ type: 'InternalIP', address: name === 'n1' ? '172.16.0.1' : '172.16.0.2' }] },
});

/** A two-node cluster: web and db pods on n1 and n2, a policy admitting web → db. */
export function smallCluster(): Raw[] {
  return [
    namespace('shop', { team: 'a' }),
    pod('shop', 'web-1', '10.1.0.2', 'n1', { app: 'web' }),
    pod('shop', 'db-1', '10.1.0.3', 'n1', { app: 'db' }, [5432]),
    pod('shop', 'web-2', '10.2.0.2', 'n2', { app: 'web' }),
    pod('shop', 'db-2', '10.2.0.3', 'n2', { app: 'db' }, [5432]),
    policy('shop', 'db-from-web', { app: 'db' }, { app: 'web' }, 5432),
  ];
}

/** Each layout's own vpp-agent prefix (tests share one etcd). */
export const vppPrefix = (layout: KeyLayout): string => `${layout.base}vnf-agent/`;

/** A unique layout root per test (parallel suites share nothing). */
let roots = 0;
export function uniqueLayout(): KeyLayout {
  return new KeyLayout(`/agent-test-${process.pid}-${roots++}`);
}

export interface TestAgent {
  readonly agent: NodeAgent;
  readonly datapath: NodeDatapath;
  readonly state: ClusterState;
}

/** An agent over a datapath built as the CLI builds it (wrap: to inject faults). */
export async function startAgent(
  store: EtcdStore,
  layout: KeyLayout,
  datapath: DatapathName,
  options: Partial<AgentOptions> & {
    node?: string;
    context?: Partial<NodeContext>;
    wrap?: (d: NodeDatapath) => NodeDatapath;
  } = {},
): Promise<TestAgent> {
  const node = options.node ?? 'n1';
  const state = new ClusterState();
  let built = await openNodeDatapath(datapath, {
    node,
    state,
    store,
    vppAgentPrefix: vppPrefix(layout),
    ...options.context,
  });
  if (options.wrap) built = options.wrap(built);
  const agent = new NodeAgent({
    version: 'test',
    leaseTtlSeconds: 2,
    statusIntervalMs: 50,
    backoff: { initialMs: 20, maxMs: 200 },
    ...options,
    node,
    store,
    layout,
    realizer: new NodeRealizer({ node, layout, datapath: built, state }),
  });
  await agent.start();
  return { agent, datapath: built, state };
}

/**
 * Map writes between a namespace's pinned eBPF maps and a fresh render of `objects` for `node`
 * over them (a renderer reading the maps back, writing to a preview): 0 when the kernel holds
 * exactly what a new agent would write.
 */
export function ebpfDistanceFromFresh(netns: string, objects: readonly Raw[], node: string): number {
  const kernel = PinnedMaps.open({ instance: `netns-${netns}` });
  try {
    const preview = new PreviewMaps(kernel);
    const state = new ClusterState();
    const renderer = new EbpfRenderer({
      state,
      node,
      kernel: preview,
      allowNodeLocal: true,
      recheckFlows: true,
    });
    try {
      new PolicyPipeline({ state, renderers: [renderer], node }).apply({
        type: 'resync',
        cluster: loadFromObjects(objects).cluster,
      });
      renderer.settle();
    } catch (error) {
      // The agent committed while this render read the maps: not settled yet, ask again.
      if (/another writer switched them/.test(String(error))) return Number.POSITIVE_INFINITY;
      throw error;
    }
    return preview.changes;
  } finally {
    kernel.close();
  }
}

/**
 * Operations between a namespace's table and a fresh render of `objects` for `node`: 0 when the
 * kernel holds exactly what a new renderer would install (read back, as an agent attaches).
 */
export function distanceFromFresh(
  netns: string,
  objects: readonly Raw[],
  node: string,
  podCidrs: readonly Cidr[],
): number | 'replace' {
  const runner = nftRunner({ netns });
  try {
    const state = new ClusterState();
    const renderer = new NftablesRenderer({
      state,
      runner,
      podCidrs: [...podCidrs],
      allowNodeLocal: true,
      recheckFlows: true,
    });
    renderer.pause();
    new PolicyPipeline({ state, renderers: [renderer], node }).apply({
      type: 'resync',
      cluster: loadFromObjects(objects).cluster,
    });
    return renderer.attach();
  } finally {
    runner.close();
  }
}

/**
 * `palisade agent`'s argument list as tests start it: node `n1` unless named, the etcd URL, the
 * datapath, and the layout's root when given; `extra` arguments after them.
 */
export function agentArgs(options: {
  readonly etcd: string;
  readonly datapath: DatapathName;
  readonly node?: string;
  readonly layout?: KeyLayout;
  readonly extra?: readonly string[];
}): string[] {
  return [
    'agent',
    '--node',
    options.node ?? 'n1',
    '--etcd',
    options.etcd,
    '--datapath',
    options.datapath,
    ...(options.layout ? ['--prefix', options.layout.base.replace(/\/v1\/$/, '')] : []),
    ...(options.extra ?? []),
  ];
}
