/**
 * fast-check generators of Calico's and Cilium's policy objects over the same few labels,
 * namespaces and addresses as arbitraries.ts, so that their selectors, tiers, passes, deny rules,
 * entities and CIDR rules collide with the pods and with NetworkPolicy.
 */
import fc from 'fast-check';
import type { Raw } from './builders.ts';

const NAMESPACES = ['a', 'b', 'c'];

/** Calico selectors over pod labels (app, tier), namespace labels and the pod's service account. */
const CALICO_SELECTORS = [
  'all()',
  "app == 'web'",
  "app != 'db'",
  "app in {'api', 'db'}",
  'has(tier)',
  '!has(tier)',
  "app == 'web' || tier == '1'",
  "!(app == 'api' && tier == '2')",
  "app starts with 'a'",
  "projectcalico.org/namespace == 'a'",
  "pcns.team == 'x'",
  "projectcalico.org/serviceaccount == 'default'",
  "projectcalico.org/orchestrator == 'k8s' && tier == '2'",
];
const CALICO_NS_SELECTORS = ["team == 'x'", "env != 'p'", 'all()', "projectcalico.org/name == 'b'"];
const CIDRS_V4 = ['10.0.0.0/8', '10.0.1.0/24', '192.168.1.0/24', '0.0.0.0/0', '192.168.100.0/24'];
const CIDRS_V6 = ['fd00::/16', '2001:db8::/32'];

const entityRuleArb = fc.oneof(
  fc.constant({}),
  fc.record({ selector: fc.constantFrom(...CALICO_SELECTORS) }),
  fc.record({
    selector: fc.constantFrom(...CALICO_SELECTORS),
    namespaceSelector: fc.constantFrom(...CALICO_NS_SELECTORS),
  }),
  fc.record({ namespaceSelector: fc.constantFrom(...CALICO_NS_SELECTORS) }),
  fc.record({ notSelector: fc.constantFrom(...CALICO_SELECTORS) }),
  fc.record({
    selector: fc.constantFrom(...CALICO_SELECTORS),
    notSelector: fc.constantFrom("tier == '1'", 'has(app)'),
  }),
  fc.record({ serviceAccounts: fc.constantFrom({ names: ['default'] }, { names: ['api'] }) }),
  fc.constantFrom(...CIDRS_V4, ...CIDRS_V6).map((net) => ({ nets: [net] })),
  fc.constantFrom(
    { nets: ['10.0.0.0/8'], notNets: ['10.0.1.0/24'] },
    { notNets: ['192.168.0.0/16'] },
    { notNets: ['fd00::/16'] },
  ),
);

/** What a generator may write: `allowOnly` keeps to allowing rules in the default tier (Calico) or no deny rules (Cilium). */
export interface EngineArbOptions {
  readonly allowOnly?: boolean;
}

const calicoRuleArb = (options: EngineArbOptions = {}) =>
  fc
    .record({
      action: options.allowOnly
        ? fc.constantFrom('Allow', 'Allow', 'Log')
        : fc.constantFrom('Allow', 'Allow', 'Deny', 'Pass', 'Log'),
      protocol: fc.constantFrom(undefined, 'TCP', 'UDP', 'ICMP', 17),
      remote: entityRuleArb,
      ports: fc.constantFrom(undefined, [80], [53], ['8000:9000'], ['http'], [80, 'dns']),
      notPorts: fc.constantFrom(undefined, undefined, [8080]),
    })
    .map(({ action, protocol, remote, ports, notPorts }) => {
      // Numeric ports need a protocol that has ports; ICMP has none; named ones go anywhere.
      const hasPorts = protocol === 'TCP' || protocol === 'UDP' || protocol === 17;
      const onlyNamed = (ports ?? []).every((p) => typeof p === 'string' && !p.includes(':'));
      const kept = hasPorts || (protocol === undefined && onlyNamed) ? ports : undefined;
      const notKept = hasPorts ? notPorts : undefined;
      return {
        action,
        ...(protocol !== undefined ? { protocol } : {}),
        remote,
        destinationPorts: { ...(kept ? { ports: kept } : {}), ...(notKept ? { notPorts: notKept } : {}) },
      };
    });

