/**
 * `palisade suggest` as users run it: from the bundled flows and from an expectations file, its
 * YAML read back by the loader and holding exactly what was seen (`matrix` on the result), the
 * JSON and per-namespace outputs, stdin, and bad flow files — every problem located, the rest
 * still used — with the exit codes of the contract.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { cli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { loadFromTexts } from '../../src/ingest/load.ts';
import { readFlowFile } from '../../src/flows/index.ts';

const CLUSTER = ['-f', 'examples/shop-running', 'examples/shop/namespaces.yaml'];
const FLOWS = 'examples/flows/shop.ndjson';

function flow(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    src: { ip: '10.244.1.10', pod: 'shop/frontend-7c9d-x2k4p' },
    dst: { ip: '10.244.1.11' },
    protocol: 'TCP',
    port: 8000,
    verdict: 'allowed',
    ...fields,
  };
}

void describe('palisade suggest', () => {
  void it('writes policies from the bundled flows that the loader reads back, and that allow exactly what was seen', async (t) => {
    const r = await cli(['suggest', ...CLUSTER, '--flows', FLOWS]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^# Verified with the reference evaluator/m);
    assert.match(r.stdout, /shop\/frontend-7c9d-q8m2z, frontend-7c9d-x2k4p → app=frontend/);
    assert.match(r.stderr, /1 flow record with verdict "denied" left out/);
    const loaded = loadFromTexts([{ name: 'suggested.yaml', text: r.stdout }]);
    assert.deepEqual(
      loaded.diagnostics.filter((d) => d.severity !== 'info'),
      [],
    );
    assert.equal(loaded.cluster.policies.length, r.stdout.split('\n---\n').length);
    // The matrix of the running shop under the suggestion alone: what the flows saw, and DNS.
    const dir = await tempDir(t, 'palisade-suggest-');
    await writeFile(join(dir, 'suggested.yaml'), r.stdout);
    const m = await cli(['matrix', ...CLUSTER, join(dir, 'suggested.yaml'), '--by', 'workload']);
    assert.equal(m.code, 0, m.stderr);
    const [pods = '', outside = ''] = m.stdout.split('\n\n');
    const lines = pods.split('\n');
    assert.deepEqual(lines, [
      'kube-system/coredns[Deployment] → kube-system/coredns[Deployment]: TCP 53; UDP 53',
      'monitoring/prometheus[StatefulSet] → kube-system/coredns[Deployment]: TCP 53; UDP 53',
      'monitoring/prometheus[StatefulSet] → payments/gateway[Deployment]: TCP 9090',
      'monitoring/prometheus[StatefulSet] → shop/api[Deployment]: TCP 9090',
      'payments/gateway[Deployment] → kube-system/coredns[Deployment]: TCP 53; UDP 53',
      'shop/api[Deployment] → kube-system/coredns[Deployment]: TCP 53; UDP 53',
      'shop/api[Deployment] → payments/gateway[Deployment]: TCP 8443',
      'shop/api[Deployment] → shop/db[StatefulSet]: TCP 5432',
      'shop/db[StatefulSet] → kube-system/coredns[Deployment]: TCP 53; UDP 53',
      'shop/frontend[Deployment] → kube-system/coredns[Deployment]: TCP 53; UDP 53',
      'shop/frontend[Deployment] → shop/api[Deployment]: TCP 8000',
      'payments/gateway[Deployment] → 203.0.113.10/32: TCP 443',
    ]);
    // …and of every range outside the cluster, only the one address seen.
    assert.match(
      outside,
      /^1 of \d+ connections with address ranges outside the cluster are allowed on some port$/m,
    );
  });

  void it('writes only the namespaces given with -n, and leaves DNS out with --no-dns', async () => {
    const r = await cli(['suggest', ...CLUSTER, '--flows', FLOWS, '-n', 'shop', '--no-dns']);
    assert.equal(r.code, 0, r.stderr);
    const { cluster } = loadFromTexts([{ name: 's.yaml', text: r.stdout }]);
    assert.deepEqual(cluster.policies.map((p) => `${p.namespace}/${p.name}`).sort(), [
      'shop/api',
      'shop/db',
      'shop/default-deny',
      'shop/frontend',
    ]);
    // The DNS query seen is the api's own rule now, not every pod's.
    assert.doesNotMatch(r.stdout, /allow-dns/);
    assert.match(
      r.stdout,
      /matchLabels: \{k8s-app: kube-dns\}\n {6}ports:\n {8}- \{protocol: UDP, port: 53\}/,
    );
  });

  void it('takes an expectations file: allowed ones let through, allowed: false ones checked to stay denied', async () => {
    const r = await cli([
      'suggest',
      '-f',
      'examples/shop',
      '--expect',
      'examples/assert/shop-expectations.yaml',
      '-o',
      'json',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as {
      items: { metadata: { namespace: string; name: string } }[];
      verification: { exact: boolean; violated: string[] };
    };
    assert.equal(out.verification.exact, true);
    assert.deepEqual(out.verification.violated, []);
    assert.ok(out.items.some((p) => p.metadata.namespace === 'payments' && p.metadata.name === 'gateway'));
    assert.match(JSON.stringify(out.items), /203\.0\.113\.10\/32/);
  });

  void it('exits 3 when an allowed: false expectation cannot stay denied at workload granularity', async (t) => {
    const dir = await tempDir(t, 'palisade-suggest-');
    const file = join(dir, 'expect.yaml');
    await writeFile(
      file,
      [
        '- {from: shop/frontend-7c9d-x2k4p, to: shop/api-5f6b-m9w1c, port: 8000, allowed: true}',
        '- {from: shop/frontend-7c9d-q8m2z, to: shop/api-5f6b-m9w1c, port: 8000, allowed: false}',
        '',
      ].join('\n'),
    );
    const r = await cli(['suggest', ...CLUSTER, '--expect', file]);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stdout, /NOT exact/);
    assert.match(
      r.stdout,
      /expect\.yaml:2:3: shop\/frontend-7c9d-q8m2z → shop\/api-5f6b-m9w1c TCP\/8000 is allowed/,
    );
  });

  void it("says that the input's cluster policies were left out of its check", async () => {
    const r = await cli(['suggest', ...CLUSTER, 'examples/tiers', '--flows', FLOWS, '-n', 'shop']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^# The input's 4 cluster-wide or other engines' policies \(AdminNetworkPolicy, .*\) were left out of the check/m,
    );
  });

  void it('writes one file per namespace with --out-dir, the summary on stdout', async (t) => {
    const dir = await tempDir(t, 'palisade-suggest-');
    const r = await cli(['suggest', ...CLUSTER, '--flows', FLOWS, '--out-dir', join(dir, 'out')]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual((await readdir(join(dir, 'out'))).sort(), [
      'kube-system.yaml',
      'monitoring.yaml',
      'payments.yaml',
      'shop.yaml',
    ]);
    assert.match(r.stdout, /wrote .*shop\.yaml \(5 policies\)/);
    const shop = await readFile(join(dir, 'out', 'shop.yaml'), 'utf8');
    const { cluster, diagnostics } = loadFromTexts([{ name: 'shop.yaml', text: shop }]);
    assert.deepEqual(
      diagnostics.filter((d) => d.severity !== 'info'),
      [],
    );
    assert.ok(cluster.policies.every((p) => p.namespace === 'shop'));
  });

  void it('reads flows from stdin', async () => {
    const text = await readFile(FLOWS, 'utf8');
    const r = await cli(['suggest', ...CLUSTER, '--flows', '-'], { stdin: text });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /from 9 observed connections \(2757 new connections\) in <stdin>/);
  });

  void it('locates every problem of a flow file, and still uses its good lines', async (t) => {
    const dir = await tempDir(t, 'palisade-suggest-');
    const file = join(dir, 'flows.ndjson');
    await writeFile(
      file,
      [
        JSON.stringify(flow()),
        '{"src": {"ip": "10.244.1.10"}, "dst": ', // cut short
        JSON.stringify(flow({ port: 70000 })),
        JSON.stringify(flow({ dst: { ip: '10.244.1.300' } })),
        JSON.stringify(flow({ verdict: 'allowd' })),
        JSON.stringify(flow({ protocl: 'TCP' })), // unknown field: a warning, the record is used
        JSON.stringify(flow({ src: { ip: '10.244.2.10', pod: 'shop/gone-1' } })),
        '',
      ].join('\n'),
    );
    const r = await cli(['suggest', ...CLUSTER, '--flows', file, '-n', 'shop', '--no-dns']);
    assert.equal(r.code, 1);
    const problems = r.stderr
      .trim()
      .split('\n')
      .map((l) => l.replace(file, 'F'));
    assert.deepEqual(
      problems.map((l) => /^(F:\d+:\d+): (\w+) (\w+)/.exec(l)?.slice(1).join(' ')),
      [
        'F:2:39 error YAML_SYNTAX',
        'F:3:113 error PORT_OUT_OF_RANGE',
        'F:4:74 error IP_INVALID',
        'F:5:128 error FLOW_FIELD_INVALID',
        'F:6:138 warning FLOW_FIELD_UNKNOWN',
        'F:7:1 warning FLOW_ENDPOINT_UNKNOWN',
      ],
    );
    // Lines 1 and 6 were used: frontend → api on 8000.
    assert.match(r.stdout, /# shop\/frontend\[Deployment\]: 2 flows, 2 connections/);
  });

  void it('needs observed connections, and one stdin', async () => {
    const none = await cli(['suggest', ...CLUSTER]);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /--flows FILE/);
    const twice = await cli(['suggest', '-f', '-', '--flows', '-']);
    assert.equal(twice.code, 2);
  });
});

void describe('flow files', () => {
  void it('reads the bundled file without a problem, with defaults for what a hand-written record leaves out', () => {
    const read = readFlowFile('f', `${JSON.stringify(flow())}\n`);
    assert.deepEqual(read.diagnostics, []);
    assert.deepEqual(read.flows[0]?.record.count, 1);
    assert.deepEqual(read.flows[0]?.record.decidedBy, []);
  });

  void it('places each problem at its field, and skips only the bad line', () => {
    const lines = [
      '{"src": {"ip": "1.2.3.4"}, "dst": {"ip": "5.6.7.8"}, "protocol": "ICMP", "port": 1, "verdict": "allowed"}',
      '[1, 2]',
      '{"src": {"ip": "1.2.3.4", "pod": "NotAName"}, "dst": {"ip": "5.6.7.8"}, "protocol": "TCP", "port": 80.5, "verdict": "allowed"}',
      '{"src": {"ip": "1.2.3.4"}, "dst": {"ip": "5.6.7.8"}, "protocol": "TCP", "port": 80, "verdict": "allowed", "count": "many"}',
      '{"src": {"ip": "1.2.3.4"}, "dst": {"ip": "5.6.7.8"}, "protocol": "UDP", "port": 53, "verdict": "denied"}',
      '{"src": "1.2.3.4", "protocol": "TCP", "port": 80, "verdict": "allowed"}',
      '{"src": {"ip": "1.2.3.4"}, "dst": {"ip": "5.6.7.8"}, "protocol": "TCP", "port": 80, "verdict": "allowed", "x": 1',
      '{"src": {"ip": "1.2.3.4"}, "dst": {"ip": "::1"}, "protocol": "TCP", "port": 80, "verdict": "allowed", "decidedBy": [7]}',
    ];
    const read = readFlowFile('f', lines.join('\r\n'));
    assert.deepEqual(
      read.diagnostics.map((d) => `${d.line}:${d.column} ${d.code}`),
      [
        '1:66 PROTOCOL_INVALID',
        '2:1 FLOW_FIELD_INVALID',
        '3:34 FLOW_FIELD_INVALID',
        '3:100 PORT_NOT_INTEGER',
        '4:116 FLOW_FIELD_INVALID',
        '6:9 SCHEMA_TYPE',
        '6:1 SCHEMA_REQUIRED',
        '7:113 YAML_SYNTAX',
        '8:117 SCHEMA_TYPE',
      ],
    );
    assert.deepEqual(
      read.flows.map((f) => f.line),
      [5],
    );
  });
});
