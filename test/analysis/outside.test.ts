/**
 * The matrix formats' connections with the address space outside the cluster: per row and class
 * of ranges, exactly what the reference evaluator allows between every pod of the row and every
 * range the class holds (each range by its representative address); and a policy allowing
 * egress to 0.0.0.0/0 (the public recipes' "allow external") shows in every format.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { computeViewMatrix } from '../../src/analysis/workload-matrix.ts';
import { outsideClasses } from '../../src/analysis/outside.ts';
import { MATRIX_FORMATS } from '../../src/analysis/format/matrix-formats.ts';
import { PLAIN } from '../../src/analysis/format/style.ts';
import { addressRanges } from '../../src/analysis/address-ranges.ts';
import {
  allowedPorts,
  formatPortSet,
  indexCluster,
  intersectPorts,
  ALL_PORTS,
  EMPTY_PORTS,
  unionPorts,
} from '../../src/semantics/index.ts';
import { clusterArb } from '../helpers/arbitraries.ts';
import { calicoArb, ciliumArb } from '../helpers/engine-arbitraries.ts';
import { clusterOf, namespace, pod, policy } from '../helpers/builders.ts';
import { cli } from '../helpers/cli.ts';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

describe('connections with addresses outside the cluster', () => {
  it('are what the reference allows between every pod (and some pod) of a row and every range of a class', () => {
    fc.assert(
      fc.property(
        clusterArb({ maxPods: 6, maxPolicies: 3, maxClusterPolicies: 1 }),
        calicoArb(2),
        ciliumArb(2),
        fc.constantFrom('workload' as const, 'namespace' as const),
        (objects, calico, cilium, by) => {
          const cluster = clusterOf([...objects, ...calico, ...cilium]);
          const matrix = computeViewMatrix(cluster, { by, queries: [] });
          const classes = outsideClasses(matrix, cluster, 'v1', Infinity, true) ?? [];
          // Without what some pods may (JSON, CSV, Markdown), ranges are told apart only by
          // what every pod may: no two classes say the same, so no line is said twice.
          const everyPod = outsideClasses(matrix, cluster) ?? [];
          const said = everyPod.map((c) => [...c.out, ...c.into].map(formatPortSet).join('|'));
          assert.equal(new Set(said).size, said.length, 'two address classes that say the same');
          const index = indexCluster(cluster);
          const ranges = addressRanges([cluster]);
          for (const c of classes)
            for (const range of ranges) {
              if (
                !c.intervals.some(
                  (i) =>
                    i.family === range.interval.family &&
                    i.lo <= range.interval.lo &&
                    i.hi >= range.interval.hi,
                )
              )
                continue;
              const ip = { kind: 'ip' as const, ip: range.representative };
              matrix.rows.forEach((row, r) => {
                const members = (row as unknown as { members: typeof cluster.endpoints }).members;
                let out = ALL_PORTS;
                let into = ALL_PORTS;
                let outSome = EMPTY_PORTS;
                let intoSome = EMPTY_PORTS;
                for (const e of members) {
                  const sent = allowedPorts(index, { kind: 'endpoint', endpoint: e }, ip);
                  const received = allowedPorts(index, ip, { kind: 'endpoint', endpoint: e });
                  out = intersectPorts(out, sent);
                  into = intersectPorts(into, received);
                  outSome = unionPorts(outSome, sent);
                  intoSome = unionPorts(intoSome, received);
                }
                assert.equal(formatPortSet(c.out[r]!), formatPortSet(out), `${row.label} → ${c.label}`);
                assert.equal(formatPortSet(c.into[r]!), formatPortSet(into), `${c.label} → ${row.label}`);
                assert.equal(
                  formatPortSet(c.outSome[r]!),
                  formatPortSet(outSome),
                  `some ${row.label} → ${c.label}`,
                );
                assert.equal(
                  formatPortSet(c.intoSome[r]!),
                  formatPortSet(intoSome),
                  `${c.label} → some ${row.label}`,
                );
              });
            }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('show in every format: a pod allowed egress to 0.0.0.0/0 on 443', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'palisade-outside-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'external.yaml');
    const objects = [
      namespace('a'),
      pod('a', 'web', { app: 'web' }, { ips: ['10.0.0.1'] }),
      policy('a', 'allow-external', {
        podSelector: { matchLabels: { app: 'web' } },
        policyTypes: ['Egress'],
        egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0' } }], ports: [{ port: 443 }] }],
      }),
    ];
    writeFileSync(file, objects.map((o) => JSON.stringify(o)).join('\n---\n'));
    const text = await cli(['matrix', '-f', file]);
    assert.match(text.stdout, /^a\/web\[Pod\] → 0\.0\.0\.0\/0: TCP 443$/m);
    assert.match(text.stdout, /^0\.0\.0\.0\/0 → a\/web\[Pod\]: all$/m);
    const json = JSON.parse((await cli(['matrix', '-f', file, '--port', '443', '-o', 'json'])).stdout) as {
      addresses: { from: string; to: string; allowed: boolean; toKind: string }[];
    };
    assert.deepEqual(
      json.addresses.find((a) => a.from === 'a/web'),
      {
        from: 'a/web',
        to: '0.0.0.0/0',
        port: 443,
        protocol: 'TCP',
        allowed: true,
        fromKind: 'Pod',
        toKind: 'Addresses',
      },
    );
    const csv = await cli(['matrix', '-f', file, '--port', '443', '-o', 'csv']);
    assert.match(csv.stdout, /^a\/web\[Pod\],0\.0\.0\.0\/0,443,TCP,true$/m);
    const md = await cli(['matrix', '-f', file, '--port', '443', '-o', 'md']);
    assert.match(md.stdout, /^\| 0\.0\.0\.0\/0 \| ✓ \| – \|$/m);
    const none = await cli(['matrix', '-f', file, '--port', '443', '--addresses', 'none', '-o', 'json']);
    assert.equal((JSON.parse(none.stdout) as { addresses?: unknown }).addresses, undefined);
  });

  it('include pods without an address (manifests from a repository): they may have any family', () => {
    const cluster = clusterOf([
      namespace('a'),
      pod('a', 'web', { app: 'web' }),
      policy('a', 'egress', {
        podSelector: {},
        policyTypes: ['Egress'],
        egress: [{ to: [{ ipBlock: { cidr: '203.0.113.0/25' } }], ports: [{ port: 443 }] }],
      }),
    ]);
    const matrix = computeViewMatrix(cluster, { by: 'workload', queries: [] });
    const out = (outsideClasses(matrix, cluster) ?? []).map((c) => `${c.label}: ${formatPortSet(c.out[0]!)}`);
    assert.deepEqual(out.sort(), ['0.0.0.0/0 except 203.0.113.0/25: none', '203.0.113.0/25: TCP 443']);
  });

  it("are drawn for Cilium's CIDRs: the graph's ranges are outside the cluster, where only they match", async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'palisade-outside-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'cilium.yaml');
    const objects = [
      namespace('web'),
      pod('web', 'api', { app: 'api' }, { ips: ['10.1.0.5'] }),
      {
        apiVersion: 'cilium.io/v2',
        kind: 'CiliumNetworkPolicy',
        metadata: { name: 'api-egress', namespace: 'web' },
        spec: {
          endpointSelector: { matchLabels: { app: 'api' } },
          egress: [
            {
              toCIDRSet: [{ cidr: '203.0.113.0/24', except: ['203.0.113.128/25'] }],
              toPorts: [{ ports: [{ port: '443', protocol: 'TCP' }] }],
            },
            { toCIDR: ['198.51.100.7/32'] },
          ],
        },
      },
    ];
    writeFileSync(file, objects.map((o) => JSON.stringify(o)).join('\n---\n'));
    for (const engine of ['reference', 'compiled']) {
      const dot = (await cli(['matrix', '-f', file, '-o', 'dot', '--engine', engine])).stdout;
      const node = (label: string): string =>
        new RegExp(`"(addr:\\d+)" \\[id="n\\d+", label="${label}"`).exec(dot)?.[1] ?? '';
      const cidr = node('203\\.0\\.113\\.0/25');
      const host = node('198\\.51\\.100\\.7/32');
      assert.ok(cidr && host, `${engine}: both blocks are nodes\n${dot}`);
      assert.match(
        dot,
        new RegExp(`"ep:web/api\\[Pod\\]" -> "${cidr}" \\[id="e\\d+", label="TCP 443"\\]`),
        engine,
      );
      assert.match(dot, new RegExp(`"ep:web/api\\[Pod\\]" -> "${host}" \\[id="e\\d+", label="all"`), engine);
    }
  });

  it("leave out a host-network pod's address on both engines, where the input has no Node with it", async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'palisade-outside-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'host-network.yaml');
    const objects = [
      namespace('shop'),
      pod('shop', 'db', { app: 'db' }, { ips: ['10.0.0.2'] }),
      pod('shop', 'agent', { app: 'agent' }, { ips: ['192.168.1.77'], hostNetwork: true }),
      {
        apiVersion: 'cilium.io/v2',
        kind: 'CiliumNetworkPolicy',
        metadata: { name: 'lan', namespace: 'shop' },
        spec: {
          endpointSelector: { matchLabels: { app: 'db' } },
          ingress: [{ fromCIDR: ['192.168.0.0/16'] }],
          egress: [{ toCIDR: ['192.168.0.0/16'] }],
        },
      },
    ];
    writeFileSync(file, objects.map((o) => JSON.stringify(o)).join('\n---\n'));
    const verdicts = async (engine: string): Promise<unknown> =>
      JSON.parse(
        (await cli(['matrix', '-f', file, '--port', '80', '--by', 'pod', '-o', 'json', '--engine', engine]))
          .stdout,
      );
    const reference = await verdicts('reference');
    assert.deepEqual(await verdicts('compiled'), reference);
    // A host-network pod's address is a node's, and Cilium's CIDR rules never match a node.
    const { results } = reference as { results: { from: string; to: string; allowed: boolean }[] };
    const pair = (from: string, to: string) => results.find((r) => r.from === from && r.to === to);
    assert.equal(pair('shop/agent', 'shop/db')?.allowed, false);
    assert.equal(pair('shop/db', 'shop/agent')?.allowed, false);
  });

  it('are said to be left out in JSON when they were (past the few seconds they may take)', () => {
    const cluster = clusterOf([namespace('shop'), pod('shop', 'api', { app: 'api' }, { ips: ['10.0.0.1'] })]);
    const matrix = computeViewMatrix(cluster, { by: 'workload', queries: [{ port: 80, protocol: 'TCP' }] });
    const json = (extras: Parameters<NonNullable<typeof MATRIX_FORMATS.json>>[2]) =>
      JSON.parse([...(MATRIX_FORMATS.json?.(matrix, PLAIN, extras) ?? [])].join('')) as Record<
        string,
        unknown
      >;
    assert.deepEqual(Object.keys(json({})), ['results']);
    assert.deepEqual(Object.keys(json({ addressesLeftOut: true })), ['results', 'addressesLeftOut']);
    assert.equal(json({ addressesLeftOut: true }).addressesLeftOut, true);
  });
});
