/**
 * fast-check generators of random clusters as raw Kubernetes objects: few label values and
 * addresses so that selectors, ipBlocks and named ports actually collide.
 */
import fc from 'fast-check';
import type { Raw } from './builders.ts';

const NAMESPACES = ['a', 'b', 'c'];
const V4 = [
  '10.0.0.1',
  '10.0.0.2',
  '10.0.1.1',
  '10.0.1.2',
  '10.1.0.1',
  '192.168.1.1',
  '192.168.1.2',
  '172.16.0.1',
];
const V6 = ['fd00::1', 'fd00::2', 'fd00:1::1', '2001:db8::1'];
const CIDRS = [
  '10.0.0.0/8',
  '10.0.0.0/16',
  '10.0.1.0/24',
  '0.0.0.0/0',
  '192.168.1.0/24',
  'fd00::/16',
  'fd00::/64',
  '::/0',
];
const EXCEPTS: Record<string, string[]> = {
  '10.0.0.0/8': ['10.0.1.0/24', '10.1.0.0/16'],
  '10.0.0.0/16': ['10.0.1.0/24', '10.0.0.2/32'],
  '0.0.0.0/0': ['10.0.0.0/8', '192.168.0.0/16'],
  'fd00::/16': ['fd00:1::/32'],
  '::/0': ['fd00::/64'],
};
export const SAMPLE_PORTS: readonly [number, 'TCP' | 'UDP' | 'SCTP'][] = [
  [80, 'TCP'],
  [8080, 'TCP'],
  [53, 'UDP'],
  [53, 'TCP'],
  [9090, 'TCP'],
  [5000, 'SCTP'],
  [1234, 'TCP'],
];
const NAMED_PORTS = [
  { name: 'http', containerPort: 80 },
  { name: 'http', containerPort: 8080 },
  { name: 'dns', containerPort: 53, protocol: 'UDP' },
  { name: 'metrics', containerPort: 9090 },
  { name: 'sctp-svc', containerPort: 5000, protocol: 'SCTP' },
];

const labelsArb = (keys: Record<string, string[]>) =>
  fc.record(Object.fromEntries(Object.entries(keys).map(([k, vs]) => [k, fc.constantFrom(...vs)])), {
    requiredKeys: [],
  });

const podLabels = labelsArb({ app: ['web', 'api', 'db'], tier: ['1', '2'] });
const nsLabels = labelsArb({ team: ['x', 'y'], env: ['p', 'q'] });

const selectorArb = (labels: Record<string, string[]>) =>
  fc.oneof(
    fc.constant({}),
    labelsArb(labels).map((matchLabels) => ({ matchLabels })),
    fc
      .record({
        key: fc.constantFrom(...Object.keys(labels)),
        operator: fc.constantFrom('In', 'NotIn', 'Exists', 'DoesNotExist'),
        value: fc.constantFrom(...Object.values(labels).flat()),
      })
      .map(({ key, operator, value }) => ({
        matchExpressions: [
          { key, operator, ...(operator === 'In' || operator === 'NotIn' ? { values: [value] } : {}) },
        ],
      })),
  );
const POD_KEYS = { app: ['web', 'api', 'db'], tier: ['1', '2'] };
const NS_KEYS = { team: ['x', 'y'], env: ['p', 'q'], 'kubernetes.io/metadata.name': NAMESPACES };

const peerArb = fc.oneof(
  selectorArb(POD_KEYS).map((podSelector) => ({ podSelector })),
  selectorArb(NS_KEYS).map((namespaceSelector) => ({ namespaceSelector })),
  fc
    .tuple(selectorArb(NS_KEYS), selectorArb(POD_KEYS))
    .map(([namespaceSelector, podSelector]) => ({ namespaceSelector, podSelector })),
  fc
    .constantFrom(...CIDRS)
    .chain((cidr) =>
      fc
        .subarray(EXCEPTS[cidr] ?? [])
        .map((except) => ({ ipBlock: { cidr, ...(except.length ? { except } : {}) } })),
    ),
);

