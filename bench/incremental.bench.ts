/**
 * `npm run bench -- incremental [--scale F] [--events N]`: latency from one event to committed
 * renderer changes at shape (a) scale, for an agent-like pipeline (the whole cluster in the
 * store, one node's 100 pods compiled and rendered through the renderer cache): pod add, pod
 * label change, pod delete, policy add, namespace label change; and a sustained stream of pod
 * events.
 */
import { stateGroupLookup } from '../src/configurator/index.ts';
import { generateShape, podIp } from '../src/generate/shapes.ts';
import { loadFromObjects } from '../src/ingest/index.ts';
import type { Endpoint, Namespace, NetworkPolicy } from '../src/model/types.ts';
import { PolicyPipeline, type PipelineChange } from '../src/pipeline/index.ts';
import { RendererCache } from '../src/datapaths/cache/index.ts';
import { ClusterState } from '../src/state/index.ts';
import { median, ms } from './stats.ts';
import { reportFigure } from './report.ts';

function option(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};

export function incrementalBenchmark(args: string[]): void {
  const scale = option(args, 'scale', 1);
  const events = option(args, 'events', 2000);
  const generated = generateShape('a', { scale, seed: 1 });
  const { cluster } = loadFromObjects([...generated.namespaces, ...generated.pods, ...generated.policies]);
  const state = new ClusterState();
  const cache = new RendererCache({ side: 'ingress', groups: stateGroupLookup(state) });
  const pipeline = new PolicyPipeline({ state, node: 'node-0', renderers: [cache] });
  const started = performance.now();
  pipeline.apply({ type: 'resync', cluster });
  process.stdout.write(
    `shape a ×${scale}: ${cluster.endpoints.length} pods, ${cluster.policies.length} policies; node-0 has ` +
      `${[...pipeline.compiledPods()].length} pods; initial resync ${ms(performance.now() - started)}\n`,
  );
  const pods = cluster.endpoints;
  const namespaces = [...cluster.namespaces.values()];
  let seed = 12345;
  const random = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const measure = (label: string, make: (i: number) => PipelineChange): void => {
    const times: number[] = [];
    let affected = 0;
    for (let i = 0; i < events; i++) {
      const change = make(i);
      const t = performance.now();
      const result = pipeline.apply(change);
      times.push(performance.now() - t);
      affected += result.affected;
    }
    const id = `incremental.x${scale}.${label.replace(/ /g, '-')}`;
    reportFigure({
      id,
      name: `incremental ×${scale}: ${label}, median (p99 ${percentile(times, 99).toFixed(2)} ms)`,
      value: median(times),
      unit: 'ms',
      ...(label.startsWith('pod') ? { target: 'median ≤ 1 ms, p99 ≤ 20 ms' } : {}),
    });
    reportFigure({
      id: `${id}.p99`,
      name: `incremental ×${scale}: ${label}, p99`,
      value: percentile(times, 99),
      unit: 'ms',
      ...(label.startsWith('pod') ? { target: '≤ 20 ms' } : {}),
    });
    process.stdout.write(
      `${label.padEnd(24)} median ${median(times).toFixed(3)} ms, p99 ${percentile(times, 99).toFixed(3)} ms, ` +
        `max ${times.reduce((a, b) => Math.max(a, b), 0).toFixed(1)} ms (${events} events, ${(affected / events).toFixed(2)} pods recompiled per event)\n`,
    );
  };
  const added: Endpoint[] = [];
  measure('pod add', (i) => {
    const template = pods[random(pods.length)] as Endpoint;
    const ip = podIp(pods.length + i);
    const pod: Endpoint = {
      ...template,
      id: `${template.namespace}/extra-${i}`,
      name: `extra-${i}`,
      node: `node-${random(1000)}`,
      ips:
        loadFromObjects([{ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' }, status: { podIP: ip } }])
          .cluster.endpoints[0]?.ips ?? [],
    };
    added.push(pod);
    return { type: 'upsert-pod', pod };
  });
  measure('pod label change', (i) => {
    const pod = pods[random(pods.length)] as Endpoint;
    return { type: 'upsert-pod', pod: { ...pod, labels: { ...pod.labels, app: i % 2 ? 'app-0' : 'app-1' } } };
  });
  measure('pod delete', (i) => ({ type: 'delete-pod', id: (added[i] as Endpoint).id }));
  measure('policy add', (i) => {
    const ns = namespaces[random(namespaces.length)] as Namespace;
    const template = cluster.policies[random(cluster.policies.length)] as NetworkPolicy;
    return { type: 'upsert-policy', policy: { ...template, namespace: ns.name, name: `extra-${i}` } };
  });
  measure('namespace label change', (i) => {
    const ns = namespaces[random(namespaces.length)] as Namespace;
    return {
      type: 'upsert-namespace',
      namespace: { ...ns, labels: { ...ns.labels, team: `team-${i % 100}` } },
    };
  });
  // Sustained stream: pod label changes back to back.
  const stream = Math.max(events * 5, 10000);
  const t = performance.now();
  for (let i = 0; i < stream; i++) {
    const pod = pods[random(pods.length)] as Endpoint;
    pipeline.apply({
      type: 'upsert-pod',
      pod: { ...pod, labels: { ...pod.labels, tier: i % 2 ? 'web' : 'db' } },
    });
  }
  const seconds = (performance.now() - t) / 1000;
  reportFigure({
    id: `incremental.x${scale}.sustained`,
    name: `incremental ×${scale}: sustained pod label changes`,
    value: stream / seconds,
    unit: 'events/s',
    target: '≥ 5,000/s',
  });
  process.stdout.write(
    `sustained pod label changes: ${(stream / seconds).toFixed(0)} events/s (${stream} events in ${seconds.toFixed(2)} s)\n`,
  );
}
