/**
 * Leader election on a lease: a candidate holds leadership while its key, bound to its lease,
 * exists — created only if absent (`createRevision == 0`), so one candidate wins. Others watch
 * the key and try again when it is deleted: when the leader resigns (its lease is revoked), at
 * once; when it dies, as soon as its lease expires (the TTL, a few seconds). The leader's writes
 * carry `fence` (its key's create revision), so a leader that lost its lease without noticing
 * (paused, partitioned) cannot write over its successor.
 */
import { isLeaseNotFound } from './errors.ts';
import type { EtcdStore, Leadership, Lease, TxnCompare } from './types.ts';

interface CampaignOptions {
  /** Lease TTL: how long a dead leader keeps leadership. Default 3 s. */
  readonly ttlSeconds?: number;
  /** Stops waiting (resolves campaign() with undefined). */
  readonly signal?: AbortSignal;
  /** Told who leads while this candidate waits. */
  readonly onFollowing?: (leader: string) => void;
}

/** Waits until `id` leads under `key`; resolves undefined if aborted first. */
export async function campaign(
  store: EtcdStore,
  key: string,
  id: string,
  options: CampaignOptions = {},
): Promise<Leadership | undefined> {
  const ttl = options.ttlSeconds ?? 3;
  while (!options.signal?.aborted) {
    const lease = await store.grantLease(ttl);
    let result;
    try {
      result = await store.txn(
        [{ key, target: 'createRevision', equals: 0 }],
        [{ type: 'put', key, value: id, lease: lease.id }],
      );
    } catch (error) {
      // A candidate stalled past its TTL (a loaded machine, a paused process) between granting
      // the lease and using it: etcd has already expired it. Nothing was written; try again.
      if (isLeaseNotFound(error)) continue;
      throw error;
    }
    if (result.succeeded) return lead(store, key, id, lease, result.revision);
    await lease.revoke().catch((error: unknown) => {
      if (!isLeaseNotFound(error)) throw error;
    });
    const holder = await store.get(key);
    if (holder) options.onFollowing?.(holder.value);
    await untilDeleted(
      store,
      key,
      holder ? holder.modRevision + 1 : result.revision + 1,
      ttl,
      options.signal,
    );
  }
  return undefined;
}

/** Resolves when `key` is deleted (or after a TTL's worth of waiting, to look again), or on abort. */
async function untilDeleted(
  store: EtcdStore,
  key: string,
  fromRevision: number,
  ttl: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  let release!: () => void;
  const done = new Promise<void>((resolve) => (release = resolve));
  const watch = await store.watch(key, fromRevision, {
    onEvents: (events) => {
      if (events.some((e) => e.type === 'delete' && e.key === key)) release();
    },
    onCompacted: () => release(),
  });
  const timer = setTimeout(release, ttl * 1000);
  const onAbort = (): void => release();
  signal?.addEventListener('abort', onAbort);
  await done;
  clearTimeout(timer);
  signal?.removeEventListener('abort', onAbort);
  await watch.cancel();
}

async function lead(
  store: EtcdStore,
  key: string,
  id: string,
  lease: Lease,
  createRevision: number,
): Promise<Leadership> {
  const fence: TxnCompare = { key, target: 'createRevision', equals: createRevision };
  let lostListener: ((reason: string) => void) | undefined;
  let over = false;
  const lose = (reason: string): void => {
    if (over) return;
    over = true;
    void watch.cancel();
    lostListener?.(reason);
  };
  lease.onLost((error) => lose(`lease lost: ${error.message}`));
  // Someone deleting or replacing the key also ends leadership.
  const watch = await store.watch(key, createRevision + 1, {
    onEvents: (events) => {
      for (const e of events)
        if (e.key === key) lose(e.type === 'delete' ? 'leader key deleted' : 'leader key replaced');
    },
    onCompacted: () => undefined,
  });
  return {
    id,
    lease,
    fence,
    onLost: (listener) => {
      lostListener = listener;
    },
    resign: async () => {
      over = true;
      await watch.cancel();
      await lease.revoke();
    },
  };
}
