/**
 * The BPF program against the kernel (root, clang, bpftool): loaded and pinned per node, its maps
 * written by the eBPF renderer, and packets run through it with BPF_PROG_TEST_RUN. On random
 * clusters (IPv4, IPv6, ordered cluster policy, tables wider than 64 slots) each side's verdict
 * is the maps' interpreter's and the two nodes' together are the reference evaluator's, whichever
 * parser reads the packet; the upstream AdminNetworkPolicy conformance suite passes. Updates
 * across nodes: program-phases.root.test.ts; connection tracking: program-connections.root.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { join } from 'node:path';
import fc from 'fast-check';
import type { Cluster } from '../../src/model/types.ts';
import { type IpAddress } from '../../src/net/ip.ts';
import { PROTOCOL_INDEX } from '../../src/classifier/index.ts';
import { frameOf, PinnedProgram, TC_ACT_OK, type TestPacket } from '../../src/datapaths/ebpf/kernel/index.ts';
import { changesBetween } from '../../src/pipeline/index.ts';
import { NodeView } from '../../src/datapaths/ebpf/index.ts';
import { clusterArb, SAMPLE_PORTS } from '../helpers/arbitraries.ts';
import { clusterOf, ipOf, namespace, pod, policy, type Raw } from '../helpers/builders.ts';
import { probeAddresses, referenceAllows } from '../helpers/compiled.ts';
import { needsEbpf, nodePipeline } from '../helpers/ebpf.ts';
import { modelObjects, readSuite, walkSteps } from '../helpers/policy-conformance.ts';

const CONFORMANCE = join(import.meta.dirname, '../fixtures/conformance/anp-v1alpha1');
import { freshPort, RUNS, twoNodes, withExtraHeaders } from './program-helpers.ts';

const SKIP = needsEbpf('testing the BPF program');

describe('the BPF program', { skip: SKIP }, () => {
  const { n1, n2, render } = twoNodes();

  it('gives, side by side, the maps’ interpreter’s verdicts and with both nodes the reference’s (random clusters)', () => {
    const programs = [n1, n2].map((n) => ({
      from: PinnedProgram.open(n.location, 'from_pod'),
      to: PinnedProgram.open(n.location, 'to_pod'),
    }));
    try {
      fc.assert(
        fc.property(clusterArb({ maxPods: 6, maxPolicies: 4, maxClusterPolicies: 2 }), (objects) => {
          const cluster = clusterOf(objects);
          const renderers = [...render(cluster).values()];
          const views = renderers.map((r) => new NodeView(r.content()));
          const addresses = probeAddresses(cluster);
          for (const src of addresses)
            for (const dst of addresses) {
              if (src.ip.family !== dst.ip.family) continue;
              for (const [port, protocol] of SAMPLE_PORTS) {
                const where = `${src.label} → ${dst.label} ${protocol}/${port}`;
                let allowed = true;
                const packet: TestPacket = {
                  src: src.ip,
                  dst: dst.ip,
                  protocol,
                  srcPort: freshPort(),
                  dstPort: port,
                };
                views.forEach((view, node) => {
                  const program = programs[node];
                  if (!program) return;
                  const index = PROTOCOL_INDEX[protocol];
                  if (view.enforces(src.ip)) {
                    const kernel = program.from.run(frameOf(packet)).retval === TC_ACT_OK;
                    assert.equal(
                      kernel,
                      view.side('egress', src.ip, dst.ip, index, port),
                      `egress at n${node + 1}: ${where}`,
                    );
                    allowed &&= kernel;
                  }
                  if (view.enforces(dst.ip)) {
                    const kernel = program.to.run(frameOf(packet)).retval === TC_ACT_OK;
                    assert.equal(
                      kernel,
                      view.side('ingress', dst.ip, src.ip, index, port),
                      `ingress at n${node + 1}: ${where}`,
                    );
                    allowed &&= kernel;
                  }
                });
                assert.equal(allowed, referenceAllows(cluster, src.ip, dst.ip, protocol, port), where);
              }
            }
        }),
        { numRuns: Math.max(6, Math.ceil(RUNS / 10)) },
      );
    } finally {
      for (const p of programs) {
        p.from.close();
        p.to.close();
      }
    }
  });

  // Most packets are read in place (parse_direct); IP options and IPv6 extension headers take the
  // copying parser. Both must give the interpreter's verdict, whichever a packet takes.
  it('gives the same verdicts to packets read in place and to packets with IP options or extension headers (random clusters)', () => {
    const programs = [n1, n2].map((n) => ({
      from: PinnedProgram.open(n.location, 'from_pod'),
      to: PinnedProgram.open(n.location, 'to_pod'),
    }));
    try {
      fc.assert(
        fc.property(clusterArb({ maxPods: 5, maxPolicies: 3, maxClusterPolicies: 1 }), (objects) => {
          const cluster = clusterOf(objects);
          const views = [...render(cluster).values()].map((r) => new NodeView(r.content()));
          const addresses = probeAddresses(cluster);
          for (const src of addresses)
            for (const dst of addresses) {
              if (src.ip.family !== dst.ip.family) continue;
              for (const [port, protocol] of SAMPLE_PORTS) {
                const index = PROTOCOL_INDEX[protocol];
                // Each form its own new connection (another source port), so each is judged.
                const frames = () => {
                  const packet = { src: src.ip, dst: dst.ip, protocol, dstPort: port };
                  return [
                    ['in place', frameOf({ ...packet, srcPort: freshPort() })],
                    ['with extra headers', withExtraHeaders(frameOf({ ...packet, srcPort: freshPort() }))],
                  ] as const;
                };
                views.forEach((view, node) => {
                  const program = programs[node];
                  if (!program) return;
                  const where = `n${node + 1}: ${src.label} → ${dst.label} ${protocol}/${port}`;
                  if (view.enforces(src.ip)) {
                    const expected = view.side('egress', src.ip, dst.ip, index, port);
                    for (const [form, frame] of frames())
                      assert.equal(
                        program.from.run(frame).retval === TC_ACT_OK,
                        expected,
                        `egress, ${form}, ${where}`,
                      );
                  }
                  if (view.enforces(dst.ip)) {
                    const expected = view.side('ingress', dst.ip, src.ip, index, port);
                    for (const [form, frame] of frames())
                      assert.equal(
                        program.to.run(frame).retval === TC_ACT_OK,
                        expected,
                        `ingress, ${form}, ${where}`,
                      );
                  }
                });
              }
            }
        }),
        { numRuns: Math.max(4, Math.ceil(RUNS / 25)) },
      );
    } finally {
      for (const p of programs) {
        p.from.close();
        p.to.close();
      }
    }
  });

  /**
   * Tables wider than 64 slots, where a lookup walks the summaries and reads words: a db on n1
   * with 65–300 NetworkPolicy rules (and up to two ANPs of up to 100 rules each: a wide tier
   * table, whose lowest matching slot decides) over eight client pods on n2. Few peers and ports
   * among many rules put an entry's bits in many words — more than an entry holds, so words past
   * its fourth come from `bits`. A monitor pod is let in by every 64th rule, on that rule's port
   * and on 8000 + i/64 of its own: its entry has a bit in each of those words, and only word
   * i/64 lets it in on 8000 + i/64 — on 8004, a word its entry does not hold.
   */
  it('gives the interpreter’s and the reference’s verdicts on tables wider than 64 slots (random, words beyond an entry’s four)', () => {
    const CLIENTS = 8;
    const peerArb = fc.record({
      kind: fc.constantFrom('pod', 'pod', 'block', 'except'),
      k: fc.nat(CLIENTS - 1),
    });
    const portArb = fc.nat(5).map((p) => 7000 + p);
    const wideArb = fc.record({
      rules: fc.array(
        fc.record({ peers: fc.array(peerArb, { minLength: 1, maxLength: 3 }), port: portArb }),
        {
          minLength: 65,
          maxLength: 300,
          size: 'max', // lengths over the whole range: past 256 rules an entry has more than four words
        },
      ),
      anps: fc.array(
        fc.array(
          fc.record({
            action: fc.constantFrom('Allow', 'Deny', 'Pass'),
            k: fc.nat(CLIENTS - 1),
            port: portArb,
          }),
          { minLength: 1, maxLength: 100, size: 'max' },
        ),
        { maxLength: 2 },
      ),
    });
    const clientIp = (k: number) => `10.1.0.${k + 1}`;
    const MONITOR = '10.2.0.1';
    const PORTS = [7000, 7001, 7002, 7003, 7004, 7005, 7006, 8000, 8001, 8002, 8003, 8004];
    const peer = ({ kind, k }: { kind: string; k: number }): Raw =>
      kind === 'pod'
        ? { podSelector: { matchLabels: { app: `c${k}` } } }
        : kind === 'block'
          ? { ipBlock: { cidr: `${clientIp(k)}/32` } }
          : { ipBlock: { cidr: '10.1.0.0/24', except: [`${clientIp(k)}/32`] } };
    const programs = [n1, n2].map((n) => ({
      from: PinnedProgram.open(n.location, 'from_pod'),
      to: PinnedProgram.open(n.location, 'to_pod'),
    }));
    let wide = 0;
    let spilled = 0;
    try {
      fc.assert(
        fc.property(wideArb, ({ rules, anps }) => {
          const objects: Raw[] = [
            namespace('a'),
            pod('a', 'db', { app: 'db' }, { ips: ['10.0.0.1'], node: 'n1' }),
          ];
          for (let k = 0; k < CLIENTS; k++)
            objects.push(pod('a', `c${k}`, { app: `c${k}` }, { ips: [clientIp(k)], node: 'n2' }));
          objects.push(pod('a', 'monitor', { app: 'monitor' }, { ips: [MONITOR], node: 'n2' }));
          const monitor = { podSelector: { matchLabels: { app: 'monitor' } } };
          objects.push(
            policy('a', 'db', {
              podSelector: { matchLabels: { app: 'db' } },
              ingress: rules.map((r, i) =>
                i % 64 === 0
                  ? {
                      from: [...r.peers.map(peer), monitor],
                      ports: [{ port: r.port }, { port: 8000 + i / 64 }],
                    }
                  : { from: r.peers.map(peer), ports: [{ port: r.port }] },
              ),
            }),
          );
          anps.forEach((anp, i) =>
            objects.push({
              apiVersion: 'policy.networking.k8s.io/v1alpha1',
              kind: 'AdminNetworkPolicy',
              metadata: { name: `anp${i}` },
              spec: {
                priority: 10 + i,
                subject: { pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'db' } } } },
                ingress: anp.map((r, j) => ({
                  name: `r${j}`,
                  action: r.action,
                  from: [
                    { pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: `c${r.k}` } } } },
                  ],
                  ports: [{ portNumber: { protocol: 'TCP', port: r.port } }],
                })),
              },
            }),
          );
          const cluster = clusterOf(objects);
          const renderers = [...render(cluster).values()];
          const views = renderers.map((r) => new NodeView(r.content()));
          const n1Tables = renderers[0]?.content().tables ?? [];
          if (n1Tables.some((t) => t.entries.words > 1)) wide++;
          if (n1.maps().entries('bits').length > 0) spilled++;
          const db = ipOf('10.0.0.1');
          for (let k = 0; k <= CLIENTS; k++)
            for (const port of PORTS) {
              const src = ipOf(k < CLIENTS ? clientIp(k) : MONITOR);
              const packet: TestPacket = {
                src,
                dst: db,
                protocol: 'TCP',
                srcPort: freshPort(),
                dstPort: port,
              };
              const where = `${k < CLIENTS ? `c${k}` : 'monitor'} → db TCP/${port}`;
              const egress = programs[1]?.from.run(frameOf(packet)).retval === TC_ACT_OK;
              assert.equal(
                egress,
                views[1]?.side('egress', src, db, PROTOCOL_INDEX.TCP, port),
                `egress: ${where}`,
              );
              const ingress = programs[0]?.to.run(frameOf(packet)).retval === TC_ACT_OK;
              assert.equal(
                ingress,
                views[0]?.side('ingress', db, src, PROTOCOL_INDEX.TCP, port),
                `ingress: ${where}`,
              );
              assert.equal(egress && ingress, referenceAllows(cluster, src, db, 'TCP', port), where);
            }
        }),
        {
          numRuns: Math.max(4, Math.ceil(RUNS / 25)),
          endOnFailure: true,
          // Run first, so the words past an entry's four are always exercised: 300 rules put the
          // monitor (in every 64th rule) in five words. Drawn at random, a run has more than 256
          // rules one time in five, and a few runs often had none.
          examples: [
            [
              {
                rules: Array.from({ length: 300 }, (_, i) => ({
                  peers: [{ kind: 'pod' as const, k: i % CLIENTS }],
                  port: 7000 + (i % 6),
                })),
                anps: [],
              },
            ],
          ],
        },
      );
    } finally {
      for (const p of programs) {
        p.from.close();
        p.to.close();
      }
    }
    assert.ok(wide > 0 && spilled > 0, `wide tables in ${wide} runs, words in bits in ${spilled}`);
  });

  it('passes every check of the upstream AdminNetworkPolicy conformance suite (SCTP and host-networked pods too)', (t) => {
    const { model, cases } = readSuite(CONFORMANCE);
    const programs = [n1, n2].map((n) => ({
      from: PinnedProgram.open(n.location, 'from_pod'),
      to: PinnedProgram.open(n.location, 'to_pod'),
    }));
    const failures: string[] = [];
    let checked = 0;
    // One pipeline per node for the whole suite: each step is an incremental update.
    const nodes = ['conformance-node-1', 'conformance-node-2'].map((node, i) =>
      nodePipeline(node, (i === 0 ? n1 : n2).maps()),
    );
    let previous: Cluster | undefined;
    try {
      for (const kase of cases)
        for (const { step, policies, namespaceLabels, podLabels } of walkSteps(model, kase)) {
          const cluster = clusterOf(modelObjects(model, namespaceLabels, podLabels, policies));
          for (const { pipeline } of nodes)
            if (previous) pipeline.applyBatch(changesBetween(previous, cluster));
            else pipeline.apply({ type: 'resync', cluster });
          previous = cluster;
          const views = nodes.map(({ renderer }) => new NodeView(renderer.content()));
          const v4 = (id: string) =>
            cluster.endpoints.find((e) => e.id === id)?.ips.find((ip) => ip.family === 4) as IpAddress;
          for (const check of step.checks ?? []) {
            const packet: TestPacket = {
              src: v4(check.from),
              dst: v4(check.to),
              protocol: check.protocol,
              srcPort: freshPort(),
              dstPort: check.port,
            };
            let allowed = true;
            views.forEach((view, node) => {
              const program = programs[node];
              if (program && view.enforces(packet.src))
                allowed &&= program.from.run(frameOf(packet)).retval === TC_ACT_OK;
              if (program && view.enforces(packet.dst))
                allowed &&= program.to.run(frameOf(packet)).retval === TC_ACT_OK;
            });
            checked++;
            if (allowed !== (check.expect === 'allow'))
              failures.push(
                `${kase.file} "${step.subtest}": ${check.from} → ${check.to} ${check.protocol}/${check.port} expected ${check.expect}`,
              );
          }
        }
    } finally {
      for (const { renderer } of nodes) renderer.settle();
      for (const p of programs) {
        p.from.close();
        p.to.close();
      }
    }
    t.diagnostic(`${checked} checks through the program`);
    assert.deepEqual(failures, []);
    assert.equal(checked, 289);
  });
});