const portArb = fc
  .oneof(
    fc.record({
      protocol: fc.constantFrom(undefined, 'TCP', 'UDP', 'SCTP'),
      port: fc.constantFrom(80, 53, 8080, 9090, 5000),
    }),
    fc.record({
      protocol: fc.constantFrom(undefined, 'UDP'),
      port: fc.constantFrom('http', 'dns', 'metrics', 'sctp-svc'),
    }),
    fc.constantFrom(
      { port: 50, endPort: 100 },
      { port: 1000, endPort: 9000 },
      { port: 8000, endPort: 9000 },
      { port: 53, endPort: 53 },
    ),
    fc.record({ protocol: fc.constantFrom('TCP', 'UDP') }),
  )
  .map((p) => Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined)));

const listOrAbsent = <T>(arb: fc.Arbitrary<T>) =>
  fc.option(fc.array(arb, { maxLength: 2 }), { nil: undefined });

export const ruleArb = (direction: 'from' | 'to') =>
  fc.record({ peers: listOrAbsent(peerArb), ports: listOrAbsent(portArb) }).map(({ peers, ports }) => ({
    ...(peers !== undefined ? { [direction]: peers } : {}),
    ...(ports !== undefined ? { ports } : {}),
  }));

const policyArb = fc.record({
  namespace: fc.constantFrom(...NAMESPACES),
  podSelector: selectorArb(POD_KEYS),
  policyTypes: fc.option(fc.subarray(['Ingress', 'Egress'], { minLength: 1 }), { nil: undefined }),
  ingress: fc.array(ruleArb('from'), { maxLength: 2 }),
  egress: fc.array(ruleArb('to'), { maxLength: 2 }),
});

const podArb = fc.record({
  namespace: fc.constantFrom(...NAMESPACES),
  labels: podLabels,
  v4: fc.option(fc.constantFrom(...V4), { nil: undefined }),
  v6: fc.option(fc.constantFrom(...V6), { nil: undefined, freq: 3 }),
  ports: fc.subarray(NAMED_PORTS, { maxLength: 2 }),
  hostNetwork: fc.integer({ min: 0, max: 9 }).map((n) => n < 2),
  node: fc.constantFrom('n1', 'n2'),
  /** Replicas: take namespace, labels and ports of an earlier pod, keep own addresses. */
  replicaOf: fc.option(fc.nat(4), { nil: undefined, freq: 2 }),
});

export interface ClusterOptions {
  readonly maxPods?: number;
  readonly maxPolicies?: number;
  readonly legacyAnnotations?: boolean;
  /** AdminNetworkPolicy, BaselineAdminNetworkPolicy and ClusterNetworkPolicy objects (default 0), and labelled Nodes. */
  readonly maxClusterPolicies?: number;
}

/** A random cluster: namespaces, pods (unique names and IPs), policies. */
export function clusterArb(options: ClusterOptions = {}): fc.Arbitrary<Raw[]> {
  return fc
    .record({
      namespaces: fc.tuple(nsLabels, nsLabels, nsLabels),
      defaultDeny: fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()),
      pods: fc.array(podArb, { minLength: 1, maxLength: options.maxPods ?? 6 }),
      policies: fc.array(policyArb, { maxLength: options.maxPolicies ?? 4 }),
      clusterPolicies: clusterPoliciesArb(options.maxClusterPolicies ?? 0),
    })
    .map(({ namespaces, defaultDeny, pods, policies, clusterPolicies }) => {
      const used = new Set<string>();
      const objects: Raw[] = NAMESPACES.map((name, i) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {
          name,
          labels: namespaces[i],
          ...(options.legacyAnnotations && defaultDeny[i]
            ? {
                annotations: {
                  'net.beta.kubernetes.io/network-policy': '{"ingress":{"isolation":"DefaultDeny"}}',
                },
              }
            : {}),
        },
      }));
      pods.forEach((own, i) => {
        const original = own.replicaOf !== undefined && own.replicaOf < i ? pods[own.replicaOf] : undefined;
        const p = original
          ? { ...own, namespace: original.namespace, labels: original.labels, ports: original.ports }
          : own;
        // Unique addresses: a pod's IP is its own (host-network pods share their node's).
        const ips = [p.v4, p.v6].filter((ip): ip is string => ip !== undefined && !used.has(ip));
        ips.forEach((ip) => used.add(ip));
        const hostIp = p.node === 'n1' ? '192.168.100.1' : '192.168.100.2';
        objects.push({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `pod${i}`, namespace: p.namespace, labels: p.labels },
          spec: {
            containers: [{ name: 'c', ports: p.ports }],
            nodeName: p.node,
            ...(p.hostNetwork ? { hostNetwork: true } : {}),
          },
          status: {
            phase: 'Running',
            hostIP: hostIp,
            ...(p.hostNetwork
              ? { podIP: hostIp }
              : ips.length
                ? { podIP: ips[0], podIPs: ips.map((ip) => ({ ip })) }
                : {}),
          },
        });
      });
      objects.push(...policies.map(policyObject));
      if (clusterPolicies.length > 0) objects.push(...NODES, ...clusterPolicies);
      return objects;
    });
}

