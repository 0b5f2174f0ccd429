/**
 * Probing the lab: a real connection attempt (TCP: connect and echo; UDP: datagram and echo)
 * from every pod to every other pod, per port and protocol and per address family they share,
 * next to what the reference evaluator says about the same connection.
 */
import type { Cluster, Endpoint } from '../model/types.ts';
import { evaluate, indexCluster } from '../semantics/index.ts';
import type { Transport } from './agent-protocol.ts';
import type { AgentClient } from './agent-client.ts';
import { familyOf, type LabPlan, type LabPod } from './topology.ts';

/** What probing needs of a lab (the plain lab, or the lab with a control plane). */
interface ProbedLab {
  readonly plan: LabPlan;
  /** The cluster the reference evaluator judges. */
  readonly current: Cluster;
  agent(pod: string): AgentClient;
}

export interface ProbePort {
  readonly port: number;
  readonly protocol: Transport;
}

export interface ProbeResult {
  readonly from: string;
  readonly to: string;
  readonly ip: string;
  readonly port: number;
  readonly protocol: Transport;
  readonly observed: boolean;
  readonly expected: boolean;
  readonly detail: string;
}

export interface ProbeReport {
  readonly pods: readonly string[];
  readonly ports: readonly ProbePort[];
  readonly results: readonly ProbeResult[];
  readonly disagreements: readonly ProbeResult[];
  /** Ports that cannot be probed here (SCTP: no kernel module, and Node has no SCTP sockets). */
  readonly notProbed: readonly string[];
  readonly millis: number;
}

/** The ports to probe by default: every TCP and UDP container port of the lab's pods. */
export function defaultPorts(pods: readonly LabPod[]): { ports: ProbePort[]; notProbed: string[] } {
  const ports = new Map<string, ProbePort>();
  const notProbed = new Set<string>();
  for (const pod of pods)
    for (const p of pod.ports) {
      if (p.protocol === 'SCTP') notProbed.add(`SCTP/${p.port}`);
      else ports.set(`${p.protocol}/${p.port}`, { port: p.port, protocol: p.protocol });
    }
  return {
    ports: [...ports.values()].sort((a, b) => a.port - b.port || (a.protocol < b.protocol ? -1 : 1)),
    notProbed: [...notProbed].sort(),
  };
}

/** Whether the reference evaluator allows a connection between two lab pods. */
export function referenceVerdict(
  index: ReturnType<typeof indexCluster>,
  from: Endpoint,
  to: Endpoint,
  family: 4 | 6,
  port: ProbePort,
): boolean {
  return evaluate(index, {
    src: { kind: 'endpoint', endpoint: from },
    dst: { kind: 'endpoint', endpoint: to },
    protocol: port.protocol,
    port: port.port,
    family,
  }).allowed;
}

export async function probeLab(
  lab: ProbedLab,
  ports: readonly ProbePort[],
  options: { readonly timeoutMs?: number; readonly notProbed?: readonly string[] } = {},
): Promise<ProbeReport> {
  const started = performance.now();
  const timeoutMs = options.timeoutMs ?? 1000;
  const cluster = lab.current;
  const index = indexCluster(cluster);
  const endpoints = new Map(cluster.endpoints.map((e) => [e.id, e]));
  const pods = lab.plan.pods;
  // Every pod listens on every probed port, so a connection that passes always gets its echo.
  await Promise.all(pods.map((pod) => lab.agent(pod.id).listen(ports)));
  const perSource = await Promise.all(
    pods.map(async (from) => {
      const planned: Omit<ProbeResult, 'observed' | 'detail'>[] = [];
      for (const to of pods) {
        if (to.id === from.id) continue;
        const fromEndpoint = endpoints.get(from.id);
        const toEndpoint = endpoints.get(to.id);
        if (!fromEndpoint || !toEndpoint) continue;
        for (const family of [4, 6] as const) {
          const ip = to.ips.find((a) => familyOf(a) === family);
          if (!ip || !from.ips.some((a) => familyOf(a) === family)) continue;
          for (const port of ports) {
            const expected = referenceVerdict(index, fromEndpoint, toEndpoint, family, port);
            planned.push({ from: from.id, to: to.id, ip, ...port, expected });
          }
        }
      }
      const outcomes = await lab.agent(from.id).probe(
        planned.map((p) => ({ ip: p.ip, port: p.port, protocol: p.protocol })),
        timeoutMs,
      );
      return planned.map((p, i) => ({
        ...p,
        observed: outcomes[i]?.connected ?? false,
        detail: outcomes[i]?.detail ?? 'no answer',
      }));
    }),
  );
  const results = perSource.flat();
  return {
    pods: pods.map((p) => p.id),
    ports,
    results,
    disagreements: results.filter((r) => r.observed !== r.expected),
    notProbed: options.notProbed ?? [],
    millis: performance.now() - started,
  };
}
