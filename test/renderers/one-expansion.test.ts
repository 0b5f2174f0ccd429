/**
 * Two expansions of policy are kept, and docs/ARCHITECTURE.md ("One compiled representation, and
 * the two places that expand policy themselves") says why: the configurator's per-pod tables
 * (which the VPP renderers and nftables consume) and the classifier's rule slots (peers and
 * ports kept apart, one bit per rule; the eBPF datapath's maps) and Neutron's per-policy groups.
 * This test holds them to each other directly, packet by packet on random clusters, rather than
 * only each to the reference: a difference between two compiled forms is named as such.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Cluster } from '../../src/model/types.ts';
import { clusterArb, SAMPLE_PORTS } from '../helpers/arbitraries.ts';
import { clusterOf } from '../helpers/builders.ts';
import { podAndOwnNode, probeAddresses } from '../helpers/compiled.ts';
import { propertyRuns } from '../helpers/property-runs.ts';
import { verdictsFor } from '../helpers/renderer-verdicts.ts';

// 100: fewer runs missed a classifier that ignored ipBlock excepts (checked).
const RUNS = propertyRuns(100);

/**
 * The first packet on which `other` and the configurator's tables (through the VPP ACL target)
 * disagree, or undefined. SCTP is left out (VPP ACLs cannot match SCTP ports), and so is traffic
 * between a pod and its own node (VPP never polices it; the reference and the classifier do).
 */
function firstDifference(cluster: Cluster, other: string): string | undefined {
  const tables = verdictsFor('vpp-acl', cluster);
  const expanded = verdictsFor(other, cluster);
  const ownNode = podAndOwnNode(cluster);
  const addresses = probeAddresses(cluster);
  for (const src of addresses)
    for (const dst of addresses) {
      if (src.ip.family !== dst.ip.family || ownNode(src.ip, dst.ip)) continue;
      for (const [port, protocol] of SAMPLE_PORTS) {
        if (protocol === 'SCTP') continue;
        const packet = { src: src.ip, dst: dst.ip, protocol, port };
        const fromTables = tables(packet);
        if (expanded(packet) !== fromTables)
          return `${src.label} → ${dst.label} ${protocol}/${port}: tables say ${fromTables ? 'allow' : 'deny'}, ${other} says the opposite`;
      }
    }
  return undefined;
}

describe("the classifier's and Neutron's expansions equal the configurator's tables", () => {
  it('classifier slots ≡ tables, NetworkPolicy and ordered cluster policy (random clusters)', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 6, maxPolicies: 4, maxClusterPolicies: 2 }), (objects) => {
        const difference = firstDifference(clusterOf(objects), 'bitmap');
        assert.equal(difference, undefined, difference);
      }),
      { numRuns: RUNS },
    );
  });

  it('Neutron security groups ≡ tables, NetworkPolicy (random clusters; Neutron has no ordered policy)', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 6, maxPolicies: 4 }), (objects) => {
        const difference = firstDifference(clusterOf(objects), 'neutron');
        assert.equal(difference, undefined, difference);
      }),
      { numRuns: RUNS },
    );
  });
});
