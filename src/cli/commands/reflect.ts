/**
 * `palisade reflect`: the cluster (or manifests) reflected into etcd under the documented key
 * layout, kept current by informers (or by watching the files), with leader election so two
 * reflectors can run. `--once` reconciles and exits, as `-f` does without `--watch` (files that
 * are not watched cannot change). The Kubernetes and etcd clients are loaded
 * only here.
 */
import { Command } from 'commander';
import type { Diagnostic } from '../../model/diagnostics.ts';
import type { ReflectorSource } from '../../reflector/index.ts';
import { reportDiagnostics } from '../common.ts';
import {
  ClusterAccessError,
  kubeconfigRequest,
  resolveClusterInput,
  withClusterOptions,
} from '../cluster-input.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError, type CliIo } from '../io.ts';
import { etcdConnection, withEtcdOptions } from '../etcd-connection.ts';

export function reflectCommand(io: CliIo, done: (code: number) => void): Command {
  return withEtcdOptions(
    withClusterOptions(new Command('reflect')).description(
      'reflect the cluster (or manifests) into etcd, and keep it current',
    ),
  )
    .option('-f, --file <paths...>', 'reflect these manifests instead of a cluster')
    .option(
      '--watch',
      'with -f: reflect the files again whenever they change (without it: once, then exit)',
      false,
    )
    .option('--once', 'reconcile etcd with the source once, then exit', false)
    .option('--prefix <root>', 'root of the key layout in etcd', '/palisade')
    .option('--id <name>', 'this reflector in the leader key (default: host-pid)')
    .option(
      '--lease-ttl <seconds>',
      'leadership lease: how soon a standby takes over from a dead leader',
      '3',
    )
    .option('--no-elect', 'write without leader election (only one reflector runs)')
    .option('--max-txn-ops <n>', "operations per etcd transaction (etcd's --max-txn-ops)", '128')
    .option('-v, --verbose', 'also print info diagnostics', false)
    .action(async (raw: Record<string, unknown>) => {
      const etcd = etcdConnection(raw, io.env);
      const endpoints = etcd.endpoints;
      const ttl = Number(raw.leaseTtl);
      if (!Number.isInteger(ttl) || ttl < 2)
        throw new UsageError('--lease-ttl must be a whole number of seconds, at least 2');
      const maxOps = Number(raw.maxTxnOps);
      if (!Number.isInteger(maxOps) || maxOps < 2)
        throw new UsageError('--max-txn-ops must be a whole number, at least 2');
      const files = (raw.file as string[] | undefined) ?? [];
      if (raw.watch === true && files.length === 0)
        throw new UsageError('--watch follows files: give -f PATH…');
      const cluster = resolveClusterInput(raw);
      const verbose = raw.verbose === true;
      const log = (line: string): void => void io.stdout.write(`reflect: ${line}\n`);
      let inputErrors = false;
      const onDiagnostics = (diagnostics: readonly Diagnostic[]): void => {
        if (reportDiagnostics(diagnostics, io, verbose)) inputErrors = true;
      };

      const [{ connectEtcd }, reflector, { KeyLayout }] = await Promise.all([
        import('../../etcd/index.ts'),
        import('../../reflector/index.ts'),
        import('../../reflected/index.ts'),
      ]);
      const layout = new KeyLayout(String(raw.prefix));
      const store = await connectEtcd(etcd).catch(async (error: unknown) => {
        const { EtcdAccessError } = await import('../../etcd/index.ts');
        throw error instanceof EtcdAccessError ? new ClusterAccessError(error.message) : error;
      });
      try {
        await reachable(store, layout.leader, endpoints);
        let source: ReflectorSource;
        if (cluster) {
          const kube = await import('../../kube/index.ts');
          try {
            const api = await kube.connect(kubeconfigRequest(cluster, io));
            source = { type: 'api', api, scope: cluster.scope };
            log(
              `reflecting ${api.target.server} (context ${api.target.context}) into ${endpoints.join(',')} under ${layout.base}`,
            );
          } catch (error) {
            if (error instanceof kube.KubeApiError) throw new ClusterAccessError(error.message);
            throw error;
          }
        } else {
          source = { type: 'files', paths: files, watch: raw.watch === true };
          log(`reflecting ${files.join(' ')} into ${endpoints.join(',')} under ${layout.base}`);
        }
        const running = new reflector.Reflector({
          store,
          layout,
          source,
          elect: raw.elect !== false,
          ...(typeof raw.id === 'string' ? { id: raw.id } : {}),
          leaseTtlSeconds: ttl,
          once: raw.once === true,
          maxOps,
          log,
          onDiagnostics,
        });
        const stop = (): void => running.stop();
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
        try {
          await running.run();
        } catch (error) {
          const [kube, etcdLayer] = await Promise.all([
            import('../../kube/index.ts'),
            import('../../etcd/index.ts'),
          ]);
          if (error instanceof kube.KubeApiError || error instanceof etcdLayer.EtcdAccessError)
            throw new ClusterAccessError(error.message);
          throw error;
        } finally {
          process.off('SIGTERM', stop);
          process.off('SIGINT', stop);
        }
      } finally {
        store.close();
      }
      done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
    });
}

/** Fails with one line when etcd does not answer within a few seconds. */
async function reachable(
  store: { get(key: string): Promise<unknown> },
  key: string,
  endpoints: readonly string[],
): Promise<void> {
  const { ensureReachable, EtcdAccessError } = await import('../../etcd/index.ts');
  try {
    await ensureReachable(store as never, endpoints, key);
  } catch (error) {
    if (error instanceof EtcdAccessError) throw new ClusterAccessError(error.message);
    throw error;
  }
}
