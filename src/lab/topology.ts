/**
 * The lab's plan: which nodes and pods to build, their network namespaces, interfaces and
 * addresses — decided from the manifests before anything touches the kernel. Pods keep the
 * addresses and nodes their manifests give; the rest are allocated (a /24 per node from
 * 10.244.0.0/16, nodes round-robin). A workload without pods becomes one pod (`<name>-0`) with
 * its template's labels and ports. Host-network pods are left out: they would share their
 * node's namespace, which the lab keeps for enforcement.
 *
 * The plan also writes the lab's cluster as plain Kubernetes objects (the namespaces and
 * policies as given, one Pod per lab pod with its node and addresses), so every later command
 * re-reads exactly what the lab runs.
 */
import { formatIp, parseIp } from '../net/ip.ts';
import type { Cluster, ContainerPort, Endpoint } from '../model/types.ts';

interface LabNode {
  readonly name: string;
  readonly index: number;
  readonly netns: string;
  readonly addresses: readonly string[];
}

export interface LabPod {
  readonly id: string;
  readonly namespace: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly ports: readonly ContainerPort[];
  readonly node: string;
  readonly ips: readonly string[];
  readonly netns: string;
  /** The pod's veth end in its node's namespace. */
  readonly hostInterface: string;
}

export interface LabPlan {
  readonly name: string;
  readonly fabricNetns: string;
  readonly nodes: readonly LabNode[];
  readonly pods: readonly LabPod[];
  /** Endpoints not built, and why. */
  readonly skipped: readonly { readonly id: string; readonly reason: string }[];
}

interface PlanOptions {
  /** Nodes to spread pods without a node over, when the manifests name none. Default 2. */
  readonly nodes?: number;
}

export const LAB_NAME = /^[a-z0-9]([a-z0-9-]{0,14}[a-z0-9])?$/;
const MAX_PODS_PER_NODE = 240;

export function planLab(name: string, cluster: Cluster, options: PlanOptions = {}): LabPlan {
  const skipped: { id: string; reason: string }[] = [];
  const candidates: Endpoint[] = [];
  const podNames = new Set(
    cluster.endpoints.filter((e) => e.kind === 'Pod').map((e) => `${e.namespace}/${e.name}`),
  );
  for (const endpoint of cluster.endpoints) {
    if (endpoint.hostNetwork) skipped.push({ id: endpoint.id, reason: 'host network: shares its node' });
    else if (endpoint.kind !== 'Pod' && podNames.has(`${endpoint.namespace}/${endpoint.name}-0`))
      skipped.push({ id: endpoint.id, reason: `a pod named ${endpoint.name}-0 exists` });
    else candidates.push(endpoint);
  }
  const nodeNames = [
    ...new Set(candidates.map((e) => e.node).filter((n): n is string => n !== undefined)),
  ].sort();
  const wanted = Math.max(options.nodes ?? 2, 1);
  for (let i = 1; nodeNames.length < wanted || nodeNames.length === 0; i++)
    if (!nodeNames.includes(`node-${i}`)) nodeNames.push(`node-${i}`);
  const prefix = `pl-${name}`;
  const used = new Set<string>();
  for (const e of candidates) for (const ip of e.ips) used.add(formatIp(ip));
  for (const n of cluster.nodes.values()) for (const ip of n.addresses) used.add(formatIp(ip));
  const hasIpv6 = candidates.some((e) => e.ips.some((ip) => ip.family === 6));

  const nodes: LabNode[] = nodeNames.map((nodeName, index) => {
    const known = cluster.nodes.get(nodeName)?.addresses ?? [];
    const addresses = known.map(formatIp);
    if (!known.some((a) => a.family === 4))
      addresses.push(freeAddress(used, (k) => `192.168.250.${k}`, index + 1));
    if (hasIpv6 && !known.some((a) => a.family === 6))
      addresses.push(freeAddress(used, (k) => `fd00:250::${k.toString(16)}`, index + 1));
    return { name: nodeName, index, netns: `${prefix}-node${index}`, addresses };
  });

  const perNode = new Map<string, number>();
  let roundRobin = 0;
  const pods: LabPod[] = candidates.map((endpoint, index) => {
    const node = endpoint.node ?? nodeNames[roundRobin++ % nodeNames.length] ?? 'node-1';
    const nodeIndex = nodeNames.indexOf(node);
    const count = (perNode.get(node) ?? 0) + 1;
    perNode.set(node, count);
    if (count > MAX_PODS_PER_NODE)
      throw new LabError(`node ${node}: more than ${MAX_PODS_PER_NODE} lab pods`);
    const ips =
      endpoint.ips.length > 0
        ? endpoint.ips.map(formatIp)
        : [freeAddress(used, (k) => `10.244.${nodeIndex + 1}.${k}`, count + 9)];
    return {
      id: endpoint.kind === 'Pod' ? endpoint.id : `${endpoint.namespace}/${endpoint.name}-0`,
      namespace: endpoint.namespace,
      name: endpoint.kind === 'Pod' ? endpoint.name : `${endpoint.name}-0`,
      labels: endpoint.labels,
      ports: endpoint.ports,
      node,
      ips,
      netns: `${prefix}-pod${index}`,
      hostInterface: `pod${index}`,
    };
  });
  return { name, fabricNetns: `${prefix}-fabric`, nodes, pods, skipped };
}

/** The first address of the pattern, from `start` on, that nothing uses yet (then marked used). */
function freeAddress(used: Set<string>, pattern: (k: number) => string, start: number): string {
  for (let k = start; k < 255; k++) {
    const candidate = pattern(k);
    const parsed = parseIp(candidate);
    const text = parsed.ok ? formatIp(parsed.value) : candidate;
    if (!used.has(text)) {
      used.add(text);
      return text;
    }
  }
  throw new LabError('no free address left to allocate');
}

/** One Pod object per lab pod, as the API server would show it running. */
export function podObjects(plan: LabPlan): object[] {
  const nodeAddresses = new Map(plan.nodes.map((n) => [n.name, n.addresses]));
  return plan.pods.map((pod) => {
    const hostIPs = nodeAddresses.get(pod.node) ?? [];
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: pod.name, namespace: pod.namespace, labels: pod.labels },
      spec: {
        nodeName: pod.node,
        containers: [
          {
            name: 'main',
            ports: pod.ports.map((p) => ({
              ...(p.name !== undefined ? { name: p.name } : {}),
              containerPort: p.port,
              protocol: p.protocol,
            })),
          },
        ],
      },
      status: {
        phase: 'Running',
        hostIP: hostIPs[0],
        hostIPs: hostIPs.map((ip) => ({ ip })),
        podIP: pod.ips[0],
        podIPs: pod.ips.map((ip) => ({ ip })),
      },
    };
  });
}

export const familyOf = (ip: string): 4 | 6 => (ip.includes(':') ? 6 : 4);

/** A lab problem to show the user as one line (not a stack trace). */
export class LabError extends Error {}
