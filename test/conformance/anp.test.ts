/**
 * The network-policy-api conformance suite (AdminNetworkPolicy, BaselineAdminNetworkPolicy;
 * ../shared/conformance/anp-v1alpha1, vendored in test/fixtures/conformance so it runs wherever
 * the tests run): every check of every case holds in the reference evaluator and the compiled
 * classifier — as written, and with every policy rewritten as a ClusterNetworkPolicy (v1alpha2)
 * by `convert --to v1alpha2`, which must not change any answer — and on the VPP ACL and VPPTCP
 * renderings, for the checks those datapaths police.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { toClusterNetworkPolicy } from '../../src/analysis/convert-cluster-policy.ts';
import { loadFromTexts } from '../../src/ingest/load.ts';
import { readSuite, runCase, type CheckResult, type Rewrite } from '../helpers/policy-conformance.ts';

const DIR = join(import.meta.dirname, '../fixtures/conformance/anp-v1alpha1');
const available = existsSync(join(DIR, 'MODEL.yaml'));
const SHARED = join(import.meta.dirname, '../../../shared/conformance/anp-v1alpha1');
const UPSTREAM_CHECKS = 289;

/** ANP/BANP → ClusterNetworkPolicy; other objects unchanged. */
const asClusterNetworkPolicies: Rewrite = {
  objects: (objects) =>
    objects.map((object) => {
      if (object.kind !== 'AdminNetworkPolicy' && object.kind !== 'BaselineAdminNetworkPolicy') return object;
      const loaded = loadFromTexts([{ name: 'case.yaml', text: JSON.stringify(object) }], 'v1');
      const policy = loaded.cluster.clusterPolicies[0];
      if (!policy) throw new Error(`could not decode ${String(object.kind)}`);
      const converted = toClusterNetworkPolicy(policy);
      if (!converted.ok) throw new Error(converted.reason);
      return converted.object;
    }),
  deleteRef: (ref) =>
    ref.replace(/^(AdminNetworkPolicy|BaselineAdminNetworkPolicy)\//, 'ClusterNetworkPolicy/'),
};

function failures(results: readonly CheckResult[]): string[] {
  return results
    .filter((r) => (r.check.expect === 'allow') !== r.allowed)
    .map(
      (r) =>
        `${r.case} "${r.subtest}": ${r.check.from} → ${r.check.to} ${r.check.protocol}/${r.check.port} expected ${r.check.expect}, got ${r.allowed ? 'allow' : 'deny'} (${r.why})`,
    );
}

describe(
  'AdminNetworkPolicy conformance (network-policy-api v0.1.8)',
  { skip: available ? false : 'suite not found beside the project' },
  () => {
    const { model, cases } = available ? readSuite(DIR) : { model: undefined, cases: [] };

    it('is the same data as the shared copy, when that is beside the project', (t) => {
      if (!existsSync(SHARED)) return t.skip('no ../shared/conformance beside the project');
      for (const file of readdirSync(SHARED))
        assert.equal(readFileSync(join(DIR, file), 'utf8'), readFileSync(join(SHARED, file), 'utf8'), file);
    });

    it('passes every check as written', () => {
      assert.equal(cases.length, 24);
      const results = cases.flatMap((kase) => runCase(model as never, kase));
      assert.equal(results.length, UPSTREAM_CHECKS);
      assert.deepEqual(failures(results), []);
      assert.equal(results.filter((r) => r.check.expect === 'deny').length, 129);
    });

    it('passes every check on the compiled classifier (ordered tier tables)', () => {
      const results = cases.flatMap((kase) => runCase(model as never, kase, undefined, 'compiled'));
      assert.equal(results.length, UPSTREAM_CHECKS);
      assert.deepEqual(failures(results), []);
    });

    for (const engine of ['vpp-acl', 'vpptcp'] as const)
      it(`passes every check it can police on the ${engine} rendering (tiers flattened)`, () => {
        const results = cases.flatMap((kase) => runCase(model as never, kase, undefined, engine));
        // Left out: pod ↔ own-node checks (VPP does not police them), and SCTP for VPPTCP.
        assert.equal(results.length, engine === 'vpp-acl' ? 281 : 197);
        // VPP ACL rules cannot match SCTP ports: such traffic is denied, never allowed wrongly.
        const sctpPorts = / SCTP\/\d+ expected allow, got deny /;
        assert.deepEqual(
          failures(results).filter((f) => engine !== 'vpp-acl' || !sctpPorts.test(f)),
          [],
        );
      });

    it('passes every check on the eBPF maps (read as the program reads them; pod ↔ own node too)', () => {
      const results = cases.flatMap((kase) => runCase(model as never, kase, undefined, 'ebpf'));
      assert.equal(results.length, UPSTREAM_CHECKS);
      assert.deepEqual(failures(results), []);
    });

    it('passes every check with the policies rewritten as ClusterNetworkPolicy', () => {
      const results = cases.flatMap((kase) => runCase(model as never, kase, asClusterNetworkPolicies));
      assert.equal(results.length, UPSTREAM_CHECKS);
      assert.deepEqual(failures(results), []);
    });
  },
);
