/**
 * A real etcd for a test suite: started before, stopped by pid and its data dir removed after,
 * even when tests fail; suites skip with one line when the binary is missing.
 */
import { existsSync } from 'node:fs';
import { after, before } from 'node:test';
import { connectEtcd, etcdBinary, startEtcd, type EtcdServer, type EtcdStore } from '../../src/etcd/index.ts';

/** The skip reason when etcd is not installed, or false. */
export const needsEtcd: string | false = etcdBinary()
  ? false
  : 'skipped: needs etcd (apt-get install etcd-server; .ci/run installs it)';

/** The skip reason when openssl (which makes a TLS etcd's certificates) is missing, or false. */
export const needsOpenssl: string | false = ['/usr/bin/openssl', '/usr/local/bin/openssl'].some((p) =>
  existsSync(p),
)
  ? false
  : 'skipped: needs openssl (apt-get install openssl) to make the TLS etcd certificates';

/** An etcd that lives for the enclosing suite; `ctx.server` and `ctx.store` are set in before(). */
export function suiteEtcd(options: { maxTxnOps?: number } = {}): { server: EtcdServer; store: EtcdStore } {
  const ctx = {} as { server: EtcdServer; store: EtcdStore };
  before(async () => {
    if (needsEtcd) return;
    ctx.server = await startEtcd(options);
    ctx.store = await connectEtcd({ endpoints: [ctx.server.endpoint] });
  });
  after(async () => {
    ctx.store?.close();
    await ctx.server?.stop();
  });
  return ctx;
}
