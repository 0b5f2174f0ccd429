/**
 * Lint where Calico's and Cilium's policies meet NetworkPolicy: shadowing across the default
 * tier (NetworkPolicy rules behind Calico's lower orders and Cilium's deny rules, Calico's rules
 * behind NetworkPolicy), fixes that fit the engine whose order shadows a rule, deny-only Cilium
 * policies that isolate, and the fix lint gives for policy of an engine Palisade does not evaluate.
 * Each case has a near miss that must not be reported.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lintCluster, objectLocator, type Finding } from '../../src/analysis/lint/index.ts';
import { load, namespace, pod, policy, type Raw } from '../helpers/builders.ts';

function lint(objects: readonly Raw[], code: string, semantics: 'v1' | 'v1beta1-proposal' = 'v1'): Finding[] {
  const loaded = load(objects);
  return [
    ...lintCluster(loaded.cluster, {
      locator: objectLocator(loaded.rawObjects),
      diagnostics: loaded.diagnostics,
      only: [code],
      semantics,
    }).findings,
  ];
}

const web = pod('mix', 'web', { app: 'web' }, { ips: ['10.0.0.1'], ports: [{ containerPort: 80 }] });
const client = pod('mix', 'client', { app: 'client' }, { ips: ['10.0.0.2'] });
const base = [namespace('mix'), web, client];

function calico(name: string, order: number, ingress: Raw[], selector = "app == 'web'"): Raw {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'NetworkPolicy',
    metadata: { name, namespace: 'mix' },
    spec: { order, selector, types: ['Ingress'], ingress },
  };
}

const denyClient80 = {
  action: 'Deny',
  protocol: 'TCP',
  source: { selector: "app == 'client'" },
  destination: { ports: [80] },
};
const allowClient80 = { ...denyClient80, action: 'Allow' };

/** A NetworkPolicy allowing pods app=client to the selected pods on TCP 80. */
function allowFromClient(name: string, podSelector: Raw = { matchLabels: { app: 'web' } }): Raw {
  return policy('mix', name, {
    podSelector,
    ingress: [
      { from: [{ podSelector: { matchLabels: { app: 'client' } } }], ports: [{ protocol: 'TCP', port: 80 }] },
    ],
  });
}

function cilium(name: string, spec: Raw, kind = 'CiliumNetworkPolicy'): Raw {
  return {
    apiVersion: 'cilium.io/v2',
    kind,
    metadata: kind === 'CiliumNetworkPolicy' ? { name, namespace: 'mix' } : { name },
    spec,
  };
}

const fromClient = { fromEndpoints: [{ matchLabels: { app: 'client' } }] };

