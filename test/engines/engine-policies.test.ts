/**
 * The benchmark's policies (src/generate/engine-policies.ts) say the same thing in each engine's
 * language, so that comparing what reading them costs compares like with like: Calico's give every
 * pod pair the NetworkPolicies' answer; Cilium's too, except where only an address block allowed a
 * pod — Cilium's CIDR rules never select endpoints it manages ("CIDR rules do not apply to traffic
 * where both sides of the connection are either managed by Cilium or use an IP belonging to a node
 * in the cluster", docs.cilium.io, policy/language, "IP/CIDR based").
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { computeViewMatrix } from '../../src/analysis/index.ts';
import { generateEnginePolicies, generateShape, POLICY_ENGINES } from '../../src/generate/index.ts';
import { loadFromTexts } from '../../src/ingest/load.ts';
import type { Matrix } from '../../src/analysis/types.ts';

const QUERIES = [
  { port: 8080, protocol: 'TCP' },
  { port: 9050, protocol: 'TCP' },
  { port: 80, protocol: 'TCP' },
  { port: 53, protocol: 'UDP' },
  { port: 443, protocol: 'TCP' },
] as const;
const HTTPS = 4;

describe('the engines benchmark policies', () => {
  const shape = generateShape('a', { scale: 0.002, seed: 3 });
  const matrices = new Map<string, Matrix>();
  for (const engine of POLICY_ENGINES) {
    const policies = generateEnginePolicies(engine, 90, shape.namespaces.length, 3);
    const text = [...shape.namespaces, ...shape.pods, ...policies]
      .map((o) => JSON.stringify(o))
      .join('\n---\n');
    const loaded = loadFromTexts([{ name: `${engine}.yaml`, text }]);
    it(`reads the ${engine} policies without a warning`, () => {
      assert.deepEqual(
        loaded.diagnostics.filter((d) => d.severity !== 'info').map((d) => d.message),
        [],
      );
      const read = engine === 'networkpolicy' ? loaded.cluster.policies : loaded.cluster.clusterPolicies;
      assert.equal(read.length, 90);
    });
    matrices.set(engine, computeViewMatrix(loaded.cluster, { by: 'pod', queries: [...QUERIES] }));
  }
  const np = matrices.get('networkpolicy') as Matrix;
  const pairs = np.endpoints.length;
  const answers = (m: Matrix) => {
    const out: boolean[] = [];
    for (let a = 0; a < pairs; a++)
      for (let b = 0; b < pairs; b++) for (let q = 0; q < QUERIES.length; q++) out.push(m.allowed(a, b, q));
    return out;
  };
  const expected = answers(np);

  it('isolates some pods and allows some connections (the comparison says something)', () => {
    const allowed = expected.filter(Boolean).length;
    assert.ok(allowed > 0 && allowed < expected.length, `${allowed} of ${expected.length}`);
  });
  it("gives Calico's policies the NetworkPolicies' answer for every pod pair and port", () => {
    assert.deepEqual(answers(matrices.get('calico') as Matrix), expected);
  });
  it("gives Cilium's the same answer but where only an address block allowed a pod", () => {
    const cilium = answers(matrices.get('cilium') as Matrix);
    let onlyByBlock = 0;
    cilium.forEach((allowed, i) => {
      if (allowed === expected[i]) return;
      // Only egress to 10.0.0.0/8 on 443 (the pods' addresses) differs, and only as a denial.
      assert.equal(i % QUERIES.length, HTTPS, `pair ${Math.floor(i / QUERIES.length)}`);
      assert.equal(allowed, false);
      onlyByBlock++;
    });
    assert.ok(onlyByBlock > 0, 'the pods are in 10.0.0.0/8: some are allowed only by the block');
  });
});
