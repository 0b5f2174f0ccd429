/**
 * The worker thread a `palisade agent` runs its realizer in (worker-realizer.ts is the other
 * side): the mirror, the pipeline and the datapath live here, so decoding, compiling, rendering
 * and a long nft transaction never hold the agent's event loop — its etcd watch, status lease and
 * /healthz answer meanwhile.
 *
 * Requests are handled one at a time, in order. Key changes arrive in chunks (`stage`) before
 * the `realize` that takes them, so no single message is large enough to hold the sender.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { connectEtcd } from '../etcd/index.ts';
import type { EtcdStore } from '../etcd/types.ts';
import { DataplaneError } from '../dataplane/index.ts';
import { KeyLayout } from '../reflected/index.ts';
import { ClusterState } from '../state/index.ts';
import { parsePodCidrs } from './datapaths.ts';
import { openNodeDatapath } from '../datapaths/index.ts';
import type { KeyChange } from './mirror.ts';
import { NodeRealizer } from './realizer.ts';
import type { RealizerRequest, RealizerWorkerData, WorkerReply } from './worker-protocol.ts';

const data = workerData as RealizerWorkerData;
const port = parentPort!;
let realizer: NodeRealizer | undefined;
let store: EtcdStore | undefined;
let staged: KeyChange[] = [];
let queue = Promise.resolve();

const reply = (message: WorkerReply): void => port.postMessage(message);

port.on('message', (request: RealizerRequest) => {
  if (request.op === 'stage') {
    for (const change of request.changes) staged.push(change);
    return;
  }
  queue = queue.then(() => handle(request));
});

async function handle(request: Exclude<RealizerRequest, { op: 'stage' }>): Promise<void> {
  try {
    switch (request.op) {
      case 'open':
        reply({ id: request.id, result: await open() });
        return;
      case 'realize': {
        const changes = staged;
        staged = [];
        reply({ id: request.id, result: await ready().realize(changes, request.relist) });
        return;
      }
      case 'reconcile':
        reply({ id: request.id, result: await ready().reconcile() });
        return;
      case 'flows':
        reply({ id: request.id, result: await ready().flows() });
        return;
      case 'close':
        await realizer?.close();
        store?.close();
        reply({ id: request.id, result: undefined });
        return;
    }
  } catch (error) {
    reply({
      id: request.id,
      error: {
        message: error instanceof Error ? error.message : String(error),
        relist: (error as { relist?: unknown }).relist === true,
        tool: error instanceof DataplaneError,
      },
    });
  }
}

/** Builds the datapath and the realizer, and prepares the node (what it enforces meanwhile). */
async function open(): Promise<string> {
  const { context } = data;
  // Only the documents datapaths write to etcd; the others never connect.
  if (data.datapath === 'vpp-acl' || data.datapath === 'vpptcp') store = await connectEtcd(data.etcd);
  const state = new ClusterState();
  const datapath = await openNodeDatapath(data.datapath, {
    ...context,
    podCidrs: parsePodCidrs(context.podCidrs),
    state,
    ...(store ? { store } : {}),
    lockHeld: true,
  });
  realizer = new NodeRealizer({
    node: context.node,
    layout: new KeyLayout(data.prefix),
    datapath,
    state,
    allowNodeLocal: context.allowNodeLocal,
  });
  realizer.onSuspect((why) => reply({ suspect: why }));
  return realizer.prepare();
}

function ready(): NodeRealizer {
  if (!realizer) throw new Error('the realizer worker was not opened');
  return realizer;
}
