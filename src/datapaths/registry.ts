/**
 * Every datapath backend, by name — the one registry that `palisade render --target`, the node
 * agent's `--datapath`, the lab's `--datapath` and the conformance suites choose from. A backend
 * is one folder: its render target (`target.ts`), and where it runs on nodes, its node lifecycle
 * (`node.ts`: a NodeDatapath) and, for the lab, its fleet (`fleet-datapath.ts`). Code is loaded
 * on first use, so naming the backends (help texts, choices) costs nothing and a command that
 * uses one never loads the others.
 *
 * Adding a backend: a folder under `datapaths/` and one line below (docs/ARCHITECTURE.md,
 * "Adding a datapath").
 */
import type { FleetBackend, NodeContext, NodeDatapath, RenderTarget, TargetImplementation } from './types.ts';
import { lockNodeDatapath } from './node-lock.ts';

interface NodeSide {
  /** What `palisade agent --datapath` calls it (the target's name unless said). */
  readonly name: string;
  /** Whether it changes the node's kernel: then one process at a time holds its lock. */
  readonly kernel: boolean;
  /**
   * Whether one process writes it for the whole cluster (Neutron's security groups): its agents
   * are controllers, of which one leads and the others stand by (src/agent/leadership.ts).
   */
  readonly clusterWide?: boolean;
  readonly open: () => Promise<(context: NodeContext) => NodeDatapath>;
}

interface Entry<Output> {
  readonly description: string;
  readonly load: () => Promise<TargetImplementation<Output>>;
  /**
   * Its lifecycle under `palisade agent` (absent: nothing runs there). Neutron's runs once for the
   * whole cluster (its NodeDatapath has `scope: 'cluster'`): Kuryr's controller, not a node's datapath.
   */
  readonly node?: NodeSide;
  /** Its fleet, for the lab (absent: the lab cannot run it). */
  readonly fleet?: () => Promise<FleetBackend>;
}

type Sides = Pick<Entry<unknown>, 'node' | 'fleet'>;

const entry = <Output, S extends Sides = Record<never, never>>(
  description: string,
  load: () => Promise<TargetImplementation<Output>>,
  sides?: S,
): Entry<Output> & S => ({ description, load, ...(sides as S) });

const BACKENDS = {
  nftables: entry(
    "one node's nftables table: an nft script, or applied to the kernel",
    () => import('./nftables/target.ts').then((m) => m.nftablesTarget),
    {
      node: {
        name: 'nftables',
        kernel: true,
        open: () => import('./nftables/node.ts').then((m) => m.openNftablesNode),
      },
      fleet: () => import('./nftables/fleet-datapath.ts').then((m) => m.nftablesFleet),
    },
  ),
  ebpf: entry(
    "one node's BPF maps for the eBPF datapath (JSON), or loaded and attached to the kernel",
    () => import('./ebpf/target.ts').then((m) => m.ebpfTarget),
    {
      node: { name: 'ebpf', kernel: true, open: () => import('./ebpf/node.ts').then((m) => m.openEbpfNode) },
      fleet: () => import('./ebpf/fleet-datapath.ts').then((m) => m.ebpfFleet),
    },
  ),
  bitmap: entry(
    "the in-process classifier's Mizar-style maps per endpoint (JSON)",
    () => import('./bitmap/target.ts').then((m) => m.bitmapTarget),
    {
      node: {
        name: 'classifier',
        kernel: false,
        open: () => import('./bitmap/node.ts').then((m) => m.openClassifierNode),
      },
    },
  ),
  'vpp-acl': entry(
    'ligato vpp-agent ACLs per node (JSON)',
    () => import('./vpp-acl/target.ts').then((m) => m.vppAclTarget),
    {
      node: {
        name: 'vpp-acl',
        kernel: false,
        open: () => import('./vpp-acl/node.ts').then((m) => m.openVppAclNode),
      },
    },
  ),
  vpptcp: entry(
    'VPP session rules per node (JSON)',
    () => import('./vpptcp/target.ts').then((m) => m.vpptcpTarget),
    {
      node: {
        name: 'vpptcp',
        kernel: false,
        open: () => import('./vpptcp/node.ts').then((m) => m.openVpptcpNode),
      },
    },
  ),
  neutron: entry(
    "the cluster's OpenStack Neutron security groups and API requests (JSON)",
    () => import('./neutron/target.ts').then((m) => m.neutronTarget),
    {
      node: {
        name: 'neutron',
        kernel: false,
        clusterWide: true,
        open: () => import('./neutron/node.ts').then((m) => m.openNeutronNode),
      },
    },
  ),
};