describe('lint: NetworkPolicy among Calico and Cilium (RULE_SHADOWED)', () => {
  it('a NetworkPolicy rule a Calico deny of a lower order decides for first, with a fix in Calico terms', () => {
    const found = lint(
      [...base, calico('web-early', 500, [denyClient80]), allowFromClient('allow-client')],
      'RULE_SHADOWED',
    );
    assert.equal(found.length, 1);
    assert.equal(found[0]?.object, 'NetworkPolicy mix/allow-client');
    assert.equal(found[0]?.path, 'spec.ingress[0]');
    assert.match(
      found[0]?.message ?? '',
      /calico\/mix\/web-early ingress\[0\] decides everything it matches first/,
    );
    assert.match(found[0]?.hint ?? '', /order above 1000/);
    assert.doesNotMatch(found[0]?.hint ?? '', /priority/);
    assert.equal(found[0]?.related[0]?.object, 'NetworkPolicy.projectcalico.org mix/web-early');
  });

  it('not when the Calico policy comes after (order 1500), covers part of it, or misses a pod it applies to', () => {
    assert.deepEqual(
      lint(
        [...base, calico('web-late', 1500, [denyClient80]), allowFromClient('allow-client')],
        'RULE_SHADOWED',
      ).map((f) => f.object),
      // The later Calico rule is the dead one: the NetworkPolicy allows everything it matches first.
      ['NetworkPolicy.projectcalico.org mix/web-late'],
    );
    const port81 = { ...denyClient80, destination: { ports: [81] } };
    assert.deepEqual(
      lint([...base, calico('web-early', 500, [port81]), allowFromClient('allow-client')], 'RULE_SHADOWED'),
      [],
    );
    const api = pod('mix', 'api', { app: 'api' }, { ips: ['10.0.0.3'] });
    const both = allowFromClient('allow-client', {
      matchExpressions: [{ key: 'app', operator: 'In', values: ['web', 'api'] }],
    });
    assert.deepEqual(
      lint([...base, api, calico('web-early', 500, [denyClient80]), both], 'RULE_SHADOWED'),
      [],
    );
  });

  it('a Calico rule after the NetworkPolicies (order 1500) that their allow decides for first', () => {
    const found = lint(
      [...base, calico('web-late', 1500, [denyClient80]), allowFromClient('allow-client')],
      'RULE_SHADOWED',
    );
    assert.equal(found.length, 1);
    assert.match(
      found[0]?.message ?? '',
      /mix\/allow-client ingress\[0\] decides everything it matches first/,
    );
    assert.match(found[0]?.hint ?? '', /lower order/);
    // A NetworkPolicy that selects the pod but does not match goes on to the later Calico policy.
    const otherPort = policy('mix', 'allow-client', {
      podSelector: { matchLabels: { app: 'web' } },
      ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }], ports: [{ port: 81 }] }],
    });
    assert.deepEqual(
      lint([...base, calico('web-late', 1500, [denyClient80]), otherPort], 'RULE_SHADOWED'),
      [],
    );
  });

  it('a Calico allow of a lower order that already allows it', () => {
    const found = lint(
      [...base, calico('web-early', 500, [allowClient80]), allowFromClient('allow-client')],
      'RULE_SHADOWED',
    );
    assert.equal(found.length, 1);
    assert.match(found[0]?.message ?? '', /already allows everything it matches/);
    assert.match(found[0]?.hint ?? '', /^delete the rule/);
  });

  it("a NetworkPolicy rule a Cilium deny wins over; Cilium's allow rules do not shadow it", () => {
    const deny = cilium('deny-client', {
      endpointSelector: { matchLabels: { app: 'web' } },
      ingressDeny: [fromClient],
    });
    const found = lint([...base, deny, allowFromClient('allow-client')], 'RULE_SHADOWED');
    assert.equal(found.length, 1);
    assert.equal(found[0]?.object, 'NetworkPolicy mix/allow-client');
    assert.match(found[0]?.message ?? '', /deny wins: cilium\/mix\/deny-client ingressDeny\[0\] denies/);
    assert.match(found[0]?.hint ?? '', /narrow or remove the Cilium deny/);
    const allow = cilium('allow-client', {
      endpointSelector: { matchLabels: { app: 'web' } },
      ingress: [fromClient],
    });
    assert.deepEqual(lint([...base, allow, allowFromClient('allow-client')], 'RULE_SHADOWED'), []);
  });

  it('the last egress rule of a NetworkPolicy without policyTypes only when something else isolates its pods', () => {
    const egressCalico = (types: string[]): Raw => ({
      apiVersion: 'projectcalico.org/v3',
      kind: 'NetworkPolicy',
      metadata: { name: 'no-db', namespace: 'mix' },
      spec: {
        order: 500,
        selector: "app == 'client'",
        types,
        egress: [{ action: 'Deny', protocol: 'TCP', destination: { ports: [5432] } }],
      },
    });
    const toDb = policy('mix', 'to-db', {
      podSelector: { matchLabels: { app: 'client' } },
      egress: [{ ports: [{ protocol: 'TCP', port: 5432 }] }],
    });
    // The Calico policy holds the pod for egress as well: deleting the rule changes nothing.
    assert.equal(lint([...base, egressCalico(['Egress']), toDb], 'RULE_SHADOWED').length, 1);
    // A Cilium deny with default deny off holds nothing: the rule is what isolates the pod.
    const ciliumDeny = cilium('no-db', {
      endpointSelector: { matchLabels: { app: 'client' } },
      enableDefaultDeny: { egress: false },
      egressDeny: [{ toPorts: [{ ports: [{ port: '5432', protocol: 'TCP' }] }] }],
    });
    assert.deepEqual(lint([...base, ciliumDeny, toDb], 'RULE_SHADOWED'), []);
    const explicit = policy('mix', 'to-db', { ...(toDb.spec as Raw), policyTypes: ['Egress'] });
    assert.equal(lint([...base, ciliumDeny, explicit], 'RULE_SHADOWED').length, 1);
  });
});

describe("lint under the v1beta1 proposal's semantics", () => {
  it("reports nothing of Calico's and Cilium's default-tier policies, which the evaluator leaves out there", () => {
    const objects = [...base, calico('web-early', 500, [denyClient80]), allowFromClient('allow-client')];
    assert.equal(lint(objects, 'RULE_SHADOWED').length, 1);
    assert.deepEqual(lint(objects, 'RULE_SHADOWED', 'v1beta1-proposal'), []);
    const denyOnly = cilium(
      'block-world',
      { endpointSelector: {}, ingressDeny: [{ fromEntities: ['world'] }] },
      'CiliumClusterwideNetworkPolicy',
    );
    assert.equal(lint([...base, denyOnly], 'DENY_POLICY_ISOLATES').length, 1);
    assert.deepEqual(lint([...base, denyOnly], 'DENY_POLICY_ISOLATES', 'v1beta1-proposal'), []);
  });
});

