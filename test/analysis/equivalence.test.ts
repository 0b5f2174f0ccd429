/**
 * Equivalence classes split by ipBlocks: endpoints that differ only in their addresses share a
 * class exactly when every ipBlock (with its excepts) answers alike for them — fewer classes
 * would give wrong answers, more would waste work.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { computeMatrix } from '../../src/analysis/matrix.ts';
import { endpointClasses } from '../../src/analysis/equivalence.ts';
import { cidrContains, parseCidr } from '../../src/net/ip.ts';
import { clusterOf, namespace, pod, policy } from '../helpers/builders.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

/** 10.0.0.0/27 split into random blocks and excepts. */
const cidrArb = fc
  .tuple(fc.integer({ min: 0, max: 31 }), fc.integer({ min: 27, max: 32 }))
  .map(([host, prefix]) => {
    const size = 2 ** (32 - prefix);
    return `10.0.0.${Math.floor(host / size) * size}/${prefix}`;
  });
const blockArb = fc.tuple(cidrArb, fc.array(cidrArb, { maxLength: 3 })).map(([cidr, excepts]) => {
  const outer = parseCidr(cidr);
  if (!outer.ok) throw new Error(cidr);
  // Excepts must lie inside the block (the API rejects others).
  const except = excepts.filter((e) => {
    const inner = parseCidr(e);
    return (
      inner.ok &&
      inner.value.prefix > outer.value.prefix &&
      cidrContains(outer.value, { family: 4, value: inner.value.base })
    );
  });
  return { cidr, except: [...new Set(except)] };
});

describe('equivalence classes and ipBlocks', () => {
  it('are exactly the distinct ipBlock answers, and the matrix by classes equals every pair', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: 31 }), { minLength: 1, maxLength: 12 }),
        fc.array(blockArb, { minLength: 1, maxLength: 4 }),
        (hosts, blocks) => {
          const objects = [
            namespace('x'),
            ...hosts.map((h) => pod('x', `p${h}`, { app: 'same' }, { ips: [`10.0.0.${h}`] })),
            ...blocks.map((b, i) =>
              policy('x', `b${i}`, { podSelector: {}, ingress: [{ from: [{ ipBlock: b }] }] }),
            ),
          ];
          const cluster = clusterOf(objects);
          const { representatives } = endpointClasses(cluster, cluster.endpoints);
          const answers = new Set(
            cluster.endpoints.map((e) => {
              const ip = e.ips[0] as NonNullable<(typeof e.ips)[0]>;
              return cluster.policies
                .map((p) => {
                  const peer = p.ingress[0]?.peers?.[0];
                  if (peer?.type !== 'ipBlock') return '?';
                  return cidrContains(peer.cidr, ip) && !peer.except.some((c) => cidrContains(c, ip))
                    ? '1'
                    : '0';
                })
                .join('');
            }),
          );
          assert.equal(representatives.length, answers.size);
          const query = [{ port: 80, protocol: 'TCP' as const }];
          const byClass = computeMatrix(cluster, { queries: query });
          const byPair = computeMatrix(cluster, { queries: query, useClasses: false });
          const n = cluster.endpoints.length;
          for (let a = 0; a < n; a++)
            for (let b = 0; b < n; b++) assert.equal(byClass.allowed(a, b, 0), byPair.allowed(a, b, 0));
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('puts excepted and outside addresses in one class', () => {
    const cluster = clusterOf([
      namespace('x'),
      ...[1, 2, 3, 4, 5, 6, 7, 8].map((h) => pod('x', `p${h}`, { app: 'same' }, { ips: [`10.0.0.${h}`] })),
      policy('x', 'block', {
        podSelector: {},
        ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/29', except: ['10.0.0.4/30'] } }] }],
      }),
    ]);
    const { classOf } = endpointClasses(cluster, cluster.endpoints);
    assert.deepEqual([...classOf], [0, 0, 0, 1, 1, 1, 1, 1]);
  });
});
