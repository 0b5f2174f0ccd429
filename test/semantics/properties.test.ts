/**
 * Property tests over random clusters: invariants of the evaluator, and agreement between the
 * evaluator, the port-set computation and the class-based matrix.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { computeMatrix } from '../../src/analysis/matrix.ts';
import type { Cluster, Semantics } from '../../src/model/types.ts';
import { allowedPorts } from '../../src/semantics/allowed-ports.ts';
import { evaluate, isAllowed } from '../../src/semantics/evaluate.ts';
import { indexCluster, selectingPolicies } from '../../src/semantics/match.ts';
import { portSetHas } from '../../src/model/port-set.ts';
import type { Address } from '../../src/semantics/types.ts';
import { parseIp } from '../../src/net/ip.ts';
import { clusterArb, EXTERNAL_IPS, ruleArb, SAMPLE_PORTS } from '../helpers/arbitraries.ts';
import { clusterOf, type Raw } from '../helpers/builders.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

function addresses(cluster: Cluster): Address[] {
  const external = EXTERNAL_IPS.map((text) => {
    const ip = parseIp(text);
    if (!ip.ok) throw new Error(text);
    return { kind: 'ip' as const, ip: ip.value };
  });
  return [...cluster.endpoints.map((endpoint) => ({ kind: 'endpoint' as const, endpoint })), ...external];
}

/** Every (src, dst, protocol, port) verdict of a cluster, as a set of strings of allowed ones. */
function allowedSet(cluster: Cluster, semantics: Semantics = 'v1'): Set<string> {
  const index = indexCluster(cluster);
  const result = new Set<string>();
  const all = addresses(cluster);
  for (const src of all) {
    for (const dst of all) {
      for (const [port, protocol] of SAMPLE_PORTS) {
        if (evaluate(index, { src, dst, protocol, port }, { semantics }).allowed)
          result.add(`${label(src)}>${label(dst)}:${protocol}/${port}`);
      }
    }
  }
  return result;
}

const label = (a: Address): string =>
  a.kind === 'endpoint' ? a.endpoint.id : `${a.ip.family}:${a.ip.value}`;

