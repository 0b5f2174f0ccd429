/**
 * `suggest`: units by the labels a person picks (merged only where labels cannot tell workloads
 * apart), and the property that matters — on random clusters, a suggestion from the connections
 * the cluster allows lets through exactly those, at workload granularity, judged pod pair by pod
 * pair and port by port by the reference evaluator (independently of the suggestion's own
 * verification, which must agree and must catch a wrong set).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { suggestPolicies, suggestionYaml } from '../../src/analysis/suggest/index.ts';
import { parseAllDocuments } from 'yaml';
import { verifySuggestion } from '../../src/analysis/suggest/verify.ts';
import { buildUnits } from '../../src/analysis/suggest/units.ts';
import type { Observation, Suggestion, Unit } from '../../src/analysis/suggest/types.ts';
import { loadFromObjects } from '../../src/ingest/index.ts';
import { indexCluster, isAllowed } from '../../src/semantics/index.ts';
import { parseIp } from '../../src/net/ip.ts';
import type { Cluster, Endpoint } from '../../src/model/types.ts';
import { clusterArb, SAMPLE_PORTS } from '../helpers/arbitraries.ts';
import { clusterOf, namespace, pod, type Raw } from '../helpers/builders.ts';
import { propertyRuns } from '../helpers/property-runs.ts';

const OUTSIDE = ['8.8.8.8', '10.0.1.77', '2001:db8::99'];

function owned(ns: string, name: string, labels: Record<string, string>, ip: string, owner: string): Raw {
  const p = pod(ns, name, labels, { ips: [ip] });
  (p.metadata as Raw).ownerReferences = [
    { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: owner, controller: true },
  ];
  return p;
}

function endpointNamed(cluster: Cluster, id: string): Endpoint {
  const e = cluster.endpoints.find((x) => `${x.namespace}/${x.name}` === id);
  assert.ok(e, id);
  return e;
}

function unitOfPod(units: readonly Unit[], e: Endpoint): Unit {
  const u = units.find((x) => x.members.includes(e));
  assert.ok(u, e.id);
  return u;
}

void describe('suggest: units', () => {
  void it('selects a workload by its app label, ignoring the labels controllers set per revision', () => {
    const cluster = clusterOf([
      namespace('shop'),
      owned(
        'shop',
        'web-aaa-1',
        { app: 'web', tier: 'front', 'pod-template-hash': 'aaa' },
        '10.0.0.1',
        'web-aaa',
      ),
      owned(
        'shop',
        'web-aaa-2',
        { app: 'web', tier: 'front', 'pod-template-hash': 'aaa' },
        '10.0.0.2',
        'web-aaa',
      ),
      owned(
        'shop',
        'api-bbb-1',
        { app: 'api', tier: 'back', 'pod-template-hash': 'bbb' },
        '10.0.0.3',
        'api-bbb',
      ),
    ]);
    const { units } = buildUnits(cluster.endpoints);
    assert.deepEqual(
      units.map((u) => [u.workloads, u.selector, u.members.length]),
      [
        [['shop/api[Deployment]'], { app: 'api' }, 1],
        [['shop/web[Deployment]'], { app: 'web' }, 2],
      ],
    );
  });

  void it('narrows with a second label when the first selects another workload too', () => {
    const cluster = clusterOf([
      namespace('shop'),
      owned('shop', 'web-aaa-1', { app: 'web', track: 'stable' }, '10.0.0.1', 'web-aaa'),
      owned('shop', 'canary-ccc-1', { app: 'web', track: 'canary' }, '10.0.0.2', 'canary-ccc'),
    ]);
    const { units } = buildUnits(cluster.endpoints);
    assert.deepEqual(
      units.map((u) => u.selector),
      [
        { app: 'web', track: 'canary' },
        { app: 'web', track: 'stable' },
      ],
    );
  });

  void it('merges workloads no labels tell apart, and says so', () => {
    const cluster = clusterOf([
      namespace('shop'),
      owned('shop', 'a-1', { app: 'same' }, '10.0.0.1', 'a-x'),
      owned('shop', 'b-1', { app: 'same' }, '10.0.0.2', 'b-x'),
      owned('shop', 'c-1', { app: 'other' }, '10.0.0.3', 'c-x'),
    ]);
    const a = endpointNamed(cluster, 'shop/a-1');
    const c = endpointNamed(cluster, 'shop/c-1');
    const s = suggestPolicies(
      cluster,
      [{ src: endpoint(c), dst: endpoint(a), protocol: 'TCP', port: 80, count: 1 }],
      [],
    );
    const merged = s.units.find((u) => u.workloads.length > 1);
    assert.deepEqual(merged?.workloads, ['shop/a-x[ReplicaSet]', 'shop/b-x[ReplicaSet]']);
    assert.deepEqual(merged?.selector, { app: 'same' });
    assert.ok(
      s.generalised.some(
        (g) => g.kind === 'merged' && g.text.includes('shop/a-x[ReplicaSet], shop/b-x[ReplicaSet]'),
      ),
    );
    assert.equal(s.verification.exact, true);
  });
});

function endpoint(e: Endpoint): Observation['src'] {
  return { kind: 'endpoint', endpoint: e };
}

/** The connections the random cluster allows, among pods with a subset of sample ports, and to a few addresses outside. */
function allowedObservations(cluster: Cluster, pick: (i: number) => boolean): Observation[] {
  const index = indexCluster(cluster);
  const pods = cluster.endpoints.filter((e) => !e.hostNetwork);
  const out: Observation[] = [];
  let i = 0;
  for (const src of pods) {
    const targets: Observation['dst'][] = [
      ...pods.map(endpoint),
      ...OUTSIDE.map((text) => {
        const parsed = parseIp(text);
        assert.ok(parsed.ok);
        return { kind: 'ip' as const, ip: parsed.value, text };
      }),
    ];
    for (const dst of targets)
      for (const [port, protocol] of SAMPLE_PORTS) {
        if (!pick(i++)) continue;
        const dstAddress = dst.kind === 'endpoint' ? dst : { kind: 'ip' as const, ip: dst.ip };
        if (isAllowed(index, { src: endpoint(src), dst: dstAddress, protocol, port }))
          out.push({ src: endpoint(src), dst, protocol, port, count: 1 });
      }
  }
  return out;
}

