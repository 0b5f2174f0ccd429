/**
 * `compile`'s text with a large cluster's tables hashed and printed in a worker thread
 * (TableTextOffload) is byte for byte the text printed on the main thread — table ids, rule
 * lines, and everything that refers to the ids — on generated and hand-written clusters, plain
 * and coloured.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileTextLines } from '../../src/analysis/index.ts';
import { COLOUR, PLAIN, type Style } from '../../src/analysis/format/style.ts';
import { buildReport } from '../../src/cli/commands/compile.ts';
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
    if (offloaded) assert.ok(tableLines, 'the worker printed the tables');
    const report = buildReport(pipeline, undefined, undefined, 'ingress', 0, tableLines);
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

  it('covers named ports (egress partitions) among the tables it prints', async () => {
    const shop = await text((await loadCluster(SHOP)).cluster, PLAIN, true);
    assert.match(shop, /group:ns=shop;pod=app=api;port=http\/TCP#8000 port 8000/);
  });
});
