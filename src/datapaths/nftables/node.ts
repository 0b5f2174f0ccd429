/**
 * nftables on a node: the node's `inet palisade` table, through the renderer's recovery
 * guarantees (docs/ARCHITECTURE.md): whole transactions only, the table read back on attach and
 * after any failed or unanswered commit, a fingerprint to notice other writers. Verified by
 * auditing the whole table (audit.ts), repaired by replacing it in one transaction; `nft monitor`
 * reports every transaction that touches it, and one that does not carry this renderer's
 * fingerprint is another writer's.
 *
 * A repair learns the chains' rules from its replace's own echo and reads the table back at
 * once: a replace that did not take, or a chain edited since, is an error, never "repaired".
 * Before, chains were learned only by a later audit: a replace large enough to overflow
 * `nft monitor` (restarted, so another writer may have been at work) left them unlearned, the
 * next audit replaced the table again, and the monitor overflowed again — a repair every second.
 */
import {
  DataplaneError,
  monitorTable,
  nftRunner,
  keepRunning,
  type TiedProcess,
} from '../../dataplane/index.ts';
import type { DatapathCounts, NodeContext, NodeDatapath } from '../types.ts';
import { FINGERPRINT_SET, TABLE } from './names.ts';
import { NftablesRenderer } from './renderer.ts';
import { DEFAULT_FLOW_LOG_GROUP, openFlowLog, type FlowLogReader } from './flow-log.ts';

/** Opens the node's table (the registry holds the datapath's lock around it). */
export function openNftablesNode(context: NodeContext): NodeDatapath {
  const where = context.netns ? ` in network namespace ${context.netns}` : '';
  const runner = nftRunner(context.netns !== undefined ? { netns: context.netns } : {});
  let renderer: NftablesRenderer;
  try {
    renderer = new NftablesRenderer({
      state: context.state,
      runner,
      podCidrs: context.podCidrs ?? [],
      allowNodeLocal: context.allowNodeLocal ?? true,
      recheckFlows: true,
      ...(context.flowLog ? { flowLog: { group: DEFAULT_FLOW_LOG_GROUP } } : {}),
    });
  } catch (error) {
    runner.close();
    throw error;
  }
  const pods = context.podCidrs?.length ?? 0;
  /** Another writer may have touched the table since the last audit found it right. */
  let foreign = false;
  let monitor: TiedProcess | undefined;
  let flowLog: FlowLogReader | undefined;
  return {
    name: 'nftables',
    renderer,
    prepare() {
      // The reader first: the group is bound before the table's rules log to it.
      if (context.flowLog && !flowLog)
        flowLog = openFlowLog({ ...(context.netns !== undefined ? { netns: context.netns } : {}) });
      return Promise.resolve(prepare());
    },
    ...(context.flowLog
      ? {
          flows: () => flowLog?.read() ?? [],
          flowsLost: () => flowLog?.lost ?? 0,
        }
      : {}),
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
      // A commit or repair that failed left the renderer short of what was realized: the audit
      // compares with what the kernel accepted, so that is said first.
      const pending = renderer.pending();
      if (pending !== 0)
        return Promise.resolve([
          pending === 'replace'
            ? `the ${TABLE} table must be replaced whole (the last commit did not take)`
            : `${pending} operations of the last commit did not take`,
        ]);
      const differences = renderer.audit(!foreign);
      if (differences.length === 0) foreign = false;
      return Promise.resolve(differences);
    },
    repair() {
      renderer.replaceAll();
      foreign = false;
      // Chains learned from the echo are compared; any the echo lacked (its answer lost) are
      // learned from this read.
      const left = renderer.audit(true);
      if (left.length > 0)
        return Promise.reject(
          new DataplaneError(
            `replaced the ${TABLE} table${where}, but read back it still differs from what was committed (${left.join('; ')})`,
          ),
        );
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
      flowLog?.close();
      runner.close();
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
