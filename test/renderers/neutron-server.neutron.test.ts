/**
 * Kuryr's controller against a real Neutron (Debian's neutron-server on loopback): random
 * clusters, one after another through the same controller, so every step after the first is an
 * incremental change. After each, everything Neutron holds — groups, rules, ports with the
 * addresses Neutron gave them — is read back through the API, judged by the Neutron interpreter,
 * and compared with the reference evaluator on every pod pair and port; a second realization of
 * the same cluster writes nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { ClusterState } from '../../src/state/index.ts';
import {
  createPodNetwork,
  NeutronClient,
  neutronUnavailable,
  readNeutronRendering,
  startNeutron,
  type NeutronNodeDatapath,
  type NeutronServer,
} from '../../src/datapaths/neutron/index.ts';
import { openNodeDatapath } from '../../src/datapaths/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { clusterOf } from '../helpers/builders.ts';
import { assertAgreesWithReference } from '../helpers/compiled.ts';
import { targetNamed } from '../helpers/renderer-verdicts.ts';
import type { Cluster } from '../../src/model/types.ts';

const RUNS = Math.max(4, Math.floor(Number(process.env.PALISADE_PROPERTY_RUNS ?? 150) / 10));
const skip =
  neutronUnavailable() ??
  (process.getuid?.() !== 0 ? 'the local Neutron tests run as root (as CI does)' : undefined);
/** Every address the random clusters use (test/helpers/arbitraries.ts). */
const POD_CIDRS = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fd00::/16', '2001:db8::/32'];

/** What Neutron holds, judged by the Neutron interpreter. */
export async function neutronHoldsVerdicts(client: NeutronClient, cluster: Cluster) {
  const held = await readNeutronRendering(client);
  return targetNamed('neutron').interpreter!.verdicts([{ output: held }], cluster);
}

describe('Neutron controller against a real neutron-server', { skip }, () => {
  let server: NeutronServer;
  let client: NeutronClient;
  let network: string;

  before(async () => {
    server = await startNeutron();
    client = new NeutronClient({ url: server.url, project: 'palisade-random' });
    network = await createPodNetwork(client, 'pods', POD_CIDRS);
  });
  after(async () => {
    await server?.stop();
  });

  it('holds what the reference evaluator allows after each of a series of random clusters, and rewrites nothing unchanged', async () => {
    const state = new ClusterState();
    const datapath = (await openNodeDatapath('neutron', {
      node: 'controller',
      state,
      neutron: { url: server.url, project: client.project, network },
    })) as NeutronNodeDatapath;
    await datapath.prepare();
    let step = 0;
    const outcome = await fc.check(
      fc.asyncProperty(clusterArb({ maxPods: 6, maxPolicies: 4 }), async (objects) => {
        const cluster = clusterOf(objects);
        state.resync(cluster);
        await datapath.realize(step++ === 0).catch((error: unknown) => {
          throw new Error(`step ${step}: ${String(error)}`);
        });
        assertAgreesWithReference(cluster, await neutronHoldsVerdicts(client, cluster), `step ${step}: `);
        const before = datapath.calls().writes;
        await datapath.realize(false);
        assert.equal(datapath.calls().writes, before, 'the same cluster again: no write');
        assert.deepEqual(await datapath.verify(), [], 'Neutron holds what was realized');
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
    // The failure itself (Neutron's answer, the packet that differs), not only the counterexample.
    if (outcome.failed) throw outcome.errorInstance;
    assert.match(await datapath.cleanup(), /^deleted \d+ security groups and \d+ ports/);
    const left = await readNeutronRendering(client);
    assert.deepEqual(
      left.security_groups.filter((g) => g.description.includes('palisade-sg=')),
      [],
      'cleanup leaves no group of Palisade',
    );
    assert.deepEqual(left.ports, []);
  });
});
