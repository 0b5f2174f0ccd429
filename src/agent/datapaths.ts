/**
 * The agent's datapaths, by `--datapath` name, each resting on what its layer guarantees:
 *
 * - `nftables`: the node's `inet palisade` table, through the nftables renderer's recovery
 *   guarantees (docs/ARCHITECTURE.md): whole transactions only, the table read back on attach
 *   and after any failed or unanswered commit, a fingerprint to notice other writers, and a
 *   flock per network namespace so two agents never plan against the same table. Verified by
 *   auditing the whole table (renderers/nftables/audit.ts), repaired by replacing it in one
 *   transaction; `nft monitor` reports every transaction that touches it, and one that does not
 *   carry this renderer's fingerprint is another writer's.
 * - `ebpf`: the node's BPF program and maps (ebpf-datapath.ts).
 * - `classifier`: the in-process classifier (nothing to install; it answers lookups).
 * - `vpp-acl`, `vpptcp`: documents for a ligato vpp-agent, written to etcd (documents.ts).
 */
import type { Cidr } from '../net/ip.ts';
import { parseCidr } from '../net/ip.ts';
import {
  acquireDatapathLock,
  DataplaneError,
  monitorTable,
  nftRunner,
  type HeldLock,
  keepRunning,
  type TiedProcess,
  type NftRunner,
} from '../dataplane/index.ts';
import { loadTarget } from '../renderers/index.ts';
import { FINGERPRINT_SET, NftablesRenderer, TABLE } from '../renderers/nftables/index.ts';
import type { AgentDatapath, DatapathContext, DatapathCounts } from './types.ts';
import { documentDatapath } from './documents.ts';

/** The datapaths an agent can drive. */
export const DATAPATH_NAMES = ['nftables', 'ebpf', 'classifier', 'vpp-acl', 'vpptcp'] as const;
export type DatapathName = (typeof DATAPATH_NAMES)[number];

export function isDatapathName(name: string): name is DatapathName {
  return (DATAPATH_NAMES as readonly string[]).includes(name);
}

/** Builds a datapath for one node over the agent's store. */
export async function createDatapath(name: DatapathName, context: DatapathContext): Promise<AgentDatapath> {
  switch (name) {
    case 'nftables':
      return nftablesDatapath(context);
    case 'ebpf':
      // The eBPF layer is loaded only for an eBPF agent.
      return (await import('./ebpf-datapath.ts')).ebpfDatapath(
        context,
        context.lockHeld ? undefined : lockDatapath('ebpf', context),
      );
    case 'classifier':
      return classifierDatapath(context);
    case 'vpp-acl':
    case 'vpptcp':
      return documentDatapath(name, context);
  }
}

/** Parses `--pod-cidr` values; throws a one-line error for one that is not a CIDR. */
export function parsePodCidrs(texts: readonly string[]): Cidr[] {
  return texts.map((text) => {
    const parsed = parseCidr(text);
    if (!parsed.ok) throw new DataplaneError(`--pod-cidr ${text} is not a CIDR`);
    return parsed.value;
  });
}

/** The default `--run-dir`. */
export const DEFAULT_RUN_DIR = '/run/palisade';

/**
 * Takes the lock of a kernel datapath for this process (undefined for datapaths without one), so
 * a datapath built in a worker thread (`lockHeld`) is still this process's alone — and a worker
 * that dies cannot leave its lock held by a file descriptor nobody will close.
 */
export function lockDatapath(
  name: DatapathName,
  context: Pick<DatapathContext, 'netns' | 'lockWaitMs' | 'runDir'>,
): HeldLock | undefined {
  if (name !== 'nftables' && name !== 'ebpf') return undefined;
  const where = context.netns ? ` in network namespace ${context.netns}` : '';
  return acquireDatapathLock(context.netns, {
    waitMs: context.lockWaitMs ?? 0,
    what: `the ${name} datapath${where}`,
    root: `${context.runDir ?? DEFAULT_RUN_DIR}/datapath`,
  });
}

