/**
 * The lab both datapath benchmarks measure traffic in (`datapath`, `ebpf`): a client and a
 * server pod on one node and the policy between them, and the two measurements — new TCP
 * connections per second and iperf3 throughput.
 */
import { run } from '../src/dataplane/index.ts';
import type { Lab } from '../src/lab/index.ts';

export const labObjects = [
  { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench', labels: { team: 'bench' } } },
  ...['client', 'server'].map((name) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'bench', labels: { app: name } },
    spec: { nodeName: 'node-0', containers: [{ name: 'c', ports: [{ containerPort: 80 }] }] },
    status: { phase: 'Running' },
  })),
  {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'server-from-client', namespace: 'bench' },
    spec: {
      podSelector: { matchLabels: { app: 'server' } },
      ingress: [
        {
          from: [{ podSelector: { matchLabels: { app: 'client' } } }],
          // 80: the pod agents; 5201: iperf3; 5202: the eBPF benchmark's connection-rate server.
          ports: [{ port: 80 }, { port: 5201 }, { port: 5202 }],
        },
      ],
    },
  },
];

/** The lab's own objects (its two pods with their addresses, and the policy between them). */
export function podAndPolicyObjects(lab: Lab): object[] {
  return [
    labObjects[0] as object,
    ...lab.plan.pods.map((p) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: p.name, namespace: p.namespace, labels: p.labels },
      spec: { nodeName: p.node, containers: [{ name: 'c', ports: [{ containerPort: 80 }] }] },
      status: { phase: 'Running', podIP: p.ips[0], hostIP: lab.plan.nodes[0]?.addresses[0] },
    })),
    labObjects[3] as object,
  ];
}

/**
 * New TCP connections per second (connect, echo, close), 100 at a time, `total` in all (2,000
 * unless told: about 0.2 s here, short enough that the machine's swings show in a round).
 */
export async function connectionRate(
  lab: Lab,
  client: string,
  serverIp: string,
  total = 2000,
): Promise<number> {
  const agent = lab.agent(client);
  const started = performance.now();
  let connected = 0;
  for (let batch = 0; batch < Math.ceil(total / 100); batch++) {
    const outcomes = await agent.probe(
      Array.from({ length: 100 }, () => ({ ip: serverIp, port: 80, protocol: 'TCP' as const })),
      2000,
    );
    connected += outcomes.filter((o) => o.connected).length;
  }
  const expected = Math.ceil(total / 100) * 100;
  if (connected < expected) throw new Error(`only ${connected} of ${expected} connections succeeded`);
  return connected / ((performance.now() - started) / 1000);
}

/** iperf3 TCP throughput from client to server for `seconds` (2 unless told), in bits per second. */
export async function throughput(
  serverNetns: string,
  clientNetns: string,
  serverIp: string,
  seconds = 2,
): Promise<number> {
  await run('iperf3', ['-s', '-1', '-D', '-p', '5201'], { netns: serverNetns });
  await new Promise((r) => setTimeout(r, 300));
  const result = await run('iperf3', ['-c', serverIp, '-p', '5201', '-t', String(seconds), '-J'], {
    netns: clientNetns,
  });
  const report = JSON.parse(result.stdout) as { end?: { sum_received?: { bits_per_second?: number } } };
  return report.end?.sum_received?.bits_per_second ?? 0;
}