describe('evaluator invariants', () => {
  it('a pod selected by no ingress policy accepts traffic from everywhere', () => {
    fc.assert(
      fc.property(clusterArb(), (objects) => {
        const cluster = clusterOf(objects);
        const index = indexCluster(cluster);
        for (const dst of cluster.endpoints) {
          if (selectingPolicies(index, dst, 'ingress', 'v1').length > 0) continue;
          for (const src of addresses(cluster)) {
            const v = evaluate(index, {
              src,
              dst: { kind: 'endpoint', endpoint: dst },
              protocol: 'TCP',
              port: 80,
            });
            assert.ok(v.ingress.allowed, `${label(src)} → ${dst.id}`);
          }
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('adding an ingress rule never removes a connection', () => {
    fc.assert(
      fc.property(clusterArb(), ruleArb('from'), fc.nat(), (objects, rule, pick) => {
        const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
        fc.pre(policies.length > 0);
        const target = policies[pick % policies.length] as Raw & { spec: { ingress?: unknown[] } };
        const before = allowedSet(clusterOf(objects));
        const changed = objects.map((o) =>
          o === target
            ? { ...target, spec: { ...target.spec, ingress: [...(target.spec.ingress ?? []), rule] } }
            : o,
        );
        const after = allowedSet(clusterOf(changed));
        for (const connection of before) assert.ok(after.has(connection), `lost ${connection}`);
      }),
      { numRuns: Math.ceil(RUNS / 3) },
    );
  });

  it('allowed port sets agree with single-port verdicts, in both semantics, with tiered cluster policies', () => {
    fc.assert(
      fc.property(
        clusterArb({ legacyAnnotations: true, maxClusterPolicies: 3 }),
        fc.constantFrom<Semantics>('v1', 'v1beta1-proposal'),
        (objects, semantics) => {
          const cluster = clusterOf(objects, semantics);
          const index = indexCluster(cluster);
          const all = addresses(cluster);
          for (const src of all) {
            for (const dst of all) {
              const ports = allowedPorts(index, src, dst, { semantics });
              for (const [port, protocol] of SAMPLE_PORTS) {
                const single = evaluate(index, { src, dst, protocol, port }, { semantics }).allowed;
                assert.equal(
                  portSetHas(ports, protocol, port),
                  single,
                  `${label(src)} → ${label(dst)} ${protocol}/${port}`,
                );
              }
            }
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('the verdict without explanation (isAllowed) is the explained verdict, in both semantics, with tiers', () => {
    fc.assert(
      fc.property(
        clusterArb({ legacyAnnotations: true, maxClusterPolicies: 3 }),
        fc.constantFrom<Semantics>('v1', 'v1beta1-proposal'),
        (objects, semantics) => {
          const cluster = clusterOf(objects, semantics);
          const index = indexCluster(cluster);
          const all = addresses(cluster);
          for (const src of all)
            for (const dst of all)
              for (const [port, protocol] of SAMPLE_PORTS) {
                const connection = { src, dst, protocol, port };
                assert.equal(
                  isAllowed(index, connection, { semantics }),
                  evaluate(index, connection, { semantics }).allowed,
                  `${label(src)} → ${label(dst)} ${protocol}/${port}`,
                );
              }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('a verdict is allowed exactly when both sides are, and an isolated side only by a matching rule', () => {
    fc.assert(
      fc.property(clusterArb(), (objects) => {
        const cluster = clusterOf(objects);
        const index = indexCluster(cluster);
        for (const src of addresses(cluster)) {
          for (const dst of addresses(cluster)) {
            const v = evaluate(index, { src, dst, protocol: 'TCP', port: 80 });
            for (const side of [v.egress, v.ingress]) {
              if (side.isolated) assert.equal(side.allowed, side.matches.length > 0);
              else assert.ok(side.allowed);
            }
            if (v.otherFamilies.length === 0 && v.notes.length === 0)
              assert.equal(v.allowed, v.egress.allowed && v.ingress.allowed);
          }
        }
      }),
      { numRuns: RUNS },
    );
  });
});

describe('matrix by equivalence classes', () => {
  it('equals evaluating every pair one by one, per port and as port sets (tiered policies too)', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 10, maxClusterPolicies: 3 }), (objects) => {
        const cluster = clusterOf(objects);
        const index = indexCluster(cluster);
        const queries = SAMPLE_PORTS.map(([port, protocol]) => ({ port, protocol }));
        const perPort = computeMatrix(cluster, { queries: [...queries, { port: 'http', protocol: 'TCP' }] });
        const sets = computeMatrix(cluster, { queries: [] });
        const eps = cluster.endpoints;
        eps.forEach((a, i) =>
          eps.forEach((b, j) => {
            const src: Address = { kind: 'endpoint', endpoint: a };
            const dst: Address = { kind: 'endpoint', endpoint: b };
            queries.forEach(({ port, protocol }, q) => {
              const expected = evaluate(index, { src, dst, protocol, port }).allowed;
              assert.equal(perPort.allowed(i, j, q), expected, `${a.id} → ${b.id} ${protocol}/${port}`);
            });
            const http = b.ports.find((p) => p.name === 'http' && p.protocol === 'TCP');
            const httpExpected = http
              ? evaluate(index, { src, dst, protocol: 'TCP', port: http.port }).allowed
              : false;
            assert.equal(perPort.allowed(i, j, queries.length), httpExpected, `${a.id} → ${b.id} named http`);
            assert.deepEqual(sets.ports(i, j), allowedPorts(index, src, dst));
          }),
        );
      }),
      { numRuns: RUNS },
    );
  });
});