/** Every pod pair and sample port (and the outside addresses) under the suggestion alone, against the observations at unit granularity. */
function disagreements(cluster: Cluster, s: Suggestion, observations: readonly Observation[]): string[] {
  const decoded = loadFromObjects(s.policies.map((p) => p.object));
  assert.deepEqual(
    decoded.diagnostics.filter((d) => d.severity !== 'info'),
    [],
  );
  const suggested = indexCluster({ ...cluster, policies: decoded.cluster.policies, clusterPolicies: [] });
  const pods = cluster.endpoints.filter((e) => !e.hostNetwork);
  const unitOf = new Map(pods.map((p) => [p, unitOfPod(s.units, p)]));
  // A pod to itself needs no policy (its packets stay in its namespace): neither seen nor judged.
  const notSelf = (o: Observation): boolean =>
    !(o.src.kind === 'endpoint' && o.dst.kind === 'endpoint' && o.src.endpoint === o.dst.endpoint);
  const seen = new Set(
    observations.filter(notSelf).map((o) => {
      const src = o.src.kind === 'endpoint' ? (unitOf.get(o.src.endpoint) as Unit).id : o.src.text;
      const dst = o.dst.kind === 'endpoint' ? (unitOf.get(o.dst.endpoint) as Unit).id : o.dst.text;
      return `${src}>${dst}:${o.protocol}/${o.port}`;
    }),
  );
  const wrong: string[] = [];
  for (const src of pods) {
    const from = (unitOf.get(src) as Unit).id;
    for (const [port, protocol] of SAMPLE_PORTS) {
      for (const dst of pods) {
        if (dst === src) continue;
        const to = (unitOf.get(dst) as Unit).id;
        const got = isAllowed(suggested, { src: endpoint(src), dst: endpoint(dst), protocol, port });
        // A pair sharing no address family never connects, whatever its unit saw.
        const want =
          seen.has(`${from}>${to}:${protocol}/${port}`) &&
          isAllowed(indexCluster({ ...cluster, policies: [], clusterPolicies: [] }), {
            src: endpoint(src),
            dst: endpoint(dst),
            protocol,
            port,
          });
        if (got !== want)
          wrong.push(`${src.id} → ${dst.id} ${protocol}/${port}: ${got ? 'allowed' : 'denied'}`);
      }
      for (const text of OUTSIDE) {
        const parsed = parseIp(text);
        assert.ok(parsed.ok);
        const got = isAllowed(suggested, {
          src: endpoint(src),
          dst: { kind: 'ip', ip: parsed.value },
          protocol,
          port,
        });
        const want =
          seen.has(`${from}>${text}:${protocol}/${port}`) &&
          src.ips.some((ip) => ip.family === parsed.value.family);
        if (got !== want && !(src.ips.length === 0 && got))
          wrong.push(`${src.id} → ${text} ${protocol}/${port}: ${got ? 'allowed' : 'denied'}`);
      }
    }
  }
  return wrong;
}

