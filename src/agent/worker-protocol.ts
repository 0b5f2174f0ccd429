/**
 * The messages between the agent and its realizer's worker thread (worker-realizer.ts on the
 * agent's side, realizer-worker.ts in the worker): structured-cloneable data only.
 */
import type { EtcdConnection } from '../etcd/types.ts';
import type { NeutronConnection } from '../datapaths/types.ts';
import type { DatapathName } from './datapaths.ts';
import type { KeyChange } from './mirror.ts';
import type { FlowBatch, RealizeResult } from './types.ts';

/** What the worker is started with. */
export interface RealizerWorkerData {
  readonly datapath: DatapathName;
  /** The key layout's root (`/palisade`). */
  readonly prefix: string;
  /** How to reach etcd (URLs, TLS files, user), for the datapaths that write documents there. */
  readonly etcd: EtcdConnection;
  /** The datapath's context, as text (pod CIDRs as `--pod-cidr` gives them). */
  readonly context: {
    readonly node: string;
    readonly netns?: string;
    readonly podCidrs: readonly string[];
    readonly allowNodeLocal: boolean;
    readonly directDelivery?: boolean;
    readonly runDir?: string;
    readonly vppAgentLabel?: string;
    readonly vppAgentPrefix?: string;
    readonly maxTxnOps?: number;
    readonly neutron?: NeutronConnection;
    readonly flowLog?: boolean;
  };
}

/** From the agent to the worker. `stage` carries key changes ahead of the `realize` that takes them. */
export type RealizerRequest =
  | { readonly op: 'stage'; readonly changes: readonly KeyChange[] }
  | { readonly op: 'open'; readonly id: number }
  | { readonly op: 'realize'; readonly id: number; readonly relist: boolean }
  | { readonly op: 'reconcile'; readonly id: number }
  | { readonly op: 'flows'; readonly id: number }
  | { readonly op: 'close'; readonly id: number };

/** A failure as it crosses: the message, whether a listing is needed, whether a tool refused. */
export interface WorkerFailure {
  readonly message: string;
  readonly relist: boolean;
  readonly tool: boolean;
}

/** From the worker: a request's answer, or the datapath's suspicion of another writer. */
export type WorkerReply =
  | {
      readonly id: number;
      readonly result: string | RealizeResult | FlowBatch | readonly string[] | undefined;
    }
  | { readonly id: number; readonly error: WorkerFailure }
  | { readonly suspect: string };
