/**
 * Inputs that made the reference matrix crawl (issue 22's probes), rebuilt deterministically:
 * - `selectors`: 1,000 pods in one namespace, every pod its own equivalence class (an `id`
 *   label some selectors read), and 5,000 policies whose pod selectors and peers are
 *   matchExpressions (In, NotIn, Exists) over app, role and env;
 * - `excepts`: 100 pods and 1,000 policies, each with an ipBlock of 1,000 excepts (a /24 per
 *   except, some of them holding pod addresses) in ingress and egress.
 */
import { seededRandom } from '../src/generate/random.ts';

type Json = Record<string, unknown>;

const namespace = (name: string): Json => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });

function pod(name: string, labels: Record<string, string>, ip: string): Json {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'x', labels },
    spec: { containers: [{ name: 'c', ports: [{ name: 'http', containerPort: 8080 }] }] },
    status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] },
  };
}

const policy = (name: string, spec: Json): Json => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name, namespace: 'x' },
  spec,
});

const podIp = (i: number): string =>
  `10.${Math.floor(i / 62500) % 256}.${Math.floor(i / 250) % 250}.${(i % 250) + 1}`;

export function selectorsShape(pods = 1000, policies = 5000): Json[] {
  const random = seededRandom(3);
  const pick = (prefix: string, n: number, count: number): string[] =>
    [...new Set(Array.from({ length: count }, () => `${prefix}${Math.floor(random() * n)}`))].sort();
  const objects: Json[] = [namespace('x')];
  for (let i = 0; i < pods; i++)
    objects.push(
      pod(`p${i}`, { app: `a${i % 100}`, role: `r${i % 10}`, env: `e${i % 3}`, id: `p${i}` }, podIp(i)),
    );
  for (let j = 0; j < policies; j++) {
    objects.push(
      policy(`m${j}`, {
        podSelector: {
          matchExpressions: [
            { key: 'app', operator: 'In', values: pick('a', 100, 3) },
            { key: 'env', operator: 'NotIn', values: pick('e', 3, 1) },
            { key: 'id', operator: 'NotIn', values: [`p${j % pods}`] },
          ],
        },
        policyTypes: ['Ingress', 'Egress'],
        ingress: [
          {
            from: [
              {
                podSelector: {
                  matchExpressions: [
                    { key: 'role', operator: 'In', values: pick('r', 10, 2) },
                    { key: 'app', operator: 'Exists' },
                  ],
                },
              },
            ],
            ports: [{ port: 80 }, { port: 'http' }],
          },
        ],
        egress: [
          {
            to: [
              {
                podSelector: { matchExpressions: [{ key: 'env', operator: 'In', values: pick('e', 3, 2) }] },
              },
            ],
            ports: [{ port: 80 }, { port: 53, protocol: 'UDP' }],
          },
        ],
      }),
    );
  }
  return objects;
}

export function exceptsShape(pods = 100, policies = 1000, excepts = 1000): Json[] {
  const objects: Json[] = [namespace('x')];
  // Pods spread over 10.0.0.0/14 (one per /24 block of 10.0–10.3), so excepts hit some of them.
  for (let i = 0; i < pods; i++) {
    const block = i * 10;
    objects.push(pod(`p${i}`, { app: `a${i % 10}` }, `10.${block >> 8}.${block & 255}.7`));
  }
  const block = (j: number, k: number): string => {
    const n = (j * 7 + k * 3) % 1024;
    return `10.${n >> 8}.${n & 255}.0/24`;
  };
  for (let j = 0; j < policies; j++) {
    const except = [...new Set(Array.from({ length: excepts }, (_, k) => block(j, k)))];
    objects.push(
      policy(`b${j}`, {
        podSelector: { matchLabels: { app: `a${j % 10}` } },
        policyTypes: ['Ingress', 'Egress'],
        ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8', except } }], ports: [{ port: 80 }] }],
        egress: [{ to: [{ ipBlock: { cidr: '10.0.0.0/8', except } }], ports: [{ port: 80 }] }],
      }),
    );
  }
  return objects;
}
