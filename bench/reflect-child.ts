/**
 * A reflector in its own process for the reflect benchmark: `--once` reconciles and reports its
 * wall time and peak RSS as one JSON line; without it, it follows the cluster until killed.
 */
import { connectEtcd } from '../src/etcd/index.ts';
import { connect } from '../src/kube/index.ts';
import { Reflector } from '../src/reflector/index.ts';
import { KeyLayout } from '../src/reflected/index.ts';

const [kubeconfig, endpoint, mode] = process.argv.slice(2) as [string, string, string];
const started = performance.now();
const store = await connectEtcd({ endpoints: [endpoint] });
const api = await connect({ kubeconfig, env: {} });
const reflector = new Reflector({
  store,
  layout: new KeyLayout('/palisade'),
  source: { type: 'api', api, scope: { all: true } },
  elect: false,
  once: mode === 'once',
  log: (line) => process.stderr.write(`reflector: ${line}\n`),
  onDiagnostics: () => undefined,
  onSynced: (stats) => {
    process.stdout.write(
      JSON.stringify({
        type: 'synced',
        seconds: (performance.now() - started) / 1000,
        maxRssMb: process.resourceUsage().maxRSS / 1024,
        // CPU time says what the wall time cannot on a shared machine: the work itself.
        cpuSeconds: (process.resourceUsage().userCPUTime + process.resourceUsage().systemCPUTime) / 1e6,
        stats,
      }) + '\n',
    );
  },
});
process.on('SIGTERM', () => reflector.stop());
await reflector.run();
store.close();
process.exit(0);
