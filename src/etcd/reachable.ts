/**
 * A first read with a deadline: a client for an etcd that is not there retries quietly forever,
 * so commands check once, at start, and say so in one line — etcd away, a TLS handshake refused,
 * credentials refused, or a read this identity may not make.
 */
import { describeEtcdError, EtcdAccessError, EtcdUnreachableError } from './errors.ts';
import type { EtcdStore } from './types.ts';

export { EtcdAccessError, EtcdUnreachableError };

/** Reads `key` once; throws an EtcdAccessError (EtcdUnreachableError when etcd does not answer within `timeoutMs`). */
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
    throw etcdAccessError(error, endpoints, `reading ${key}`);
  } finally {
    clearTimeout(timer);
  }
}

/** An error of the etcd client as the one line a user reads; `doing` says what was asked ("reading /k"). */
export function etcdAccessError(
  error: unknown,
  endpoints: readonly string[],
  doing: string,
): EtcdAccessError {
  if (error instanceof EtcdAccessError) return error;
  const where = endpoints.join(',');
  const { kind, detail } = describeEtcdError(error);
  switch (kind) {
    case 'permission':
      return new EtcdAccessError(`etcd at ${where} denied ${doing} to this identity (${detail})`);
    case 'auth':
      return new EtcdAccessError(`etcd at ${where} refused the user name or password (${detail})`);
    case 'tls':
      return new EtcdAccessError(`cannot talk to etcd at ${where}: ${detail}`);
    case 'unreachable':
    case 'other':
      return new EtcdUnreachableError(`cannot reach etcd at ${where}: ${detail}`);
  }
}
