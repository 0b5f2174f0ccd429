/**
 * The renderer conformance suite's cases (test/renderers/conformance.test.ts for the targets with
 * an in-process interpreter, conformance-kernel.root.test.ts for the kernel ones through the lab)
 * and the in-process check: a target's interpreter against the reference evaluator for every
 * packet between pods, nodes and outside addresses on the sample ports. What a target does not
 * police, or can only deny, comes with its reason from the target's interpreter (VPPTCP does not
 * police SCTP; VPP ACL rules cannot match SCTP ports, so only "never more than the reference" is
 * asserted).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { Cluster } from '../../src/model/types.ts';
import type { RenderTarget } from '../../src/datapaths/index.ts';
import { namespace, pod, policy, type Raw } from './builders.ts';
import { SAMPLE_PORTS } from './arbitraries.ts';
import { podAndOwnNode, probeAddresses, referenceAllows } from './compiled.ts';
import { verdictsFor } from './renderer-verdicts.ts';

const docsExample = (): Raw[] =>
  parseAllDocuments(
    readFileSync(join(import.meta.dirname, '..', 'fixtures', 'docs-example.yaml'), 'utf8'),
  ).flatMap((d) => {
    const value = d.toJS() as Raw & { items?: Raw[] };
    return value.kind === 'List' ? (value.items ?? []) : [value];
  });

const web = (ns: string, name: string, ip: string, node: string, extra: object = {}): Raw =>
  pod(
    ns,
    name,
    { app: name.replace(/-.*/, '') },
    {
      ips: [ip],
      node,
      hostIp: node === 'n1' ? '192.168.100.1' : '192.168.100.2',
      ports: [
        { name: 'http', containerPort: 80 },
        { name: 'dns', containerPort: 53, protocol: 'UDP' },
      ],
      ...extra,
    },
  );

