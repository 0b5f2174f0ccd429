/**
 * A deterministic synthetic cluster for benchmarks: namespaces of apps with replicated pods
 * (each with a unique pod-template-hash-like label and IP, as real pods have) and a realistic
 * policy mix — default deny, intra-app tiers, cross-namespace monitoring, DNS, ipBlock egress
 * with except, named ports and port ranges.
 */
import { seededRandom as random } from '../src/generate/random.ts';
import type { Raw } from '../test/helpers/builders.ts';

export interface SyntheticShape {
  readonly namespaces: number;
  readonly podsPerNamespace: number;
  readonly policiesPerNamespace: number;
  readonly seed?: number;
}

const APPS = ['web', 'api', 'worker', 'cache', 'db'];
const TIERS: Record<string, string> = {
  web: 'frontend',
  api: 'backend',
  worker: 'backend',
  cache: 'data',
  db: 'data',
};
const PORTS: Record<string, { name: string; containerPort: number; protocol?: string }[]> = {
  web: [
    { name: 'http', containerPort: 8080 },
    { name: 'metrics', containerPort: 9090 },
  ],
  api: [
    { name: 'http', containerPort: 8000 },
    { name: 'grpc', containerPort: 9000 },
    { name: 'metrics', containerPort: 9090 },
  ],
  worker: [{ name: 'metrics', containerPort: 9090 }],
  cache: [{ name: 'redis', containerPort: 6379 }],
  db: [
    { name: 'postgres', containerPort: 5432 },
    { name: 'metrics', containerPort: 9187 },
  ],
};

export function syntheticCluster(shape: SyntheticShape): Raw[] {
  const rand = random(shape.seed ?? 1);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)] as T;
  const objects: Raw[] = [];
  for (let n = 0; n < shape.namespaces; n++) {
    const ns = `ns-${n}`;
    const team = `team-${n % 7}`;
    objects.push({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: ns,
        labels: { team, env: n % 3 === 0 ? 'dev' : 'prod', ...(n === 0 ? { purpose: 'monitoring' } : {}) },
      },
    });
    for (let p = 0; p < shape.podsPerNamespace; p++) {
      const app = APPS[p % APPS.length] as string;
      const version = p % 10 < 7 ? 'v1' : 'v2';
      const ip = `10.${Math.floor(n / 2)}.${(n % 2) * 128 + Math.floor(p / 250)}.${(p % 250) + 1}`;
      objects.push({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: `${app}-${p}`,
          namespace: ns,
          labels: { app, tier: TIERS[app], version, 'pod-template-hash': `h${n}x${p}` },
        },
        spec: { nodeName: `node-${p % 20}`, containers: [{ name: app, ports: PORTS[app] }] },
        status: { phase: 'Running', podIP: ip, podIPs: [{ ip }], hostIP: `192.168.0.${(p % 20) + 1}` },
      });
    }
    const policies: Raw[] = [
      spec(ns, 'default-deny', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] }),
      spec(ns, 'dns', {
        podSelector: {},
        policyTypes: ['Egress'],
        egress: [
          {
            to: [{ namespaceSelector: {}, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
            ports: [{ protocol: 'UDP', port: 53 }],
          },
        ],
      }),
      spec(ns, 'monitoring', {
        podSelector: {},
        ingress: [
          {
            from: [{ namespaceSelector: { matchLabels: { purpose: 'monitoring' } } }],
            ports: [{ port: 'metrics' }],
          },
        ],
      }),
    ];
    for (let i = policies.length; i < shape.policiesPerNamespace; i++) {
      const to = pick(APPS);
      const from = pick(APPS);
      const kind = rand();
      if (kind < 0.4) {
        policies.push(
          spec(ns, `allow-${from}-to-${to}-${i}`, {
            podSelector: { matchLabels: { app: to } },
            ingress: [
              {
                from: [{ podSelector: { matchLabels: { app: from } } }],
                ports: [{ port: pick(PORTS[to] ?? []).name }],
              },
            ],
          }),
        );
      } else if (kind < 0.6) {
        policies.push(
          spec(ns, `team-${to}-${i}`, {
            podSelector: {
              matchExpressions: [{ key: 'tier', operator: 'In', values: [TIERS[to] as string] }],
            },
            ingress: [
              {
                from: [
                  {
                    namespaceSelector: { matchLabels: { team: `team-${Math.floor(rand() * 7)}` } },
                    podSelector: { matchLabels: { app: from } },
                  },
                ],
                ports: [{ port: 8000, endPort: 9100 }],
              },
            ],
          }),
        );
      } else if (kind < 0.8) {
        policies.push(
          spec(ns, `egress-${from}-${i}`, {
            podSelector: { matchLabels: { app: from } },
            policyTypes: ['Egress'],
            egress: [
              { to: [{ podSelector: { matchLabels: { app: to } } }] },
              {
                to: [{ ipBlock: { cidr: '10.0.0.0/8', except: [`10.${Math.floor(rand() * 25)}.0.0/16`] } }],
                ports: [{ port: 443 }],
              },
            ],
          }),
        );
      } else {
        policies.push(
          spec(ns, `external-${to}-${i}`, {
            podSelector: { matchLabels: { app: to, version: pick(['v1', 'v2']) } },
            ingress: [
              {
                from: [
                  { ipBlock: { cidr: '172.16.0.0/12' } },
                  { podSelector: { matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['db'] }] } },
                ],
              },
            ],
          }),
        );
      }
    }
    objects.push(...policies.slice(0, shape.policiesPerNamespace));
  }
  return objects;
}

function spec(namespace: string, name: string, body: Raw): Raw {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name, namespace },
    spec: body,
  };
}
