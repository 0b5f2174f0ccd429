/**
 * The BPF program between the two phases of an update across nodes (root, clang, bpftool): on
 * random clusters, a packet passes only what both the previous and the new policy allow.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { formatIp, type IpAddress } from '../../src/net/ip.ts';
import { PROTOCOL_INDEX } from '../../src/classifier/index.ts';
import { frameOf, PinnedProgram, TC_ACT_OK, type TestPacket } from '../../src/datapaths/ebpf/kernel/index.ts';
import { changesBetween, PolicyPipeline } from '../../src/pipeline/index.ts';
import { ClusterState } from '../../src/state/index.ts';
import { EbpfFleetRenderer, EbpfRenderer, NodeView } from '../../src/datapaths/ebpf/index.ts';
import { clusterArb, SAMPLE_PORTS } from '../helpers/arbitraries.ts';
import { clusterOf, type Raw } from '../helpers/builders.ts';
import { needsEbpf } from '../helpers/ebpf.ts';
import { freshPort, RUNS, twoNodes } from './program-helpers.ts';

const SKIP = needsEbpf('testing the BPF program');

describe('the BPF program during an update across nodes', { skip: SKIP }, () => {
  const { n1, n2 } = twoNodes();

  it('between the two phases of an update across nodes passes nothing the previous or the new policy denies (random clusters)', () => {
    const programs = [n1, n2].map((n) => ({
      from: PinnedProgram.open(n.location, 'from_pod'),
      to: PinnedProgram.open(n.location, 'to_pod'),
    }));
    /** Whole verdicts (both nodes) of first packets between `pairs`, from a judge per side. */
    const verdicts = (
      pairs: readonly { src: IpAddress; dst: IpAddress; where: string }[],
      side: (node: number, direction: 'egress' | 'ingress', packet: TestPacket) => boolean | undefined,
    ): Map<string, boolean> => {
      const out = new Map<string, boolean>();
      for (const { src, dst, where } of pairs)
        for (const [port, protocol] of SAMPLE_PORTS) {
          const packet: TestPacket = { src, dst, protocol, srcPort: freshPort(), dstPort: port };
          let allowed = true;
          for (const node of [0, 1]) {
            allowed &&= side(node, 'egress', packet) ?? true;
            allowed &&= side(node, 'ingress', packet) ?? true;
          }
          out.set(`${where} ${protocol}/${port}`, allowed);
        }
      return out;
    };
    const viewSide =
      (views: readonly NodeView[]) =>
      (node: number, direction: 'egress' | 'ingress', p: TestPacket): boolean | undefined => {
        const view = views[node];
        const [local, remote] = direction === 'egress' ? [p.src, p.dst] : [p.dst, p.src];
        if (!view?.enforces(local)) return undefined;
        return view.side(direction, local, remote, PROTOCOL_INDEX[p.protocol], p.dstPort);
      };
    const kernelSide = (views: readonly NodeView[]) => {
      const enforced = viewSide(views);
      return (node: number, direction: 'egress' | 'ingress', p: TestPacket): boolean | undefined => {
        if (enforced(node, direction, p) === undefined) return undefined;
        const program = programs[node];
        const run = direction === 'egress' ? program?.from : program?.to;
        return run?.run(frameOf(p)).retval === TC_ACT_OK;
      };
    };
    let newlyAllowed = 0;
    let phased = 0;
    try {
      fc.assert(
        fc.property(
          fc.array(clusterArb({ maxPods: 6, maxPolicies: 4, maxClusterPolicies: 2 }), {
            minLength: 2,
            maxLength: 2,
          }),
          ([first, second]) => {
            // The same pods and namespaces, the second draw's policies, and some pods relabelled
            // with the labels of the second draw's pod at their place (groups change members).
            const isPolicy = (o: Raw) => !['Namespace', 'Pod'].includes(String(o.kind));
            const podsOf = (objects: Raw[]) => objects.filter((o) => o.kind === 'Pod');
            const relabel = podsOf(second as Raw[]);
            const before = clusterOf(first as Raw[]);
            const after = clusterOf([
              ...(first as Raw[])
                .map((o) => {
                  const i = podsOf(first as Raw[]).indexOf(o);
                  const labels =
                    i % 2 === 0 ? (relabel[i]?.metadata as { labels?: unknown })?.labels : undefined;
                  return labels ? { ...o, metadata: { ...(o.metadata as object), labels } } : o;
                })
                .filter((o) => !isPolicy(o)),
              ...(second as Raw[]).filter(isPolicy),
            ]);
            const state = new ClusterState();
            const renderers = new Map(
              [n1, n2].map((n, i) => [
                `n${i + 1}`,
                new EbpfRenderer({ state, node: `n${i + 1}`, kernel: n.maps() }),
              ]),
            );
            // Pods that are in both clusters, on the same node with the same addresses.
            const kept = before.endpoints.filter((e) =>
              after.endpoints.some(
                (f) =>
                  f.id === e.id &&
                  f.node === e.node &&
                  f.ips.map(formatIp).join() === e.ips.map(formatIp).join() &&
                  !e.hostNetwork,
              ),
            );
            const pairs = kept.flatMap((a) =>
              kept.flatMap((b) =>
                a.ips.flatMap((src) =>
                  b.ips
                    .filter((dst) => dst.family === src.family && a !== b)
                    .map((dst) => ({ src, dst, where: `${a.id} → ${b.id}` })),
                ),
              ),
            );
            const old = new Map<string, boolean>();
            let between: Map<string, boolean> | undefined;
            let viewsNow: NodeView[] = [];
            const fleet = new EbpfFleetRenderer(renderers, {
              betweenPhases: () => {
                const views = [...renderers.values()].map((r) => new NodeView(r.content()));
                between = verdicts(pairs, kernelSide(viewsNow));
                const fresh = verdicts(pairs, viewSide(views));
                for (const [key, allowed] of between) {
                  if (!allowed) continue;
                  assert.ok(
                    old.get(key),
                    `${key}: allowed between the phases, denied by the previous policy`,
                  );
                  assert.ok(fresh.get(key), `${key}: allowed between the phases, denied by the new policy`);
                }
                // Packets the new policy allows and the previous one denies: where restricting bites.
                newlyAllowed += [...fresh].filter(([key, allowed]) => allowed && !old.get(key)).length;
              },
            });
            const pipeline = new PolicyPipeline({ state, renderers: [fleet] });
            pipeline.apply({ type: 'resync', cluster: before });
            for (const r of renderers.values()) r.settle();
            viewsNow = [...renderers.values()].map((r) => new NodeView(r.content()));
            for (const [key, allowed] of verdicts(pairs, viewSide(viewsNow))) old.set(key, allowed);
            pipeline.applyBatch(changesBetween(before, after));
            for (const r of renderers.values()) r.settle();
            const views = [...renderers.values()].map((r) => new NodeView(r.content()));
            if (between) phased++;
            // After the second phase: the new policy exactly.
            assert.deepEqual(verdicts(pairs, kernelSide(views)), verdicts(pairs, viewSide(views)));
          },
        ),
        { numRuns: Math.max(6, Math.ceil(RUNS / 10)), seed: 20261124 },
      );
    } finally {
      for (const p of programs) {
        p.from.close();
        p.to.close();
      }
    }
    assert.ok(
      phased > 0 && newlyAllowed > 0,
      `${phased} ${newlyAllowed} ` + 'updates ran in two phases and allowed what was denied before',
    );
  });
});