export const CASES: { name: string; engines?: true; objects: () => Raw[] }[] = [
  {
    name: 'no policy: everything open',
    objects: () => [namespace('a'), web('a', 'web', '10.0.0.1', 'n1'), web('a', 'db', '10.0.0.2', 'n2')],
  },
  {
    name: 'default deny ingress',
    objects: () => [
      namespace('a'),
      web('a', 'web', '10.0.0.1', 'n1'),
      web('a', 'db', '10.0.0.2', 'n2'),
      policy('a', 'deny', { podSelector: {}, policyTypes: ['Ingress'] }),
    ],
  },
  { name: "the Kubernetes documentation's test-network-policy", objects: docsExample },
  {
    name: 'ingress named port resolving differently per pod',
    objects: () => [
      namespace('a'),
      pod(
        'a',
        'server-a',
        { app: 'server' },
        { ips: ['10.0.0.1'], node: 'n1', ports: [{ name: 'serve', containerPort: 80 }] },
      ),
      pod(
        'a',
        'server-b',
        { app: 'server' },
        { ips: ['10.0.0.2'], node: 'n2', ports: [{ name: 'serve', containerPort: 53 }] },
      ),
      web('a', 'client', '10.0.0.3', 'n1'),
      policy('a', 'serve', {
        podSelector: { matchLabels: { app: 'server' } },
        ingress: [{ ports: [{ port: 'serve' }] }],
      }),
    ],
  },
  {
    name: 'egress named port to selected pods and to an ipBlock',
    objects: () => [
      namespace('a'),
      web('a', 'web', '10.0.0.1', 'n1'),
      web('a', 'db', '10.0.0.2', 'n2'),
      web('a', 'cache', '10.1.0.1', 'n2'),
      policy('a', 'out', {
        podSelector: { matchLabels: { app: 'web' } },
        policyTypes: ['Egress'],
        egress: [
          { to: [{ podSelector: { matchLabels: { app: 'db' } } }], ports: [{ port: 'http' }] },
          { to: [{ ipBlock: { cidr: '10.1.0.0/16' } }], ports: [{ port: 'dns', protocol: 'UDP' }] },
        ],
      }),
    ],
  },
  {
    name: 'endPort range',
    objects: () => [
      namespace('a'),
      web('a', 'web', '10.0.0.1', 'n1'),
      web('a', 'db', '10.0.0.2', 'n2'),
      policy('a', 'range', {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [{ ports: [{ port: 50, endPort: 79 }] }],
      }),
    ],
  },
  {
    name: 'dual-stack: an ipBlock on one family only',
    objects: () => [
      namespace('a'),
      pod(
        'a',
        'web',
        { app: 'web' },
        { ips: ['10.0.0.1', 'fd00::1'], node: 'n1', ports: [{ containerPort: 80 }] },
      ),
      pod(
        'a',
        'db',
        { app: 'db' },
        { ips: ['10.0.0.2', 'fd00::2'], node: 'n2', ports: [{ containerPort: 80 }] },
      ),
      policy('a', 'v6', {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [{ from: [{ ipBlock: { cidr: 'fd00::1/128' } }] }],
      }),
    ],
  },
  {
    name: 'host-network pod and node-local traffic',
    objects: () => [
      namespace('a'),
      web('a', 'web', '10.0.0.1', 'n1'),
      pod(
        'a',
        'agent',
        { app: 'agent' },
        { ips: ['192.168.100.1'], node: 'n1', hostNetwork: true, hostIp: '192.168.100.1' },
      ),
      policy('a', 'deny', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] }),
    ],
  },
  {
    name: 'cross-node, cross-namespace with namespaceSelector AND podSelector',
    objects: () => [
      namespace('a', { team: 'x' }),
      namespace('b', { team: 'y' }),
      web('a', 'web', '10.0.0.1', 'n1'),
      web('b', 'web', '10.0.0.2', 'n2'),
      web('b', 'db', '10.0.0.3', 'n1'),
      policy('b', 'db', {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [
          {
            from: [
              {
                namespaceSelector: { matchLabels: { team: 'x' } },
                podSelector: { matchLabels: { app: 'web' } },
              },
            ],
            ports: [{ port: 80 }],
          },
        ],
      }),
    ],
  },
  {
    name: 'SCTP',
    objects: () => [
      namespace('a'),
      web('a', 'web', '10.0.0.1', 'n1'),
      pod(
        'a',
        'db',
        { app: 'db' },
        { ips: ['10.0.0.2'], node: 'n2', ports: [{ containerPort: 5000, protocol: 'SCTP' }] },
      ),
      policy('a', 'sctp', {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [{ ports: [{ port: 5000, protocol: 'SCTP' }] }],
      }),
    ],
  },

  {
    name: "Calico: a tier's Pass to the default tier, a Deny ending a tier, NetworkPolicy beside Calico's in the default tier",
    engines: true,
    objects: () => [
      namespace('a'),
      namespace('b', { team: 'x' }),
      web('a', 'web', '10.0.0.1', 'n1'),
      web('a', 'db', '10.0.0.2', 'n2'),
      web('b', 'api', '10.0.0.3', 'n1'),
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'Tier',
        metadata: { name: 'security' },
        spec: { order: 100 },
      },
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'GlobalNetworkPolicy',
        metadata: { name: 'security.guard' },
        spec: {
          tier: 'security',
          order: 10,
          selector: "app == 'db'",
          types: ['Ingress'],
          ingress: [
            { action: 'Pass', source: { namespaceSelector: "team == 'x'" } },
            { action: 'Allow', protocol: 'UDP', destination: { ports: [53] } },
          ],
        },
      },
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'NetworkPolicy',
        metadata: { name: 'allow-web', namespace: 'a' },
        spec: {
          order: 500,
          selector: "app == 'db'",
          ingress: [{ action: 'Allow', protocol: 'TCP', source: { selector: "app == 'web'" } }],
        },
      },
      policy('a', 'db-from-b', {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [{ from: [{ namespaceSelector: {} }], ports: [{ port: 80 }] }],
      }),
    ],
  },
  {
    name: 'Cilium: deny wins over allow, entities, a CIDR rule for addresses outside the cluster',
    engines: true,
    objects: () => [
      namespace('a'),
      web('a', 'web', '10.0.0.1', 'n1'),
      web('a', 'db', '10.0.0.2', 'n2'),
      web('a', 'api', '10.0.0.3', 'n1'),
      {
        apiVersion: 'cilium.io/v2',
        kind: 'CiliumNetworkPolicy',
        metadata: { name: 'db', namespace: 'a' },
        spec: {
          endpointSelector: { matchLabels: { app: 'db' } },
          ingress: [
            { fromEntities: ['cluster'] },
            { fromCIDR: ['0.0.0.0/0'], toPorts: [{ ports: [{ port: '80' }] }] },
          ],
          ingressDeny: [{ fromEndpoints: [{ matchLabels: { app: 'api' } }] }],
        },
      },
      {
        apiVersion: 'cilium.io/v2',
        kind: 'CiliumClusterwideNetworkPolicy',
        metadata: { name: 'web-out' },
        spec: {
          endpointSelector: { matchLabels: { app: 'web' } },
          egress: [
            { toEntities: ['world'] },
            { toEndpoints: [{}], toPorts: [{ ports: [{ port: '53', protocol: 'UDP' }] }] },
          ],
        },
      },
    ],
  },
  {
    // Allows only: each side a table, its blocks outside the cluster in an Admin list before it.
    name: 'Cilium, allows only: CIDR rules (blocks outside the cluster) beside pod peers',
    engines: true,
    objects: () => [
      namespace('a'),
      web('a', 'web', '10.0.0.1', 'n1'),
      web('a', 'db', '10.0.0.2', 'n2'),
      {
        apiVersion: 'cilium.io/v2',
        kind: 'CiliumNetworkPolicy',
        metadata: { name: 'db', namespace: 'a' },
        spec: {
          endpointSelector: { matchLabels: { app: 'db' } },
          ingress: [
            { fromEndpoints: [{ matchLabels: { app: 'web' } }], toPorts: [{ ports: [{ port: '80' }] }] },
            // 10.0.0.0/8 holds the pods: they are not outside, so only 10.0.1.77 is let in.
            { fromCIDRSet: [{ cidr: '10.0.0.0/8', except: ['10.0.2.0/24'] }] },
          ],
          egress: [{ toCIDR: ['0.0.0.0/0'], toPorts: [{ ports: [{ port: '53', protocol: 'UDP' }] }] }],
        },
      },
    ],
  },
];