describe('lint: fixes fit the engine (RULE_SHADOWED, POLICY_KIND_NOT_EVALUATED)', () => {
  it('a Cilium allow a deny wins over: narrow the deny or drop the allow, not priorities or order', () => {
    const found = lint(
      [
        ...base,
        cilium('deny-client', {
          endpointSelector: { matchLabels: { app: 'web' } },
          ingressDeny: [fromClient],
        }),
        cilium('dead', {
          endpointSelector: { matchLabels: { app: 'web' } },
          ingress: [{ ...fromClient, toPorts: [{ ports: [{ port: '80', protocol: 'TCP' }] }] }],
        }),
      ],
      'RULE_SHADOWED',
    );
    assert.equal(found.length, 1);
    assert.match(found[0]?.message ?? '', /cilium\/mix\/dead ingress\[0\] never decides: deny wins/);
    assert.match(found[0]?.hint ?? '', /narrow or remove the Cilium deny rule/);
    assert.doesNotMatch(found[0]?.hint ?? '', /priority|order|move it/);
  });

  it('an AdminNetworkPolicy rule: a lower priority number; a Calico rule: a lower order', () => {
    const anp = (name: string, priority: number, action: string): Raw => ({
      apiVersion: 'policy.networking.k8s.io/v1alpha1',
      kind: 'AdminNetworkPolicy',
      metadata: { name },
      spec: { priority, subject: { namespaces: {} }, ingress: [{ action, from: [{ namespaces: {} }] }] },
    });
    const [admin] = lint([...base, anp('deny', 10, 'Deny'), anp('allow', 20, 'Allow')], 'RULE_SHADOWED');
    assert.match(admin?.hint ?? '', /lower priority number/);
    const [ordered] = lint(
      [...base, calico('deny', 50, [denyClient80]), calico('allow', 200, [allowClient80])],
      'RULE_SHADOWED',
    );
    assert.match(ordered?.hint ?? '', /lower order/);
    assert.doesNotMatch(ordered?.hint ?? '', /priority/);
  });

  it('policy of an engine Palisade does not evaluate: no "correct the input", since nothing is wrong', () => {
    const antrea: Raw = {
      apiVersion: 'crd.antrea.io/v1beta1',
      kind: 'ClusterNetworkPolicy',
      metadata: { name: 'antrea-x' },
      spec: {
        priority: 5,
        appliedTo: [{ podSelector: {} }],
        ingress: [{ action: 'Drop', from: [{ podSelector: {} }] }],
      },
    };
    const [found] = lint([...base, antrea], 'POLICY_KIND_NOT_EVALUATED');
    assert.ok(found);
    assert.doesNotMatch(found.hint, /correct the input/);
    assert.match(found.hint, /own engine's tools/);
  });
});

describe('lint: deny-only Cilium policies (DENY_POLICY_ISOLATES)', () => {
  const denyWorld = (extra: Raw = {}): Raw =>
    cilium(
      'block-world',
      { endpointSelector: {}, ingressDeny: [{ fromEntities: ['world'] }], ...extra },
      'CiliumClusterwideNetworkPolicy',
    );

  it('a policy with only ingressDeny rules puts what it selects in default deny: reported at its ingressDeny', () => {
    const found = lint([...base, denyWorld()], 'DENY_POLICY_ISOLATES');
    assert.equal(found.length, 1);
    assert.equal(found[0]?.severity, 'warning');
    assert.equal(found[0]?.object, 'CiliumClusterwideNetworkPolicy block-world');
    assert.equal(found[0]?.path, 'spec.ingressDeny');
    assert.match(found[0]?.message ?? '', /mix\/client\[Pod\] and mix\/web\[Pod\]/);
    assert.match(found[0]?.hint ?? '', /enableDefaultDeny\.ingress: false/);
  });

  it('not with default deny off, an explicit empty allow rule, an allow-all beside it, or pods isolated otherwise', () => {
    assert.deepEqual(
      lint([...base, denyWorld({ enableDefaultDeny: { ingress: false } })], 'DENY_POLICY_ISOLATES'),
      [],
    );
    assert.deepEqual(lint([...base, denyWorld({ ingress: [{}] })], 'DENY_POLICY_ISOLATES'), []);
    const allowAll = cilium(
      'allow-all',
      { endpointSelector: {}, ingress: [{ fromEntities: ['all'] }] },
      'CiliumClusterwideNetworkPolicy',
    );
    assert.deepEqual(lint([...base, denyWorld(), allowAll], 'DENY_POLICY_ISOLATES'), []);
    // A NetworkPolicy isolates web: only client is left to the deny-only policy.
    const found = lint([...base, denyWorld(), allowFromClient('allow-client')], 'DENY_POLICY_ISOLATES');
    assert.equal(found.length, 1);
    assert.doesNotMatch(found[0]?.message ?? '', /mix\/web\[Pod\]/);
    assert.match(found[0]?.message ?? '', /mix\/client\[Pod\]/);
    // Another deny-only policy does not count as isolating on purpose: each is reported.
    const denyClient = cilium('deny-client', { endpointSelector: {}, ingressDeny: [fromClient] });
    assert.equal(lint([...base, denyWorld(), denyClient], 'DENY_POLICY_ISOLATES').length, 2);
  });
});
