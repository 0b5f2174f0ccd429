/**
 * Synthetic policies over shape `a`'s namespaces and labels (ns-0…, team-0…team-99, pods
 * app-0/app-1 × tier web/db, named ports http/https/dns), written the same way in each engine's
 * language so that their cost can be compared: policy i is shape a's i-th kind (same-app with
 * named ports, cross-namespace with a port range, address blocks with excepts) in namespace
 * `ns-(i mod namespaces)` — as a Kubernetes NetworkPolicy, a Calico NetworkPolicy
 * (projectcalico.org/v3) or a CiliumNetworkPolicy. Deterministic for a seed. They mean the
 * same but where an address block covers pods: Cilium's CIDR rules never select pods it manages
 * (test/engines/engine-policies.test.ts holds them to that).
 */
import type { Json } from './shapes.ts';
import { seededRandom } from './random.ts';

export const POLICY_ENGINES = ['networkpolicy', 'calico', 'cilium'] as const;
export type PolicyEngineName = (typeof POLICY_ENGINES)[number];

export function generateEnginePolicies(
  engine: PolicyEngineName,
  count: number,
  namespaces: number,
  seed = 1,
): Json[] {
  const random = seededRandom(seed);
  const policies: Json[] = [];
  for (let i = 0; i < count; i++) {
    const n = i % namespaces;
    const ns = `ns-${n}`;
    const neighbour = `ns-${Math.floor(random() * namespaces)}`;
    const team = `team-${n % 100}`;
    const kind = i % 3;
    const name = `${engine}-${i}`;
    if (engine === 'networkpolicy') policies.push(networkPolicy(ns, name, kind, neighbour, team, n));
    else if (engine === 'calico') policies.push(calico(ns, name, kind, neighbour, team, n));
    else policies.push(cilium(ns, name, kind, neighbour, team, n));
  }
  return policies;
}

function networkPolicy(
  ns: string,
  name: string,
  kind: number,
  neighbour: string,
  team: string,
  n: number,
): Json {
  const spec =
    kind === 0
      ? {
          podSelector: { matchLabels: { app: 'app-0' } },
          ingress: [
            { from: [{ podSelector: { matchLabels: { app: 'app-1' } } }], ports: [{ port: 'http' }] },
          ],
          egress: [
            {
              to: [{ podSelector: { matchLabels: { app: 'app-1' } } }],
              ports: [{ port: 'https' }, { port: 53, protocol: 'UDP' }],
            },
          ],
        }
      : kind === 1
        ? {
            podSelector: { matchLabels: { tier: 'db' } },
            ingress: [
              {
                from: [
                  {
                    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': neighbour } },
                    podSelector: { matchLabels: { tier: 'web' } },
                  },
                  { namespaceSelector: { matchLabels: { team } } },
                ],
                ports: [{ port: 8080 }, { port: 9000, endPort: 9100 }],
              },
            ],
          }
        : {
            podSelector: { matchLabels: { app: 'app-1' } },
            policyTypes: ['Ingress', 'Egress'],
            ingress: [
              { from: [{ ipBlock: { cidr: '192.168.0.0/16', except: [`192.168.${n % 256}.0/24`] } }] },
            ],
            egress: [
              {
                to: [{ ipBlock: { cidr: '10.0.0.0/8', except: [`10.${n % 256}.0.0/16`] } }],
                ports: [{ port: 443 }],
              },
            ],
          };
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name, namespace: ns },
    spec,
  };
}

function calico(ns: string, name: string, kind: number, neighbour: string, team: string, n: number): Json {
  const spec =
    kind === 0
      ? {
          selector: "app == 'app-0'",
          ingress: [
            {
              action: 'Allow',
              protocol: 'TCP',
              source: { selector: "app == 'app-1'" },
              destination: { ports: ['http'] },
            },
          ],
          egress: [
            {
              action: 'Allow',
              protocol: 'TCP',
              destination: { selector: "app == 'app-1'", ports: ['https'] },
            },
            { action: 'Allow', protocol: 'UDP', destination: { selector: "app == 'app-1'", ports: [53] } },
          ],
        }
      : kind === 1
        ? {
            selector: "tier == 'db'",
            types: ['Ingress'],
            ingress: [
              {
                action: 'Allow',
                protocol: 'TCP',
                source: {
                  namespaceSelector: `projectcalico.org/name == '${neighbour}'`,
                  selector: "tier == 'web'",
                },
                destination: { ports: [8080, '9000:9100'] },
              },
              {
                action: 'Allow',
                protocol: 'TCP',
                source: { namespaceSelector: `team == '${team}'` },
                destination: { ports: [8080, '9000:9100'] },
              },
            ],
          }
        : {
            selector: "app == 'app-1'",
            types: ['Ingress', 'Egress'],
            ingress: [
              { action: 'Allow', source: { nets: ['192.168.0.0/16'], notNets: [`192.168.${n % 256}.0/24`] } },
            ],
            egress: [
              {
                action: 'Allow',
                protocol: 'TCP',
                destination: { nets: ['10.0.0.0/8'], notNets: [`10.${n % 256}.0.0/16`], ports: [443] },
              },
            ],
          };
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'NetworkPolicy',
    metadata: { name, namespace: ns },
    spec,
  };
}

function cilium(ns: string, name: string, kind: number, neighbour: string, team: string, n: number): Json {
  const spec =
    kind === 0
      ? {
          endpointSelector: { matchLabels: { app: 'app-0' } },
          ingress: [
            {
              fromEndpoints: [{ matchLabels: { app: 'app-1' } }],
              toPorts: [{ ports: [{ port: 'http', protocol: 'TCP' }] }],
            },
          ],
          egress: [
            {
              toEndpoints: [{ matchLabels: { app: 'app-1' } }],
              toPorts: [
                {
                  ports: [
                    { port: 'https', protocol: 'TCP' },
                    { port: '53', protocol: 'UDP' },
                  ],
                },
              ],
            },
          ],
        }
      : kind === 1
        ? {
            endpointSelector: { matchLabels: { tier: 'db' } },
            ingress: [
              {
                fromEndpoints: [
                  { matchLabels: { 'k8s:io.kubernetes.pod.namespace': neighbour, tier: 'web' } },
                  // Namespace labels are ignored in a namespaced CiliumNetworkPolicy: a namespace by name.
                  { matchLabels: { 'k8s:io.kubernetes.pod.namespace': `ns-${team.slice('team-'.length)}` } },
                ],
                toPorts: [
                  {
                    ports: [
                      { port: '8080', protocol: 'TCP' },
                      { port: '9000', endPort: 9100, protocol: 'TCP' },
                    ],
                  },
                ],
              },
            ],
          }
        : {
            endpointSelector: { matchLabels: { app: 'app-1' } },
            ingress: [{ fromCIDRSet: [{ cidr: '192.168.0.0/16', except: [`192.168.${n % 256}.0/24`] }] }],
            egress: [
              {
                toCIDRSet: [{ cidr: '10.0.0.0/8', except: [`10.${n % 256}.0.0/16`] }],
                toPorts: [{ ports: [{ port: '443', protocol: 'TCP' }] }],
              },
            ],
          };
  return { apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name, namespace: ns }, spec };
}