/** Nodes with labels (for nodes peers), at the host IPs the pods above report. */
export const NODES: Raw[] = [
  { name: 'n1', ip: '192.168.100.1', zone: 'a' },
  { name: 'n2', ip: '192.168.100.2', zone: 'b' },
].map(({ name, ip, zone }) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels: { zone, 'kubernetes.io/os': 'linux' } },
  status: { addresses: [{ type: 'InternalIP', address: ip }] },
}));

const clusterPeerArb = (direction: 'from' | 'to') =>
  fc.oneof(
    selectorArb(NS_KEYS).map((namespaces) => ({ namespaces })),
    fc
      .tuple(selectorArb(NS_KEYS), selectorArb(POD_KEYS))
      .map(([namespaceSelector, podSelector]) => ({ pods: { namespaceSelector, podSelector } })),
    ...(direction === 'to'
      ? [
          fc.subarray(CIDRS, { minLength: 1, maxLength: 2 }).map((networks) => ({ networks })),
          selectorArb({ zone: ['a', 'b'] }).map((nodes) => ({ nodes })),
        ]
      : []),
  );

/** v1alpha1 ports; the v1alpha2 writer below translates them. */
const anpPortArb = fc.oneof(
  fc.record({
    portNumber: fc.record({
      protocol: fc.constantFrom('TCP', 'UDP', 'SCTP'),
      port: fc.constantFrom(80, 53, 8080, 9090, 5000),
    }),
  }),
  fc.constantFrom({ namedPort: 'http' }, { namedPort: 'dns' }, { namedPort: 'metrics' }),
  fc.constantFrom(
    { portRange: { protocol: 'TCP', start: 1000, end: 9000 } },
    { portRange: { protocol: 'UDP', start: 50, end: 60 } },
  ),
);

const clusterRuleArb = (direction: 'from' | 'to', actions: readonly string[]) =>
  fc
    .record({
      action: fc.constantFrom(...actions),
      peers: fc.array(clusterPeerArb(direction), { minLength: 1, maxLength: 2 }),
      ports: fc.option(fc.array(anpPortArb, { minLength: 1, maxLength: 2 }), { nil: undefined }),
    })
    // Named ports cannot go with networks or nodes peers (the CRDs reject it).
    .map((r) =>
      r.peers.some((p) => !('namespaces' in p) && !('pods' in p)) && r.ports?.some((p) => 'namedPort' in p)
        ? { ...r, ports: undefined }
        : r,
    );

const clusterPolicyArb = fc.record({
  kind: fc.constantFrom('AdminNetworkPolicy', 'ClusterNetworkPolicy', 'ClusterNetworkPolicyBaseline'),
  priority: fc.constantFrom(1, 2, 3, 10),
  subject: fc.oneof(
    selectorArb(NS_KEYS).map((namespaces) => ({ namespaces })),
    fc
      .tuple(selectorArb(NS_KEYS), selectorArb(POD_KEYS))
      .map(([namespaceSelector, podSelector]) => ({ pods: { namespaceSelector, podSelector } })),
  ),
  ingress: fc.array(clusterRuleArb('from', ['Allow', 'Deny', 'Pass']), { maxLength: 2 }),
  egress: fc.array(clusterRuleArb('to', ['Allow', 'Deny', 'Pass']), { maxLength: 2 }),
});

const banpArb = fc.record({
  subject: selectorArb(NS_KEYS).map((namespaces) => ({ namespaces })),
  ingress: fc.array(clusterRuleArb('from', ['Allow', 'Deny']), { maxLength: 2 }),
  egress: fc.array(clusterRuleArb('to', ['Allow', 'Deny']), { maxLength: 2 }),
});

