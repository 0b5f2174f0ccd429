/**
 * The renderer conformance suite: the same cases for every renderer. In-process renderers (VPP
 * ACL, VPPTCP, Neutron) are interpreted for every packet between pods, nodes and outside
 * addresses on the sample ports; nftables is run in the kernel through the lab (root) and probed
 * pod to pod on TCP and UDP. Skips say why: VPPTCP does not police SCTP at all; VPP ACL rules
 * cannot match SCTP ports (denied instead, so only "never more than the reference" is asserted);
 * the lab has no SCTP (no kernel module) and does not build host-network pods.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { Cluster } from '../../src/model/types.ts';
import { probeLab } from '../../src/lab/index.ts';
import { needsRoot, startLab } from '../helpers/kernel.ts';
import { clusterOf, namespace, pod, policy, type Raw } from '../helpers/builders.ts';
import { SAMPLE_PORTS } from '../helpers/arbitraries.ts';
import { probeAddresses, referenceAllows } from '../helpers/compiled.ts';
import { RENDERERS, verdictsFor } from '../helpers/renderer-verdicts.ts';

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

const CASES: { name: string; objects: () => Raw[] }[] = [
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
];

function checkInProcess(renderer: (typeof RENDERERS)[number], cluster: Cluster): void {
  const allows = verdictsFor(renderer, cluster);
  const addresses = probeAddresses(cluster);
  for (const src of addresses)
    for (const dst of addresses) {
      if (src.ip.family !== dst.ip.family) continue;
      for (const [port, protocol] of SAMPLE_PORTS) {
        if (renderer === 'vpptcp' && protocol === 'SCTP') continue; // not policed by the session layer
        const expected = referenceAllows(cluster, src.ip, dst.ip, protocol, port);
        const actual = allows({ src: src.ip, dst: dst.ip, protocol, port });
        const where = `${renderer}: ${src.label} → ${dst.label} ${protocol}/${port}`;
        if (renderer === 'vpp-acl' && protocol === 'SCTP') assert.ok(!actual || expected, where);
        else assert.equal(actual, expected, where);
      }
    }
}

describe('renderer conformance', () => {
  for (const { name, objects } of CASES) {
    describe(name, () => {
      for (const renderer of RENDERERS) it(renderer, () => checkInProcess(renderer, clusterOf(objects())));
      it(
        'nftables (kernel, through the lab)',
        { skip: needsRoot('the lab (network namespaces and nftables)') },
        async () => {
          const { lab, down } = await startLab('c', objects(), clusterOf(objects()));
          try {
            const report = await probeLab(
              lab,
              [
                { port: 80, protocol: 'TCP' },
                { port: 53, protocol: 'UDP' },
                { port: 60, protocol: 'TCP' },
              ],
              { timeoutMs: 400 },
            );
            assert.deepEqual(report.disagreements, []);
          } finally {
            await down();
          }
        },
      );
    });
  }
});
