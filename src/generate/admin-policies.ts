/**
 * Synthetic AdminNetworkPolicies over shape `a`'s labels (team-0…team-99, env dev/prod, app and
 * tier pod labels): `count` policies of 25 rules each — 13 ingress, 12 egress — mixing Allow,
 * Deny and Pass, namespaces and pods peers, networks (with pod addresses inside), named ports,
 * port ranges, and priorities spread over 0–999 (so some share one, as real clusters do).
 * Deterministic for a seed.
 */
import type { Json } from './shapes.ts';
import { seededRandom } from './random.ts';

const TEAMS = 100;
const ACTIONS = ['Allow', 'Deny', 'Pass'];

export function generateAdminPolicies(count: number, seed = 1): Json[] {
  const random = seededRandom(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const team = (): string => `team-${Math.floor(random() * TEAMS)}`;
  const ports = (): Json[] | undefined =>
    pick([
      undefined,
      [{ portNumber: { protocol: 'TCP', port: pick([8080, 8443, 443, 9090]) } }],
      [{ namedPort: pick(['http', 'https', 'dns']) }],
      [
        { portRange: { protocol: 'TCP', start: 9000, end: 9100 } },
        { portNumber: { protocol: 'UDP', port: 53 } },
      ],
    ]);
  const podsPeer = (): Json =>
    random() < 0.5
      ? { namespaces: { matchLabels: { team: team() } } }
      : {
          pods: {
            namespaceSelector: { matchLabels: { env: pick(['dev', 'prod']) } },
            podSelector: { matchLabels: { app: pick(['app-0', 'app-1']), tier: pick(['web', 'db']) } },
          },
        };
  const policies: Json[] = [];
  for (let i = 0; i < count; i++) {
    const ingress = Array.from({ length: 13 }, (_, r) => {
      const p = ports();
      return { name: `in-${r}`, action: pick(ACTIONS), from: [podsPeer()], ...(p ? { ports: p } : {}) };
    });
    const egress = Array.from({ length: 12 }, (_, r) => {
      const network = random() < 0.3;
      const p = ports();
      // Named ports only with pod peers (the API rejects them with networks).
      const usable = network && p?.some((x) => 'namedPort' in x) ? undefined : p;
      return {
        name: `out-${r}`,
        action: pick(ACTIONS),
        to: [
          network ? { networks: [`10.${Math.floor(random() * 4)}.0.0/16`, '192.168.0.0/16'] } : podsPeer(),
        ],
        ...(usable ? { ports: usable } : {}),
      };
    });
    policies.push({
      apiVersion: 'policy.networking.k8s.io/v1alpha1',
      kind: 'AdminNetworkPolicy',
      metadata: { name: `admin-${i}` },
      spec: {
        priority: Math.floor(random() * 1000),
        subject: { namespaces: { matchLabels: { team: team() } } },
        ingress,
        egress,
      },
    });
  }
  return policies;
}
