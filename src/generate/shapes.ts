/**
 * Synthetic clusters as Kubernetes objects, including the shapes Antrea benchmarks its
 * controller on:
 * - `a`: 25,000 namespaces × (4 pods, 3 policies) = 100,000 pods, 75,000 policies, mixing pod,
 *   namespace and ipBlock peers and named ports;
 * - `b`: one namespace, 10,000 pods, 10,000 policies that each select every pod;
 * - `c`: one namespace, 10,000 pods, one policy per pod.
 * `scale` multiplies the size (namespaces for `a`, pods and policies for `b` and `c`).
 */
import { seededRandom } from './random.ts';

export type Json = Record<string, unknown>;
export const SHAPES = ['a', 'b', 'c'] as const;
export type ShapeName = (typeof SHAPES)[number];

interface ShapeOptions {
  readonly scale?: number;
  readonly seed?: number;
}

interface GeneratedCluster {
  readonly namespaces: Json[];
  readonly pods: Json[];
  readonly policies: Json[];
}

const NODES = 1000;

export function generateShape(shape: ShapeName, options: ShapeOptions = {}): GeneratedCluster {
  const scale = options.scale ?? 1;
  const random = seededRandom(options.seed ?? 1);
  switch (shape) {
    case 'a':
      return shapeA(Math.max(1, Math.round(25_000 * scale)), random);
    case 'b':
      return shapeB(Math.max(1, Math.round(10_000 * scale)), random);
    case 'c':
      return shapeC(Math.max(1, Math.round(10_000 * scale)), random);
  }
}

/** The address of the n-th pod: 10.0.0.1 onwards, skipping .0 and .255. */
export function podIp(n: number): string {
  const host = (n % 254) + 1;
  const rest = Math.floor(n / 254);
  return `10.${Math.floor(rest / 256) % 256}.${rest % 256}.${host}`;
}

function namespace(name: string, labels: Record<string, string>): Json {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } };
}

function pod(ns: string, name: string, index: number, labels: Record<string, string>): Json {
  const ip = podIp(index);
  const node = `node-${index % NODES}`;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, labels },
    spec: {
      nodeName: node,
      containers: [
        {
          name: 'app',
          ports: [
            { name: 'http', containerPort: 8080 },
            { name: 'https', containerPort: 8443 },
            { name: 'dns', containerPort: 53, protocol: 'UDP' },
          ],
        },
      ],
    },
    status: {
      phase: 'Running',
      podIP: ip,
      podIPs: [{ ip }],
      hostIP: `172.16.${Math.floor((index % NODES) / 250)}.${(index % NODES) % 250}`,
    },
  };
}

function policy(ns: string, name: string, spec: Json): Json {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name, namespace: ns },
    spec,
  };
}

function shapeA(count: number, random: () => number): GeneratedCluster {
  const result: GeneratedCluster = { namespaces: [], pods: [], policies: [] };
  for (let i = 0; i < count; i++) {
    const ns = `ns-${i}`;
    result.namespaces.push(namespace(ns, { team: `team-${i % 100}`, env: i % 3 === 0 ? 'dev' : 'prod' }));
    for (let k = 0; k < 4; k++) {
      result.pods.push(pod(ns, `pod-${k}`, i * 4 + k, { app: `app-${k % 2}`, tier: k < 2 ? 'web' : 'db' }));
    }
    const neighbour = Math.floor(random() * count);
    result.policies.push(
      policy(ns, 'app-0', {
        podSelector: { matchLabels: { app: 'app-0' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'app-1' } } }], ports: [{ port: 'http' }] }],
        egress: [
          {
            to: [{ podSelector: { matchLabels: { app: 'app-1' } } }],
            ports: [{ port: 'https' }, { port: 53, protocol: 'UDP' }],
          },
        ],
      }),
      policy(ns, 'cross-namespace', {
        podSelector: { matchLabels: { tier: 'db' } },
        ingress: [
          {
            from: [
              {
                namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': `ns-${neighbour}` } },
                podSelector: { matchLabels: { tier: 'web' } },
              },
              { namespaceSelector: { matchLabels: { team: `team-${i % 100}` } } },
            ],
            ports: [{ port: 8080 }, { port: 9000, endPort: 9100 }],
          },
        ],
      }),
      policy(ns, 'ip-blocks', {
        podSelector: { matchLabels: { app: 'app-1' } },
        policyTypes: ['Ingress', 'Egress'],
        ingress: [{ from: [{ ipBlock: { cidr: '192.168.0.0/16', except: [`192.168.${i % 256}.0/24`] } }] }],
        egress: [
          {
            to: [{ ipBlock: { cidr: '10.0.0.0/8', except: [`10.${i % 256}.0.0/16`] } }],
            ports: [{ port: 443 }],
          },
        ],
      }),
    );
  }
  return result;
}

function shapeB(count: number, random: () => number): GeneratedCluster {
  const result: GeneratedCluster = { namespaces: [namespace('default', {})], pods: [], policies: [] };
  for (let k = 0; k < count; k++)
    result.pods.push(pod('default', `pod-${k}`, k, { app: `app-${k % 10}`, shard: `s-${k % 3}` }));
  for (let j = 0; j < count; j++) {
    result.policies.push(
      policy('default', `policy-${j}`, {
        podSelector: {},
        ingress: [
          {
            from: [{ podSelector: { matchLabels: { app: `app-${Math.floor(random() * 10)}` } } }],
            ports: [{ port: 1000 + (j % 5000) }],
          },
        ],
      }),
    );
  }
  return result;
}

function shapeC(count: number, random: () => number): GeneratedCluster {
  const result: GeneratedCluster = { namespaces: [namespace('default', {})], pods: [], policies: [] };
  for (let k = 0; k < count; k++)
    result.pods.push(pod('default', `pod-${k}`, k, { app: `app-${k % 10}`, instance: `pod-${k}` }));
  for (let k = 0; k < count; k++) {
    result.policies.push(
      policy('default', `pod-${k}`, {
        podSelector: { matchLabels: { instance: `pod-${k}` } },
        ingress: [
          {
            from: [{ podSelector: { matchLabels: { app: `app-${Math.floor(random() * 10)}` } } }],
            ports: [{ port: 'http' }],
          },
        ],
      }),
    );
  }
  return result;
}