const calicoPolicyArb = (options: EngineArbOptions = {}) =>
  fc.record({
    global: fc.boolean(),
    namespace: fc.constantFrom(...NAMESPACES),
    tier: options.allowOnly
      ? fc.constant('default')
      : fc.constantFrom('default', 'default', 'sec', 'ops', 'kube-admin', 'kube-baseline'),
    order: fc.constantFrom(undefined, 10, 500, 1000, 2000),
    selector: fc.constantFrom(...CALICO_SELECTORS),
    types: fc.constantFrom(undefined, ['Ingress'], ['Egress'], ['Ingress', 'Egress']),
    ingress: fc.array(calicoRuleArb(options), { maxLength: 2 }),
    egress: fc.array(calicoRuleArb(options), { maxLength: 2 }),
  });

/** Calico's tiers and policies (NetworkPolicy and GlobalNetworkPolicy), and maybe a namespace's profile. */
export function calicoArb(max: number, options: EngineArbOptions = {}): fc.Arbitrary<Raw[]> {
  if (max === 0) return fc.constant([]);
  return fc
    .record({
      sec: fc.record({ order: fc.constantFrom(100, 500, 2_000_000), pass: fc.boolean() }),
      ops: fc.record({ order: fc.constantFrom(200, 1500, 5_000_000), pass: fc.boolean() }),
      policies: fc.array(calicoPolicyArb(options), { maxLength: max }),
      profile: options.allowOnly
        ? fc.constant(undefined)
        : fc.option(fc.array(calicoRuleArb(), { maxLength: 2 }), { nil: undefined, freq: 4 }),
    })
    .map(({ sec, ops, policies, profile }) => [
      tier('sec', sec.order, sec.pass),
      tier('ops', ops.order, ops.pass),
      ...policies.map((p, i) => calicoPolicy(p, i)),
      ...(profile
        ? [
            {
              apiVersion: 'projectcalico.org/v3',
              kind: 'Profile',
              metadata: { name: 'kns.b' },
              spec: { ingress: profile.map((r) => calicoRule(r, 'ingress')), egress: [{ action: 'Allow' }] },
            },
          ]
        : []),
    ]);
}

function tier(name: string, order: number, pass: boolean): Raw {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'Tier',
    metadata: { name },
    spec: { order, defaultAction: pass ? 'Pass' : 'Deny' },
  };
}

type CalicoPolicyShape = ReturnType<typeof calicoPolicyArb> extends fc.Arbitrary<infer T> ? T : never;
type CalicoRuleShape = CalicoPolicyShape['ingress'][number];

function calicoPolicy(p: CalicoPolicyShape, i: number): Raw {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: p.global ? 'GlobalNetworkPolicy' : 'NetworkPolicy',
    metadata: { name: `cal${i}`, ...(p.global ? {} : { namespace: p.namespace }) },
    spec: {
      tier: p.tier,
      ...(p.order !== undefined ? { order: p.order } : {}),
      selector: p.selector,
      ...(p.types ? { types: p.types } : {}),
      ingress: p.ingress.map((r) => calicoRule(r, 'ingress')),
      egress: p.egress.map((r) => calicoRule(r, 'egress')),
    },
  };
}

function calicoRule(r: CalicoRuleShape, direction: 'ingress' | 'egress'): Raw {
  const remote = direction === 'ingress' ? 'source' : 'destination';
  const destination = direction === 'ingress' ? r.destinationPorts : { ...r.remote, ...r.destinationPorts };
  return {
    action: r.action,
    ...(r.protocol !== undefined ? { protocol: r.protocol } : {}),
    ...(direction === 'ingress' ? { [remote]: r.remote } : {}),
    ...(Object.keys(destination).length > 0 ? { destination } : {}),
  };
}

