/**
 * `--etcd URL[,URL…]`, shared by the commands that talk to etcd (reflect, agent, status).
 */
import { UsageError } from './io.ts';

/** The URLs of an `--etcd` value; a usage error when there is none. */
export function etcdEndpoints(value: unknown): string[] {
  const endpoints = String(value)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (endpoints.length === 0) throw new UsageError('--etcd needs at least one URL');
  return endpoints;
}