/** A target's interpreter ≡ the reference evaluator on every packet of the case's cluster. */
export function checkInProcess(target: RenderTarget, cluster: Cluster): void {
  const interpreter = target.interpreter;
  if (!interpreter) throw new Error(`${target.name} has no in-process interpreter`);
  const allows = verdictsFor(target.name, cluster);
  const addresses = probeAddresses(cluster);
  // A target that does not police a pod's own node leaves ordered policy there unenforced (its notes say so).
  const ownNode = podAndOwnNode(cluster);
  const unpolicedOwnNode = !target.capabilities.policesOwnNode && cluster.clusterPolicies.length > 0;
  for (const src of addresses)
    for (const dst of addresses) {
      if (src.ip.family !== dst.ip.family) continue;
      if (unpolicedOwnNode && ownNode(src.ip, dst.ip)) continue;
      for (const [port, protocol] of SAMPLE_PORTS) {
        const packet = { src: src.ip, dst: dst.ip, protocol, port };
        if (interpreter.unpoliced?.(packet)) continue;
        const expected = referenceAllows(cluster, src.ip, dst.ip, protocol, port);
        const actual = allows(packet);
        const where = `${target.name}: ${src.label} → ${dst.label} ${protocol}/${port}`;
        if (interpreter.deniesOnly?.(packet)) assert.ok(!actual || expected, where);
        else assert.equal(actual, expected, where);
      }
    }
}