type Backends = typeof BACKENDS;
type TargetName = keyof Backends;

/** The output type of a named target's instances. */
type OutputOf<N extends TargetName> = Backends[N] extends Entry<infer O> ? O : never;

/** Target names in registry order. */
export const TARGET_NAMES = Object.keys(BACKENDS) as readonly TargetName[];

export function isTargetName(name: string): name is TargetName {
  return Object.hasOwn(BACKENDS, name);
}

export function targetDescription(name: TargetName): string {
  return BACKENDS[name].description;
}

/** A target, its code loaded. */
export async function loadTarget<N extends TargetName>(name: N): Promise<RenderTarget<OutputOf<N>>> {
  const found = BACKENDS[name] as Entry<OutputOf<N>>;
  return { ...(await found.load()), name, description: found.description };
}

/** Every target, loaded, in registry order (the conformance suite runs them all). */
export async function loadTargets(): Promise<RenderTarget[]> {
  return Promise.all(TARGET_NAMES.map((name) => loadTarget(name) as Promise<RenderTarget>));
}

const nodeSides = new Map<string, NodeSide>(
  Object.values(BACKENDS as Record<string, Entry<unknown>>).flatMap((e) =>
    e.node ? [[e.node.name, e.node]] : [],
  ),
);

/** What `palisade agent --datapath` takes, in registry order. */
export const NODE_DATAPATH_NAMES: readonly string[] = [...nodeSides.keys()];

export function isNodeDatapathName(name: string): boolean {
  return nodeSides.has(name);
}

/** Whether the named datapath is written once for the whole cluster, by an elected controller. */
export function isClusterWideDatapath(name: string): boolean {
  return nodeSide(name).clusterWide === true;
}

function nodeSide(name: string): NodeSide {
  const side = nodeSides.get(name);
  if (!side) throw new Error(`no datapath runs on a node as "${name}"`);
  return side;
}

/**
 * Opens a backend's datapath on a node. A kernel backend's lock is taken first (unless the
 * context says the process holds it: `lockNodeDatapath`), held while it is open and released
 * when it closes, or when it fails to open.
 */
export async function openNodeDatapath(name: string, context: NodeContext): Promise<NodeDatapath> {
  const side = nodeSide(name);
  const open = await side.open();
  const lock = side.kernel && !context.lockHeld ? lockNodeDatapath(name, context) : undefined;
  let datapath: NodeDatapath;
  try {
    datapath = open(context);
  } catch (error) {
    lock?.release();
    throw error;
  }
  if (!lock) return datapath;
  return {
    ...datapath,
    close: () => datapath.close().finally(() => lock.release()),
  };
}

/**
 * Takes a kernel backend's lock for this process (undefined for a backend that changes no
 * kernel), so a datapath opened in a worker thread (`lockHeld`) is still this process's alone —
 * and a worker that dies cannot leave the lock held by a descriptor nobody will close.
 */
export function lockForProcess(
  name: string,
  context: Pick<NodeContext, 'netns' | 'lockWaitMs' | 'runDir'>,
): ReturnType<typeof lockNodeDatapath> | undefined {
  return nodeSide(name).kernel ? lockNodeDatapath(name, context) : undefined;
}

/** The backends the lab can run (those with a fleet). */
export type FleetName = { [N in TargetName]: Backends[N] extends { fleet: unknown } ? N : never }[TargetName];

/** What `palisade lab up --datapath` takes, in registry order. */
export const FLEET_NAMES = TARGET_NAMES.filter(
  (name) => (BACKENDS[name] as Entry<unknown>).fleet !== undefined,
) as readonly FleetName[];

/** A backend's fleet, its code loaded. */
export async function loadFleet(name: FleetName): Promise<FleetBackend> {
  return BACKENDS[name].fleet();
}