/** Random tiered policies: ANPs and CNPs of both tiers with small priorities (ties happen), and maybe the BANP. */
export function clusterPoliciesArb(max: number): fc.Arbitrary<Raw[]> {
  if (max === 0) return fc.constant([]);
  return fc
    .tuple(fc.array(clusterPolicyArb, { maxLength: max }), fc.option(banpArb, { nil: undefined }))
    .map(([policies, banp]) => [
      ...policies.map((p, i) => clusterPolicyObject(p, i)),
      ...(banp
        ? [
            {
              apiVersion: 'policy.networking.k8s.io/v1alpha1',
              kind: 'BaselineAdminNetworkPolicy',
              metadata: { name: 'default' },
              spec: {
                subject: banp.subject,
                ingress: banp.ingress.map(anpRule('from')),
                egress: banp.egress.map(anpRule('to')),
              },
            },
          ]
        : []),
    ]);
}

type ClusterPolicyShape = typeof clusterPolicyArb extends fc.Arbitrary<infer T> ? T : never;
type ClusterRuleShape = ClusterPolicyShape['ingress'][number];

function clusterPolicyObject(p: ClusterPolicyShape, i: number): Raw {
  if (p.kind === 'AdminNetworkPolicy') {
    return {
      apiVersion: 'policy.networking.k8s.io/v1alpha1',
      kind: 'AdminNetworkPolicy',
      metadata: { name: `anp${i}` },
      spec: {
        priority: p.priority,
        subject: p.subject,
        ingress: p.ingress.map(anpRule('from')),
        egress: p.egress.map(anpRule('to')),
      },
    };
  }
  const tier = p.kind === 'ClusterNetworkPolicy' ? 'Admin' : 'Baseline';
  return {
    apiVersion: 'policy.networking.k8s.io/v1alpha2',
    kind: 'ClusterNetworkPolicy',
    metadata: { name: `cnp${i}` },
    spec: {
      tier,
      priority: p.priority,
      subject: p.subject,
      ingress: p.ingress.map(cnpRule('from')),
      egress: p.egress.map(cnpRule('to')),
    },
  };
}

const anpRule = (field: 'from' | 'to') => (r: ClusterRuleShape) => ({
  action: r.action,
  [field]: r.peers,
  ...(r.ports ? { ports: r.ports } : {}),
});

const cnpRule = (field: 'from' | 'to') => (r: ClusterRuleShape) => ({
  action: r.action === 'Allow' ? 'Accept' : r.action,
  [field]: r.peers,
  ...(r.ports
    ? {
        protocols: r.ports.map((port) => {
          if ('namedPort' in port) return { destinationNamedPort: port.namedPort };
          if ('portNumber' in port)
            return {
              [port.portNumber.protocol.toLowerCase()]: { destinationPort: { number: port.portNumber.port } },
            };
          const range = port.portRange;
          return {
            [range.protocol.toLowerCase()]: {
              destinationPort: { range: { start: range.start, end: range.end } },
            },
          };
        }),
      }
    : {}),
});

export const EXTERNAL_IPS = [
  '10.0.1.77',
  '8.8.8.8',
  '192.168.1.200',
  '2001:db8::99',
  'fd00:1::9',
  '192.168.100.1',
];

/** Random NetworkPolicies alone (namespaces a, b, c; the labels above), for a fixed cluster. */
export function policiesArb(maxPolicies = 4): fc.Arbitrary<Raw[]> {
  return fc.array(policyArb, { maxLength: maxPolicies }).map((policies) => policies.map(policyObject));
}

/** A generated policy as a NetworkPolicy object named `pol<i>`. */
function policyObject(p: PolicyShape, i: number): Raw {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: `pol${i}`, namespace: p.namespace },
    spec: {
      podSelector: p.podSelector,
      ...(p.policyTypes ? { policyTypes: p.policyTypes } : {}),
      ...(p.ingress.length ? { ingress: p.ingress } : {}),
      ...(p.egress.length ? { egress: p.egress } : {}),
    },
  };
}

type PolicyShape = typeof policyArb extends fc.Arbitrary<infer T> ? T : never;
