/**
 * `compile`'s text with a large cluster's tables and groups printed in a worker thread
 * (TableTextOffload) is byte for byte the text printed on the main thread: table ids and rule
 * lines, groups in key order with their members by pod, named ports' numbers, groups without
 * members (styled), on generated and hand-written clusters.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileTextLines } from '../../src/analysis/index.ts';
import { COLOUR, PLAIN, type Style } from '../../src/analysis/format/style.ts';
import { buildReport, groupsToPrint } from '../../src/cli/commands/compile.ts';
import { TableTextOffload } from '../../src/configurator/index.ts';
import { generateShape } from '../../src/generate/shapes.ts';
import { loadCluster, loadFromObjects } from '../../src/ingest/index.ts';
import type { Cluster } from '../../src/model/types.ts';
import { compileCluster } from '../../src/pipeline/index.ts';

async function text(cluster: Cluster, style: Style, offloaded: boolean): Promise<string> {
  const offload = offloaded ? TableTextOffload.create(true) : undefined;
  if (offloaded) assert.ok(offload, 'the worker module is found');
  try {
    const pipeline = compileCluster(cluster, offload ? { tableObserver: offload } : {});
    const tableLines = await offload?.finish();
    const toPrint = offload ? groupsToPrint(pipeline, style.dim('(no members)')) : undefined;
    const printing = toPrint &&
      offload && { count: toPrint.keys.length, pieces: offload.printGroups(toPrint) };
    const report = await buildReport(pipeline, undefined, undefined, 'ingress', 0, tableLines, printing);
    if (offloaded) {
      assert.ok(report.printedGroups, 'the worker printed the groups');
      assert.equal(report.groups.length, 0);
    }
    return [...compileTextLines(report, style, true)].join('');
  } finally {
    await offload?.close();
  }
}

const SHOP = ['examples/shop', 'examples/shop-running'];

/**
 * Pods the store holds in (namespace, name) order and the report lists by id: `a/x` comes before
 * `a-b/y` in the one and after it in the other ('-' sorts before '/').
 */
function prefixNamespaces(): Cluster {
  const namespace = (name: string): object => ({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { team: 'web' } },
  });
  const pod = (ns: string, name: string, ip: string): object => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, labels: { app: 'web' } },
    spec: { nodeName: 'node-1', containers: [{ name: 'c', ports: [{ name: 'http', containerPort: 8080 }] }] },
    status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] },
  });
  const policy = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'from-web', namespace: 'a' },
    spec: {
      podSelector: {},
      ingress: [
        {
          from: [
            {
              namespaceSelector: { matchLabels: { team: 'web' } },
              podSelector: { matchLabels: { app: 'web' } },
            },
          ],
        },
      ],
      egress: [
        {
          to: [{ namespaceSelector: {}, podSelector: { matchLabels: { app: 'web' } } }],
          ports: [{ port: 'http' }],
        },
      ],
    },
  };
  return loadFromObjects([
    namespace('a'),
    namespace('a-b'),
    pod('a', 'x', '10.0.0.1'),
    pod('a-b', 'y', '10.0.0.2'),
    policy,
  ]).cluster;
}

const CLUSTERS: [string, () => Promise<Cluster>][] = [
  [
    'shape a (generated)',
    () => {
      const shape = generateShape('a', { scale: 0.002, seed: 11 });
      return Promise.resolve(
        loadFromObjects([...shape.namespaces, ...shape.pods, ...shape.policies]).cluster,
      );
    },
  ],
  ['the running shop (named ports)', async () => (await loadCluster(SHOP)).cluster],
  ['namespaces that are prefixes of others', () => Promise.resolve(prefixNamespaces())],
  ['examples/kuryr', async () => (await loadCluster(['examples/kuryr'])).cluster],
  ['examples/lint (groups without members)', async () => (await loadCluster(['examples/lint'])).cluster],
];

describe('compile text printed in a worker thread', () => {
  for (const [name, load] of CLUSTERS) {
    it(`is the main thread's text: ${name}`, async () => {
      const cluster = await load();
      for (const style of [PLAIN, COLOUR]) {
        const here = await text(cluster, style, false);
        assert.ok(here.includes('address groups ('));
        assert.equal(await text(cluster, style, true), here);
      }
    });
  }

  it('covers named ports and groups without members (the cases it prints)', async () => {
    const shop = await text((await loadCluster(SHOP)).cluster, PLAIN, true);
    assert.match(shop, /shop\/db-0:5432 10\.244\.2\.11/, 'a member with its named port number');
    assert.match(shop, /frontend-7c9d-q8m2z 10\.244\.2\.10; shop\/frontend-7c9d-x2k4p/, 'members by pod');
    const prefixes = await text(prefixNamespaces(), PLAIN, true);
    assert.match(prefixes, /a-b\/y 10\.0\.0\.2; a\/x 10\.0\.0\.1/, 'members by pod id');
    const lint = await text((await loadCluster(['examples/lint'])).cluster, PLAIN, true);
    assert.match(lint, /\(no members\)/);
  });
});