void describe('suggest: exact on random clusters', () => {
  void it('lets through exactly the connections seen (by workload), and says it verified so', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 7, maxPolicies: 4 }), fc.func(fc.boolean()), (objects, pick) => {
        const cluster = loadFromObjects(objects).cluster;
        const observations = allowedObservations(cluster, (i) => pick(i));
        const s = suggestPolicies(cluster, observations, [], { dns: false });
        assert.deepEqual(disagreements(cluster, s, observations), []);
        assert.equal(s.verification.exact, true, JSON.stringify(s.verification.mismatches));
        // The text reads back as the objects verified, in YAML 1.2 and as kubectl's 1.1 reads it.
        const text = suggestionYaml(s, 'flows');
        for (const version of ['1.1', '1.2'] as const)
          assert.deepEqual(
            parseAllDocuments(text, { version }).map((d) => d.toJS() as unknown),
            s.policies.map((p) => p.object),
          );
      }),
      { numRuns: propertyRuns(60), seed: 20261129 },
    );
  });

  void it('keeps DNS to kube-dns working, and its verification expects it', () => {
    fc.assert(
      fc.property(clusterArb({ maxPods: 5, maxPolicies: 2 }), fc.func(fc.boolean()), (objects, pick) => {
        const dns = pod('kube-system', 'coredns-1', { 'k8s-app': 'kube-dns' }, { ips: ['10.9.9.9'] });
        const cluster = loadFromObjects([...objects, namespace('kube-system'), dns]).cluster;
        const observations = allowedObservations(cluster, (i) => pick(i));
        const s = suggestPolicies(cluster, observations, []);
        assert.equal(s.verification.exact, true, JSON.stringify(s.verification.mismatches));
        const decoded = loadFromObjects(s.policies.map((p) => p.object)).cluster;
        const index = indexCluster({ ...cluster, policies: decoded.policies, clusterPolicies: [] });
        const server = endpointNamed(cluster, 'kube-system/coredns-1');
        for (const src of cluster.endpoints.filter(
          (e) => !e.hostNetwork && e.ips.some((ip) => ip.family === 4),
        ))
          assert.ok(
            isAllowed(index, { src: endpoint(src), dst: endpoint(server), protocol: 'UDP', port: 53 }),
            src.id,
          );
      }),
      { numRuns: propertyRuns(20), seed: 20261130 },
    );
  });
});

void describe('suggest: verification', () => {
  const objects: Raw[] = [
    namespace('a'),
    namespace('b'),
    owned('a', 'web-1', { app: 'web' }, '10.0.0.1', 'web-x'),
    owned('a', 'web-2', { app: 'web' }, '10.0.0.2', 'web-x'),
    owned('b', 'db-1', { app: 'db' }, '10.0.1.1', 'db-x'),
  ];
  const cluster = clusterOf(objects);
  const web1 = endpointNamed(cluster, 'a/web-1');
  const db = endpointNamed(cluster, 'b/db-1');
  const observations: Observation[] = [
    { src: endpoint(web1), dst: endpoint(db), protocol: 'TCP', port: 5432, count: 3 },
  ];

  void it('says what it generalised: both web pods by app=web', () => {
    const s = suggestPolicies(cluster, observations, [], { dns: false });
    assert.equal(s.verification.exact, true);
    assert.ok(
      s.generalised.some((g) => g.text === 'a/web-1, web-2 → app=web'),
      JSON.stringify(s.generalised),
    );
  });

  void it('finds a set that allows more, or less, than was seen', () => {
    const s = suggestPolicies(cluster, observations, [], { dns: false });
    const { units, unitOf } = buildUnits(cluster.endpoints);
    const pairs = new Map([
      [(unitOf.get(web1) as Unit).id, new Map([[(unitOf.get(db) as Unit).id, new Set(['TCP/5432'])]])],
    ]);
    const verify = (policies: Suggestion['policies']) =>
      verifySuggestion({
        cluster,
        policies,
        units,
        unitOf,
        pairs,
        inScope: () => true,
        dns: false,
        prohibitions: [],
      });
    assert.equal(verify(s.policies).exact, true);
    // Without the namespaces' default deny, everything else is open.
    const open = verify(
      s.policies.filter((p) => (p.object.metadata as { name: string }).name !== 'default-deny'),
    );
    assert.equal(open.exact, false);
    assert.ok(open.mismatches.some((m) => m.extra !== ''));
    // Without db's ingress rule, the connection seen is cut.
    const cut = verify(s.policies.filter((p) => (p.object.metadata as { name: string }).name !== 'db-x'));
    assert.equal(cut.exact, false);
    assert.deepEqual(
      cut.mismatches.map((m) => [m.from, m.to, m.missing]),
      [['a/web-x[ReplicaSet]', 'b/db-x[ReplicaSet]', 'TCP 5432']],
    );
  });

  void it('writes nothing for a pod seen talking to itself — that would open its workload to itself', () => {
    const s = suggestPolicies(
      cluster,
      [{ src: endpoint(web1), dst: endpoint(web1), protocol: 'TCP', port: 80, count: 1 }],
      [],
      {
        dns: false,
      },
    );
    assert.equal(s.verification.exact, true);
    assert.deepEqual(
      s.policies.map((p) => (p.object.metadata as { name: string }).name),
      ['default-deny', 'default-deny'],
    );
  });

  void it('reports an allowed: false expectation the suggestion allows', () => {
    const web2 = endpointNamed(cluster, 'a/web-2');
    const s = suggestPolicies(cluster, observations, [
      { src: endpoint(web2), dst: endpoint(db), protocol: 'TCP', port: 5432 },
    ]);
    assert.equal(s.verification.exact, false);
    assert.deepEqual(s.verification.violated, ['a/web-2 → b/db-1 TCP/5432 is allowed']);
  });
});
