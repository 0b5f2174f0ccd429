/**
 * Manifest ingestion: every input form and every kind the issue lists, end to end.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadCluster, loadFromTexts } from '../../src/ingest/load.ts';
import { formatIp } from '../../src/net/ip.ts';
import { resolveAddress } from '../../src/analysis/resolve-address.ts';
import { load, namespace, pod, policy } from '../helpers/builders.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const WORKLOADS = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]
      initContainers:
        - {name: sidecar, restartPolicy: Always, ports: [{name: proxy, containerPort: 15001}]}
        - {name: init, ports: [{name: ignored, containerPort: 1}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop}
spec: {template: {metadata: {labels: {app: db}}, spec: {containers: [{name: c}]}}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: ops}
spec: {template: {metadata: {labels: {app: agent}}, spec: {hostNetwork: true, containers: [{name: c}]}}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs, namespace: shop}
spec: {template: {metadata: {labels: {app: rs}}}}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: rc, namespace: shop}
spec: {template: {metadata: {labels: {app: rc}}}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: job, namespace: shop}
spec: {template: {metadata: {labels: {app: job}}}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cron, namespace: shop}
spec: {jobTemplate: {spec: {template: {metadata: {labels: {app: cron}}, spec: {containers: [{name: c, ports: [{containerPort: 53, protocol: UDP, name: dns}]}]}}}}}
`;

describe('ingest', () => {
  it('turns every workload kind into an endpoint with its template labels and named ports', () => {
    const { cluster, diagnostics } = loadFromTexts([{ name: 'w.yaml', text: WORKLOADS }]);
    assert.deepEqual(
      cluster.endpoints.map((e) => `${e.id}:${e.kind}`),
      [
        'ops/agent:DaemonSet',
        'shop/cron:CronJob',
        'shop/db:StatefulSet',
        'shop/job:Job',
        'shop/rc:ReplicationController',
        'shop/rs:ReplicaSet',
        'shop/web:Deployment',
      ],
    );
    const web = cluster.endpoints.find((e) => e.name === 'web');
    assert.deepEqual(web?.labels, { app: 'web' });
    assert.deepEqual(web?.ports, [
      { name: 'http', port: 8080, protocol: 'TCP' },
      { name: 'proxy', port: 15001, protocol: 'TCP' },
    ]);
    assert.deepEqual(cluster.endpoints.find((e) => e.name === 'cron')?.ports, [
      { name: 'dns', port: 53, protocol: 'UDP' },
    ]);
    assert.equal(cluster.endpoints.find((e) => e.name === 'agent')?.hostNetwork, true);
    assert.ok(cluster.endpoints.every((e) => e.ips.length === 0));
    // shop and ops were never defined: made up, and said so.
    assert.deepEqual(
      diagnostics
        .filter((d) => d.code === 'NAMESPACE_IMPLICIT')
        .map((d) => d.object)
        .sort(),
      ['Namespace ops', 'Namespace shop'],
    );
    assert.deepEqual(cluster.namespaces.get('shop')?.labels, { 'kubernetes.io/metadata.name': 'shop' });
  });

  it('unrolls List kinds, nested Lists and kubectl get -o json output', () => {
    const list = {
      apiVersion: 'v1',
      kind: 'List',
      items: [
        namespace('a', { team: 'x' }),
        { apiVersion: 'v1', kind: 'PodList', items: [pod('a', 'p1', {}, { ips: ['10.0.0.1'] })] },
        policy('a', 'deny', { podSelector: {} }),
      ],
    };
    const { cluster, diagnostics } = loadFromTexts([
      { name: 'list.json', text: JSON.stringify(list, null, 2) },
    ]);
    assert.deepEqual(diagnostics, []);
    assert.deepEqual(
      cluster.endpoints.map((e) => e.id),
      ['a/p1'],
    );
    assert.equal(cluster.policies.length, 1);
    assert.deepEqual(cluster.namespaces.get('a')?.labels, { team: 'x', 'kubernetes.io/metadata.name': 'a' });
  });

  it('locates problems inside List items', () => {
    const text =
      'apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: Pod\n    metadata: {name: BAD}\n';
    const d = loadFromTexts([{ name: 'l.yaml', text }]).diagnostics.find((x) => x.code === 'NAME_INVALID');
    assert.deepEqual([d?.line, d?.column], [6, 22]);
  });

  it('reads pods: IPs (dual-stack), phases, host network', () => {
    const { cluster, diagnostics } = load([
      pod('a', 'dual', {}, { ips: ['10.0.0.1', '2001:db8::1'] }),
      pod('a', 'done', {}, { ips: ['10.0.0.2'], phase: 'Succeeded' }),
      pod('a', 'failed', {}, { phase: 'Failed' }),
      pod('a', 'host', {}, { hostNetwork: true, node: 'n1', hostIp: '192.168.0.10' }),
    ]);
    assert.deepEqual(
      cluster.endpoints.map((e) => e.id),
      ['a/dual', 'a/host'],
    );
    assert.deepEqual(cluster.endpoints[0]?.ips.map(formatIp), ['10.0.0.1', '2001:db8::1']);
    assert.deepEqual(
      cluster.endpoints[1]?.ips.map(formatIp),
      ['192.168.0.10'],
      'hostNetwork pods take the node address',
    );
    assert.deepEqual(cluster.nodes.get('n1')?.addresses.map(formatIp), ['192.168.0.10']);
    assert.equal(diagnostics.filter((d) => d.code === 'POD_NOT_RUNNING').length, 2);
  });

  it('takes ns/name for a pod even when it reads like an address with a prefix length', () => {
    const { cluster } = load([pod('cafe', '1', {}, { ips: ['10.0.0.7'] })]);
    const named = resolveAddress(cluster, 'cafe/1');
    assert.ok(named.ok && named.address.kind === 'endpoint', named.ok ? named.address.kind : named.message);
    const cidr = resolveAddress(cluster, '10.0.0.0/8');
    assert.ok(!cidr.ok && /is a CIDR/.test(cidr.message));
  });

  it('warns when two running pods hold one IP, and check by that IP refuses to pick one', () => {
    const { cluster, diagnostics } = load([
      pod('a', 'app', {}, { ips: ['10.0.0.11', '2001:db8::1'] }),
      pod('a', 'redis', {}, { ips: ['10.0.0.11'] }),
      pod('b', 'other', {}, { ips: ['2001:db8::1'] }),
      pod('a', 'alone', {}, { ips: ['10.0.0.12'] }),
      // hostNetwork pods share their node's address by design; finished pods hold none.
      pod('a', 'host1', {}, { hostNetwork: true, node: 'n1', hostIp: '192.168.0.10' }),
      pod('a', 'host2', {}, { hostNetwork: true, node: 'n1', hostIp: '192.168.0.10' }),
      pod('a', 'done', {}, { ips: ['10.0.0.12'], phase: 'Succeeded' }),
    ]);
    const shared = diagnostics.filter((d) => d.code === 'POD_IP_SHARED');
    assert.deepEqual(
      shared.map((d) => [d.severity, d.object, d.message.split(';')[0]]),
      [
        ['warning', 'Pod a/redis', '10.0.0.11 is the address of a/app (at test.yaml:1) and of a/redis'],
        ['warning', 'Pod b/other', '2001:db8::1 is the address of a/app (at test.yaml:1) and of b/other'],
      ],
    );
    assert.ok(shared.every((d) => d.line > 1));
    const byIp = resolveAddress(cluster, '10.0.0.11');
    assert.deepEqual(byIp, {
      ok: false,
      message: '10.0.0.11 is the address of 2 pods (a/app, a/redis); name the pod instead',
    });
    const alone = resolveAddress(cluster, '10.0.0.12');
    assert.ok(alone.ok && alone.address.kind === 'endpoint' && alone.address.endpoint.id === 'a/alone');
  });

  it('defaults policyTypes as the API server does', () => {
    const { cluster } = load([
      policy('a', 'only-ingress', { podSelector: {}, ingress: [{}] }),
      policy('a', 'with-egress', { podSelector: {}, egress: [{}] }),
      policy('a', 'explicit', { podSelector: {}, policyTypes: ['Egress'] }),
    ]);
    const types = Object.fromEntries(
      cluster.policies.map((p) => [p.name, [p.affectsIngress, p.affectsEgress]]),
    );
    assert.deepEqual(types, {
      explicit: [false, true],
      'only-ingress': [true, false],
      'with-egress': [true, true],
    });
  });

  it('keeps absent and empty peer/port lists apart', () => {
    const { cluster } = load([policy('a', 'p', { podSelector: {}, ingress: [{}, { from: [], ports: [] }] })]);
    const [absent, empty] = cluster.policies[0]?.ingress ?? [];
    assert.equal(absent?.peers, undefined);
    assert.deepEqual(empty?.peers, []);
    assert.deepEqual(empty?.ports, []);
  });

  it('accepts legacy extensions/v1beta1 policies and reads the DefaultDeny annotation', () => {
    const ns = namespace(
      'legacy',
      {},
      { 'net.beta.kubernetes.io/network-policy': '{"ingress": {"isolation": "DefaultDeny"}}' },
    );
    const v1 = load([ns, policy('legacy', 'p', { podSelector: {} }, 'extensions/v1beta1')]);
    assert.equal(v1.cluster.policies[0]?.apiVersion, 'extensions/v1beta1');
    assert.equal(v1.cluster.namespaces.get('legacy')?.legacyIngressIsolation, 'DefaultDeny');
    assert.ok(
      v1.diagnostics.some((d) => d.code === 'LEGACY_ANNOTATION_IGNORED'),
      'v1 semantics say the annotation is ignored',
    );
    const legacy = load([ns, policy('legacy', 'p', { podSelector: {}, egress: [{}] })], 'v1beta1-proposal');
    assert.ok(!legacy.diagnostics.some((d) => d.code === 'LEGACY_ANNOTATION_IGNORED'));
    assert.ok(legacy.diagnostics.some((d) => d.code === 'LEGACY_EGRESS_IGNORED'));
  });

  it('lets the later of two equal objects win, with a warning', () => {
    const { cluster, diagnostics } = load([pod('a', 'p', { v: '1' }), pod('a', 'p', { v: '2' })]);
    assert.deepEqual(cluster.endpoints[0]?.labels, { v: '2' });
    assert.ok(diagnostics.some((d) => d.code === 'OBJECT_DUPLICATE'));
  });

  it('marks workloads that share a pod name with [Kind]', () => {
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'x', namespace: 'a' },
      spec: {},
    };
    const { cluster } = load([pod('a', 'x'), deployment]);
    assert.deepEqual(
      cluster.endpoints.map((e) => e.id),
      ['a/x[Deployment]', 'a/x'],
    );
  });

  it('reads files, directories recursively, and stdin; reports missing paths and oversized files', async (t) => {
    const dir = await tempDir(t, 'palisade-ingest-');
    await mkdir(join(dir, 'nested', 'deeper'), { recursive: true });
    await mkdir(join(dir, '.git'));
    await writeFile(join(dir, 'a.yaml'), JSON.stringify(pod('a', 'one')));
    await writeFile(join(dir, 'nested', 'b.yml'), JSON.stringify(pod('a', 'two')));
    await writeFile(join(dir, 'nested', 'deeper', 'c.json'), JSON.stringify(pod('a', 'three')));
    await writeFile(join(dir, 'nested', 'notes.txt'), 'not a manifest');
    await writeFile(join(dir, '.git', 'x.yaml'), JSON.stringify(pod('a', 'hidden')));
    await writeFile(join(dir, 'big.yaml'), 'x'.repeat(3 * 1024));
    const result = await loadCluster([dir, '-', join(dir, 'missing.yaml')], {
      readStdin: () => Promise.resolve(JSON.stringify(pod('a', 'stdin'))),
      maxFileBytes: 2 * 1024,
    });
    assert.deepEqual(
      result.cluster.endpoints.map((e) => e.id),
      ['a/one', 'a/stdin', 'a/three', 'a/two'],
    );
    const codes = result.diagnostics
      .filter((d) => d.severity !== 'info')
      .map((d) => `${d.code}:${d.file.replace(dir, '')}`);
    assert.deepEqual(codes.sort(), ['FILE_NOT_FOUND:/missing.yaml', 'FILE_TOO_LARGE:/big.yaml']);
  });

  it('says how a pod is named when a missing path after -f reads like namespace/name', async () => {
    // Relative paths resolve from the working directory; these two exist in no checkout.
    const paths = ['shop/no-such-pod-7f3a', 'no-such-dir-7f3a/pods.yaml'];
    const explained = await loadCluster(paths, { podOption: (name) => `--pod ${name}` });
    assert.deepEqual(
      explained.diagnostics.map((d) => `${d.code}: ${d.message}`),
      [
        'FILE_NOT_FOUND: no such file or directory: no-such-dir-7f3a/pods.yaml',
        'FILE_NOT_FOUND: no such file or directory: shop/no-such-pod-7f3a (if it names a pod, give it with --pod shop/no-such-pod-7f3a: -f takes every word after it as a path)',
      ],
    );
    // A command that takes no pod (validate, matrix) does not suggest an option it lacks.
    const validated = await loadCluster(paths);
    assert.deepEqual(validated.diagnostics.map((d) => d.message).slice(1), [
      'no such file or directory: shop/no-such-pod-7f3a (-f takes every word after it as a path)',
    ]);
  });

  it('reads a file given on stdin and by name once, when stdin is that file', async (t) => {
    const dir = await tempDir(t, 'palisade-stdin-');
    const file = join(dir, 'ns.yaml');
    await writeFile(file, 'apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n');
    const start = new URL('../../src/cli/start.ts', import.meta.url).href;
    const code = `const { start } = await import(${JSON.stringify(start)}); start(['validate', '-f', '-', '-f', ${JSON.stringify(file)}]);`;
    const stdin = openSync(file, 'r');
    try {
      const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
        stdio: [stdin, 'pipe', 'pipe'],
        encoding: 'utf8',
      });
      assert.equal(run.status, 0, run.stdout + run.stderr);
      assert.doesNotMatch(run.stdout, /OBJECT_DUPLICATE/);
      assert.match(run.stdout, /1 namespace/);
    } finally {
      closeSync(stdin);
    }
  });

  it('reads a file given twice (again by name, through its directory, or a link) once', async (t) => {
    const dir = await tempDir(t, 'palisade-twice-');
    const file = join(dir, 'ns.yaml');
    await writeFile(file, 'apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n');
    await symlink(file, join(dir, 'link.yaml'));
    const { cluster, diagnostics } = await loadCluster([dir, file, dir, join(dir, 'link.yaml')]);
    assert.deepEqual(diagnostics, []); // no OBJECT_DUPLICATE, no NO_INPUT_FILES for the second dir
    assert.deepEqual([...cluster.namespaces.keys()], ['a']);
  });

  it('says when a directory holds no manifests', async (t) => {
    const dir = await tempDir(t, 'palisade-empty-');
    await writeFile(join(dir, 'README.md'), '# not a manifest');
    const { diagnostics } = await loadCluster([dir]);
    assert.deepEqual(
      diagnostics.map((d) => d.code),
      ['NO_INPUT_FILES'],
    );
  });

  it('treats empty documents as nothing, and says when a named file holds nothing at all', () => {
    const { cluster, diagnostics } = loadFromTexts([
      { name: 'empty.yaml', text: '' },
      { name: 'blank.yaml', text: '---\n---\n# only a comment\n' },
      { name: 'ns.yaml', text: '---\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n' },
      // What kubectl writes when there is nothing is a document: no warning.
      { name: 'none.yaml', text: 'apiVersion: v1\nitems: []\nkind: List\n' },
    ]);
    assert.equal(cluster.endpoints.length, 0);
    assert.equal(cluster.namespaces.size, 1);
    // Not an error (an empty file is valid YAML), but likely not the file meant.
    assert.deepEqual(
      diagnostics.map((d) => [d.file, d.severity, d.code]),
      [
        ['blank.yaml', 'warning', 'FILE_EMPTY'],
        ['empty.yaml', 'warning', 'FILE_EMPTY'],
      ],
    );
  });
});