const ciliumSelectorArb = fc.oneof(
  fc.constant({}),
  fc.constantFrom({ app: 'web' }, { app: 'api' }, { tier: '1' }).map((matchLabels) => ({ matchLabels })),
  fc
    .constantFrom(
      { 'k8s:io.kubernetes.pod.namespace': 'b' },
      { 'io.kubernetes.pod.namespace': 'a', app: 'db' },
      { 'k8s:app': 'api' },
    )
    .map((matchLabels) => ({ matchLabels })),
  fc.constant({ matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['web'] }] }),
);

const ciliumPeerArb = (prefix: 'from' | 'to') =>
  fc.oneof(
    fc.array(ciliumSelectorArb, { minLength: 1, maxLength: 2 }).map((s) => ({ [`${prefix}Endpoints`]: s })),
    fc
      .subarray(['world', 'cluster', 'host', 'remote-node', 'all'], { minLength: 1, maxLength: 2 })
      .map((e) => ({ [`${prefix}Entities`]: e })),
    fc.constantFrom(...CIDRS_V4, ...CIDRS_V6).map((cidr) => ({ [`${prefix}CIDR`]: [cidr] })),
    fc.constant({ [`${prefix}CIDRSet`]: [{ cidr: '10.0.0.0/8', except: ['10.0.1.0/24'] }] }),
    fc.constant({}),
  );

const ciliumPortsArb = fc.constantFrom(
  undefined,
  [{ ports: [{ port: '80', protocol: 'TCP' }] }],
  [{ ports: [{ port: '53', protocol: 'ANY' }] }],
  [{ ports: [{ port: '8000', endPort: 9000, protocol: 'TCP' }] }],
  [{ ports: [{ port: 'http' }] }],
  [
    {
      ports: [
        { port: '53', protocol: 'UDP' },
        { port: '5000', protocol: 'SCTP' },
      ],
    },
  ],
);

const ciliumRuleArb = (prefix: 'from' | 'to') =>
  fc
    .record({ peer: ciliumPeerArb(prefix), toPorts: ciliumPortsArb })
    .map(({ peer, toPorts }) => ({ ...peer, ...(toPorts ? { toPorts } : {}) }));

const ciliumPolicyArb = (options: EngineArbOptions = {}) =>
  fc.record({
    clusterwide: fc.boolean(),
    namespace: fc.constantFrom(...NAMESPACES),
    selector: ciliumSelectorArb,
    ingress: fc.array(ciliumRuleArb('from'), { maxLength: 2 }),
    ingressDeny: fc.array(ciliumRuleArb('from'), { maxLength: options.allowOnly ? 0 : 1 }),
    egress: fc.array(ciliumRuleArb('to'), { maxLength: 2 }),
    egressDeny: fc.array(ciliumRuleArb('to'), { maxLength: options.allowOnly ? 0 : 1 }),
    defaultDeny: fc.constantFrom(undefined, undefined, { ingress: false }, { egress: false }),
  });

/** CiliumNetworkPolicies and CiliumClusterwideNetworkPolicies. */
export function ciliumArb(max: number, options: EngineArbOptions = {}): fc.Arbitrary<Raw[]> {
  if (max === 0) return fc.constant([]);
  return fc.array(ciliumPolicyArb(options), { maxLength: max }).map((policies) =>
    policies.map((p, i) => ({
      apiVersion: 'cilium.io/v2',
      kind: p.clusterwide ? 'CiliumClusterwideNetworkPolicy' : 'CiliumNetworkPolicy',
      metadata: { name: `cil${i}`, ...(p.clusterwide ? {} : { namespace: p.namespace }) },
      spec: {
        endpointSelector: p.selector,
        ...(p.ingress.length ? { ingress: p.ingress } : {}),
        ...(p.ingressDeny.length ? { ingressDeny: p.ingressDeny } : {}),
        ...(p.egress.length ? { egress: p.egress } : {}),
        ...(p.egressDeny.length ? { egressDeny: p.egressDeny } : {}),
        ...(p.defaultDeny ? { enableDefaultDeny: p.defaultDeny } : {}),
      },
    })),
  );
}
