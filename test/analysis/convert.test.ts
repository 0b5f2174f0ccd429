/**
 * `convert --to v1`: the converted objects under v1 semantics give exactly the verdicts the
 * original objects give under the v1beta1 proposal.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { convertToV1, DEFAULT_DENY_POLICY_NAME } from '../../src/analysis/convert.ts';
import { loadFromTexts } from '../../src/ingest/load.ts';
import type { Cluster, Endpoint } from '../../src/model/types.ts';
import { evaluate } from '../../src/semantics/evaluate.ts';
import { indexCluster } from '../../src/semantics/match.ts';
import { clusterArb, SAMPLE_PORTS } from '../helpers/arbitraries.ts';
import { load, namespace, pod, policy, type Raw } from '../helpers/builders.ts';

function convert(objects: readonly Raw[]): {
  cluster: Cluster;
  codes: string[];
  converted: readonly unknown[];
} {
  const legacy = load(objects, 'v1beta1-proposal');
  const { objects: converted, notes } = convertToV1(legacy.rawObjects, legacy.cluster);
  const text = converted.map((o) => JSON.stringify(o)).join('\n---\n');
  const reloaded = loadFromTexts([{ name: 'converted.yaml', text }], 'v1');
  assert.deepEqual(
    reloaded.diagnostics.filter((d) => d.severity === 'error'),
    [],
  );
  assert.ok(
    !reloaded.diagnostics.some((d) => d.code === 'LEGACY_ANNOTATION_IGNORED'),
    'no annotation survives',
  );
  return { cluster: reloaded.cluster, codes: notes.map((n) => n.code), converted };
}

describe('convert --to v1', () => {
  it('turns DefaultDeny into a policy, drops inert policies and empty-list rules', () => {
    const { cluster, codes } = convert([
      namespace(
        'iso',
        {},
        { 'net.beta.kubernetes.io/network-policy': '{"ingress":{"isolation":"DefaultDeny"}}', keep: 'me' },
      ),
      namespace('open'),
      policy(
        'iso',
        'p',
        { podSelector: {}, ingress: [{ from: [] }, { ports: [{ port: 80 }] }] },
        'extensions/v1beta1',
      ),
      policy('open', 'inert', { podSelector: {} }, 'extensions/v1beta1'),
    ]);
    assert.deepEqual(
      cluster.policies.map((p) => `${p.namespace}/${p.name}`),
      [`iso/${DEFAULT_DENY_POLICY_NAME}`, 'iso/p'],
    );
    assert.ok(
      cluster.policies.every(
        (p) => p.apiVersion === 'networking.k8s.io/v1' && p.affectsIngress && !p.affectsEgress,
      ),
    );
    assert.equal(cluster.policies[1]?.ingress.length, 1);
    assert.deepEqual(codes.sort(), [
      'CONVERT_DEFAULT_DENY',
      'CONVERT_POLICY_DROPPED',
      'CONVERT_RULE_DROPPED',
    ]);
  });

  it('passes other objects through unchanged', () => {
    const p = pod('a', 'x', { app: 'x' }, { ips: ['10.0.0.1'] });
    const { converted } = convert([
      p,
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 's', namespace: 'a' } },
    ]);
    assert.deepEqual(converted[0], p);
  });

  it('gives the same verdicts under v1 as the original under the proposal (random clusters)', () => {
    fc.assert(
      fc.property(clusterArb({ legacyAnnotations: true }), (objects) => {
        const legacy = load(objects, 'v1beta1-proposal').cluster;
        const { cluster: converted } = convert(objects);
        const before = indexCluster(legacy);
        const after = indexCluster(converted);
        const byId = new Map(converted.endpoints.map((e) => [e.id, e] as const));
        for (const a of legacy.endpoints) {
          for (const b of legacy.endpoints) {
            for (const [port, protocol] of SAMPLE_PORTS) {
              const old = evaluate(
                before,
                { src: ep(a), dst: ep(b), protocol, port },
                { semantics: 'v1beta1-proposal' },
              ).allowed;
              const now = evaluate(after, {
                src: ep(byId.get(a.id)),
                dst: ep(byId.get(b.id)),
                protocol,
                port,
              }).allowed;
              assert.equal(now, old, `${a.id} → ${b.id} ${protocol}/${port}`);
            }
          }
        }
      }),
      { numRuns: 150 },
    );
  });
});

function ep(endpoint: Endpoint | undefined): { kind: 'endpoint'; endpoint: Endpoint } {
  assert.ok(endpoint);
  return { kind: 'endpoint', endpoint };
}
