/**
 * Small fixture builders for tests: raw Kubernetes objects (so every test goes through the real
 * ingest path) and a cluster made from them.
 */
import { loadFromTexts } from '../../src/ingest/load.ts';
import type { LoadResult } from '../../src/ingest/types.ts';
import type { Cluster, Endpoint, Semantics } from '../../src/model/types.ts';
import { evaluate } from '../../src/semantics/evaluate.ts';
import { indexCluster } from '../../src/semantics/match.ts';
import type { Address, Connection, EvaluateOptions, Verdict } from '../../src/semantics/types.ts';
import { parseIp, type IpAddress } from '../../src/net/ip.ts';
import type { Protocol } from '../../src/model/types.ts';

export type Raw = Record<string, unknown>;

export function namespace(
  name: string,
  labels: Record<string, string> = {},
  annotations?: Record<string, string>,
): Raw {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels, ...(annotations ? { annotations } : {}) },
  };
}

export interface PodOptions {
  ips?: string[];
  ports?: { name?: string; containerPort: number; protocol?: string }[];
  hostNetwork?: boolean;
  node?: string;
  hostIp?: string;
  phase?: string;
}

export function pod(
  ns: string,
  name: string,
  labels: Record<string, string> = {},
  options: PodOptions = {},
): Raw {
  const ips = options.ips ?? [];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, labels },
    spec: {
      containers: [{ name: 'c', ...(options.ports ? { ports: options.ports } : {}) }],
      ...(options.hostNetwork ? { hostNetwork: true } : {}),
      ...(options.node ? { nodeName: options.node } : {}),
    },
    status: {
      phase: options.phase ?? 'Running',
      ...(ips.length ? { podIP: ips[0], podIPs: ips.map((ip) => ({ ip })) } : {}),
      ...(options.hostIp ? { hostIP: options.hostIp } : {}),
    },
  };
}

export function policy(ns: string, name: string, spec: Raw, apiVersion = 'networking.k8s.io/v1'): Raw {
  return { apiVersion, kind: 'NetworkPolicy', metadata: { name, namespace: ns }, spec };
}

export function load(objects: readonly Raw[], semantics: Semantics = 'v1'): LoadResult {
  const text = objects.map((o) => JSON.stringify(o)).join('\n---\n');
  return loadFromTexts([{ name: 'test.yaml', text }], semantics);
}

export function clusterOf(objects: readonly Raw[], semantics: Semantics = 'v1'): Cluster {
  const result = load(objects, semantics);
  const errors = result.diagnostics.filter((d) => d.severity === 'error');
  if (errors.length)
    throw new Error(`fixture has errors: ${errors.map((e) => `${e.code} ${e.message}`).join('; ')}`);
  return result.cluster;
}

export function endpoint(cluster: Cluster, id: string): Endpoint {
  const found = cluster.endpoints.find((e) => e.id === id);
  if (!found) throw new Error(`no endpoint ${id}`);
  return found;
}

/** An IP address from its text (a test's own constant: a bad one is a bug in the test). */
export function ipOf(text: string): IpAddress {
  const ip = parseIp(text);
  if (!ip.ok) throw new Error(`not an IP address: ${text}`);
  return ip.value;
}

/** `ns/name` → the endpoint; anything else is read as an IP address. */
export function addr(cluster: Cluster, text: string): Address {
  const found = cluster.endpoints.find((e) => e.id === text);
  if (found) return { kind: 'endpoint', endpoint: found };
  return { kind: 'ip', ip: ipOf(text) };
}

export function verdict(
  cluster: Cluster,
  from: string,
  to: string,
  port: number,
  protocol: Protocol = 'TCP',
  options: EvaluateOptions = {},
): Verdict {
  const connection: Connection = { src: addr(cluster, from), dst: addr(cluster, to), protocol, port };
  return evaluate(indexCluster(cluster), connection, options);
}

export function allowed(
  cluster: Cluster,
  from: string,
  to: string,
  port: number,
  protocol: Protocol = 'TCP',
  options: EvaluateOptions = {},
): boolean {
  return verdict(cluster, from, to, port, protocol, options).allowed;
}
