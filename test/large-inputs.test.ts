/**
 * Inputs past the number of arguments one call can take (~125,000): every path that gathers
 * lists must append element by element. A spread into `push` (or `Math.max`) of such a list
 * overflows the stack — `compile -f` of shape (a) ×2 (200,000 pods) died that way.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadFromTexts } from '../src/ingest/load.ts';
import type { Cluster, Endpoint } from '../src/model/types.ts';
import { ClusterState } from '../src/state/index.ts';
import { clusterOf, namespace, policy } from './helpers/builders.ts';

const COUNT = 130_000;

describe('inputs of more than 125,000 objects', () => {
  it('one file holding a List of 130,000 Namespaces loads whole', () => {
    const items = Array.from({ length: COUNT }, (_, i) => namespace(`ns-${i}`));
    const text = JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
    const { cluster, diagnostics } = loadFromTexts([{ name: 'namespaces.json', text }]);
    assert.equal(cluster.namespaces.size, COUNT);
    assert.deepEqual(diagnostics, []);
  });

  it('the store lists the 130,000 pods of one label set that a policy selects', () => {
    const small = clusterOf([namespace('big'), policy('big', 'all', { podSelector: {}, ingress: [{}] })]);
    const endpoints: Endpoint[] = Array.from({ length: COUNT }, (_, i) => ({
      id: `big/p-${i}`,
      kind: 'Pod',
      namespace: 'big',
      name: `p-${i}`,
      labels: { app: 'same' },
      ips: [{ family: 4, value: BigInt(0x0a000000 + i) }],
      ports: [],
      hostNetwork: false,
    }));
    const cluster: Cluster = { ...small, endpoints };
    const state = new ClusterState();
    state.resync(cluster);
    const selected = state.podsSelectedBy(cluster.policies[0] as Cluster['policies'][number]);
    assert.equal(selected.length, COUNT);
  });
});