function nftablesDatapath(context: DatapathContext): AgentDatapath {
  const where = context.netns ? ` in network namespace ${context.netns}` : '';
  let lock: HeldLock | undefined = context.lockHeld ? undefined : lockDatapath('nftables', context);
  let runner: NftRunner;
  let renderer: NftablesRenderer;
  try {
    runner = nftRunner(context.netns !== undefined ? { netns: context.netns } : {});
    renderer = new NftablesRenderer({
      state: context.state,
      runner,
      podCidrs: context.podCidrs ?? [],
      allowNodeLocal: context.allowNodeLocal ?? true,
      recheckFlows: true,
    });
  } catch (error) {
    lock?.release();
    throw error;
  }
  const pods = context.podCidrs?.length ?? 0;
  /** Another writer may have touched the table since the last audit found it right. */
  let foreign = false;
  let monitor: TiedProcess | undefined;
  return {
    name: 'nftables',
    renderer,
    prepare() {
      return Promise.resolve(prepare());
    },
    realize(first) {
      // The first snapshot was built paused: plan it against what the kernel holds now. After a
      // failed commit the renderer has read the table back; the next commit sends the difference.
      if (first) renderer.attach();
      if (first || renderer.pending() !== 0) renderer.newTxn({ resync: false }).commit();
      return Promise.resolve();
    },
    counts(): DatapathCounts {
      const s = renderer.stats();
      return { tables: s.chains, rules: s.rules, sets: s.sets };
    },
    verify() {
      const differences = renderer.audit(!foreign);
      if (differences.length === 0) foreign = false;
      return Promise.resolve(differences);
    },
    repair() {
      renderer.replaceAll();
      foreign = false;
      return Promise.resolve();
    },
    watch(suspect) {
      monitor = keepRunning(
        (stopped) =>
          monitorTable({
            table: TABLE,
            fingerprintSet: FINGERPRINT_SET,
            ...(context.netns !== undefined ? { netns: context.netns } : {}),
            onTransaction: (txn) => {
              if (txn.fingerprints.some((f) => renderer.committedFingerprint(f))) return;
              foreign = true;
              suspect(`another writer changed the table (generation ${txn.generation}: ${txn.example})`);
            },
            onStopped: stopped,
          }),
        (why) => {
          // Events may have been missed: verify as if another writer had been.
          foreign = true;
          suspect(`${why}; restarting it`);
        },
      );
    },
    cleanup() {
      runner.apply(`table ${TABLE}\ndelete table ${TABLE}\n`);
      return Promise.resolve(`deleted table ${TABLE}${where}`);
    },
    close() {
      monitor?.close();
      runner.close();
      lock?.release();
      lock = undefined;
      return Promise.resolve();
    },
  };
  function prepare(): string {
    // Read what the kernel holds: a table a previous agent left is kept until the first
    // snapshot is rendered (it is the last policy this node enforced); with none, an empty
    // table goes in at once — no pod has a dispatch entry, so the pod CIDRs are dropped.
    const pending = renderer.attach();
    if (pending !== 'replace') {
      renderer.pause();
      return `kept the ${TABLE} table the node held (enforced until the first snapshot is rendered)`;
    }
    renderer.newTxn({ resync: false }).commit();
    renderer.pause();
    return pods > 0
      ? `installed an empty ${TABLE} table${where}: the pod CIDRs are dropped until the first snapshot is rendered`
      : `installed an empty ${TABLE} table${where}; without --pod-cidr nothing is dropped before the first snapshot`;
  }
}

async function classifierDatapath(context: DatapathContext): Promise<AgentDatapath> {
  const target = await loadTarget('bitmap');
  const instance = target.create(context.state, {
    node: context.node,
    options: { allowNodeLocal: context.allowNodeLocal ?? true },
  });
  const renderer = instance.renderer;
  return {
    name: 'classifier',
    renderer,
    prepare: () =>
      Promise.resolve(
        'the classifier holds no policy until the first snapshot is rendered (/readyz says not ready)',
      ),
    realize: () => Promise.resolve(),
    counts() {
      const classifier = instance.output();
      return { tables: classifier.tables, rules: classifier.memory.records, sets: 0 };
    },
    // Nothing outside this process to drift.
    verify: () => Promise.resolve([]),
    repair: () => Promise.resolve(),
    cleanup: () => Promise.resolve('the classifier holds nothing outside this process'),
    close: () => Promise.resolve(),
  };
}
