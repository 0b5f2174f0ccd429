/**
 * `explain` finds each rule's peers through the endpoint index, once per rule; on random
 * clusters (cluster policies, ipBlocks, host-network pods, dual-stack) every rule's list equals
 * asking the evaluator's own matching functions endpoint by endpoint, in the cluster's order.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { explainEndpoints } from '../../src/analysis/explain.ts';
import { cidrContains } from '../../src/net/ip.ts';
import { clusterPolicyLabel } from '../../src/model/cluster-policy.ts';
import { policyKey, type Endpoint } from '../../src/model/types.ts';
import { clusterPeerMatches, indexCluster, peerMatches } from '../../src/semantics/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { clusterOf } from '../helpers/builders.ts';
import { propertyRuns } from '../helpers/property-runs.ts';

describe('explain', () => {
  it('lists the endpoints each rule matches as a scan with the evaluator would', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 7, maxPolicies: 4, maxClusterPolicies: 3 }), (objects) => {
        const cluster = clusterOf(objects);
        const index = indexCluster(cluster);
        const explained = explainEndpoints(cluster, cluster.endpoints);
        const scan = (test: (e: Endpoint) => boolean): string[] =>
          cluster.endpoints.filter(test).map((e) => e.id);
        explained.forEach((explanation, i) => {
          const subject = cluster.endpoints[i] as Endpoint;
          for (const direction of ['ingress', 'egress'] as const) {
            for (const rule of explanation[direction].rules) {
              const policy = cluster.policies.find((p) => policyKey(p) === rule.policy);
              const source = policy?.[direction].find((r) => r.index === rule.rule);
              assert.ok(policy && source);
              const peers = source.peers;
              const expected =
                peers === undefined || peers.length === 0
                  ? scan(() => true)
                  : scan((e) =>
                      peers.some((peer) =>
                        peer.type === 'ipBlock'
                          ? e.ips.some(
                              (ip) =>
                                cidrContains(peer.cidr, ip) && !peer.except.some((x) => cidrContains(x, ip)),
                            )
                          : peerMatches(
                              index,
                              peer,
                              policy.namespace,
                              { kind: 'endpoint', endpoint: e },
                              undefined,
                            ),
                      ),
                    );
              assert.deepEqual(
                rule.peers.toJSON(),
                expected,
                `${subject.id} ${direction} ${rule.policy}[${rule.rule}]`,
              );
              assert.equal(rule.peers.length, expected.length);
              assert.deepEqual(rule.peers.first(3), expected.slice(0, 3));
            }
            for (const tier of explanation[direction].tiers) {
              const policy = cluster.clusterPolicies.find((p) => clusterPolicyLabel(p) === tier.policy);
              const source = policy?.[direction].find((r) => r.index === tier.rule);
              assert.ok(source);
              const expected = scan((e) =>
                source.peers.some((peer) =>
                  clusterPeerMatches(
                    index,
                    peer,
                    subject,
                    { kind: 'endpoint', endpoint: e },
                    e.ips[0]?.family,
                  ),
                ),
              );
              assert.deepEqual(
                tier.peers.toJSON(),
                expected,
                `${subject.id} ${direction} ${tier.policy}[${tier.rule}]`,
              );
            }
          }
        });
      }),
      { numRuns: propertyRuns(150) },
    );
  });
});
