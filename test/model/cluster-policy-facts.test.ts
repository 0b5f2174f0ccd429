/**
 * What a cluster policy's rules depend on (model/cluster-policy-facts.ts): the facts the
 * configurator picks a side's path and memo keys by. A wrong fact compiles a side into a table it does not fit, or
 * shares one pod's expansion with a pod it differs from.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClusterPeer, ClusterPolicy, ClusterPort, ClusterRule } from '../../src/model/cluster-policy.ts';
import type { LabelSelector } from '../../src/model/types.ts';
import { makeCidr } from '../../src/net/ip.ts';
import { makeSelector } from '../../src/model/selector.ts';
import { READS_CALICO_ACCOUNT, READS_CILIUM_ACCOUNT } from '../../src/model/identity-labels.ts';
import { policyFacts, readRuleFacts, shareFacts } from '../../src/model/cluster-policy-facts.ts';

const EVERYTHING = makeSelector({}, []);
const block = makeCidr(4, 0x0a000000n, 8);
const pods = (relative = false): ClusterPeer => ({
  type: 'pods',
  namespaces: relative ? { sameLabels: ['team'] } : { selector: EVERYTHING },
});

function rule(action: ClusterRule['action'], peers: ClusterPeer[], ports?: ClusterPort[]): ClusterRule {
  return { index: 0, action, peers, ...(ports ? { ports } : {}) };
}

function policy(ingress: ClusterRule[], egress: ClusterRule[] = []): ClusterPolicy {
  return {
    kind: 'CiliumNetworkPolicy',
    apiVersion: 'cilium.io/v2',
    name: 'p',
    namespace: 'shop',
    tier: 'default',
    priority: 0,
    subject: { namespaceSelector: EVERYTHING },
    ingress,
    egress,
  };
}

describe("a cluster rule's dependencies", () => {
  it('say what its expansion depends on besides the rule', () => {
    assert.deepEqual(readRuleFacts(rule('allow', [pods()])), {
      relative: false,
      named: false,
      nodes: false,
      own: false,
      onlyNamed: false,
      pure: true,
      // Nothing of the compile or the store kept yet (their memos are held with the facts).
      expansion: undefined,
      peerGroups: undefined,
    });
    const named = readRuleFacts(rule('allow', [pods()], [{ type: 'named', name: 'http' }]));
    assert.equal(named.onlyNamed, true);
    const relative = readRuleFacts(rule('allow', [pods(true)], [{ type: 'named', name: 'http' }]));
    assert.deepEqual([relative.relative, relative.pure, relative.onlyNamed], [true, false, false]);
    const host = readRuleFacts(rule('allow', [{ type: 'nodes', selector: EVERYTHING, only: 'own' }]));
    assert.deepEqual([host.nodes, host.own, host.pure], [true, true, false]);
    const outside = readRuleFacts(rule('allow', [{ type: 'outside', cidrs: [block] }]));
    assert.deepEqual([outside.nodes, outside.own, outside.pure], [true, false, false]);
  });

  it('are read once per policy object, by the rule’s place in its list', () => {
    const allow = rule('allow', [pods()]);
    const deny = rule('deny', [{ type: 'outside', cidrs: [block] }]);
    // Cilium's deny rules come first: the allow rule after them sits past its own index.
    const held = policy([deny, allow]);
    const facts = policyFacts(held);
    assert.equal(policyFacts(held), facts);
    assert.deepEqual(
      facts.rules.ingress.map((f) => [f.pure, f.nodes]),
      [
        [false, true],
        [true, false],
      ],
    );
    // Another policy with the same rule objects reads its own (its memos are its own).
    assert.notEqual(policyFacts(policy([allow])).rules.ingress[0], facts.rules.ingress[1]);
  });

  it('are shared with a copy given them (a Calico policy stamped with its Tier)', () => {
    const original = policy([rule('allow', [pods()])]);
    const stamped = {
      ...original,
      tierSpec: { name: 'security', order: 100, defaultAction: 'deny' as const },
    };
    shareFacts(original, stamped);
    assert.equal(policyFacts(stamped), policyFacts(original));
  });
});

describe("a cluster policy's facts", () => {
  it('hold a direction to permits only while every rule there allows a peer a table holds', () => {
    const allows = policyFacts(
      policy([rule('allow', [pods()]), rule('allow', [{ type: 'outside', cidrs: [block] }])]),
    );
    assert.deepEqual(allows.permits, { ingress: true, egress: true });
    assert.deepEqual(allows.outside, { ingress: true, egress: false });
    assert.deepEqual([allows.nodes, allows.relative, allows.subjectNode], [true, false, false]);
    const denies = policyFacts(policy([rule('allow', [pods()])], [rule('deny', [pods()])]));
    assert.deepEqual(denies.permits, { ingress: true, egress: false });
    const names = policyFacts(policy([], [rule('allow', [{ type: 'domainNames', names: ['example.com'] }])]));
    assert.deepEqual(names.permits, { ingress: true, egress: false });
  });

  it('gather their rules’ dependencies per direction and across both', () => {
    const facts = policyFacts(
      policy(
        [rule('allow', [pods()], [{ type: 'named', name: 'http' }])],
        [
          rule('allow', [pods(true)]),
          rule('allow', [{ type: 'nodes', selector: EVERYTHING, only: 'others' }]),
        ],
      ),
    );
    assert.deepEqual(facts.named, { ingress: true, egress: false });
    assert.deepEqual([facts.relative, facts.nodes, facts.subjectNode], [true, true, true]);
  });

  it('say which engines’ service-account labels their selectors read, subjects and peers alike', () => {
    const reads = (selector: LabelSelector): ClusterPeer => ({
      type: 'pods',
      namespaces: { selector: EVERYTHING },
      podSelector: selector,
    });
    const cilium = makeSelector({ 'io.cilium.k8s.policy.serviceaccount': 'api' }, []);
    const calico = makeSelector({ 'pcsa.team': 'shop' }, []);
    assert.equal(policyFacts(policy([rule('allow', [pods()])])).identityLabels, 0);
    // A deny rule's peer (Cilium's deny lists are in the direction's list).
    const deny = policyFacts(policy([], [rule('deny', [reads(cilium)]), rule('allow', [pods()])]));
    assert.equal(deny.identityLabels, READS_CILIUM_ACCOUNT);
    // A further subject (a Calico selector with `||`).
    const more = policyFacts({
      ...policy([]),
      moreSubjects: [{ namespaceSelector: EVERYTHING, podSelector: calico }],
    });
    assert.equal(more.identityLabels, READS_CALICO_ACCOUNT);
    const both = policyFacts({
      ...policy([rule('allow', [reads(cilium)])]),
      subject: { namespaceSelector: EVERYTHING, podSelector: calico },
    });
    assert.equal(both.identityLabels, READS_CALICO_ACCOUNT | READS_CILIUM_ACCOUNT);
  });
});
