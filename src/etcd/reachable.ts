/**
 * A first read with a deadline: a client for an etcd that is not there retries quietly forever,
 * so commands check once, at start, and say so in one line.
 */
import type { EtcdStore } from './types.ts';

/** etcd did not answer the first read in time (the message is one line, for the user). */
export class EtcdUnreachableError extends Error {}

/** Reads `key` once; throws EtcdUnreachableError when etcd does not answer within `timeoutMs`. */
export async function ensureReachable(
  store: Pick<EtcdStore, 'get'>,
  endpoints: readonly string[],
  key: string,
  timeoutMs = 5000,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
  });
  try {
    await Promise.race([store.get(key), timeout]);
  } catch (error) {
    const reason = (error instanceof Error ? error.message : String(error)).split('\n')[0];
    throw new EtcdUnreachableError(`cannot reach etcd at ${endpoints.join(',')}: ${reason}`);
  } finally {
    clearTimeout(timer);
  }
}
