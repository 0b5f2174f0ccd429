/**
 * Staged policy in the lab with a control plane, on either datapath: candidate policies marked
 * `palisade.dev/staged` go through the reflector and etcd to the agents, which enforce nothing of
 * them (on nftables the node's ruleset stays byte for byte what it was) and report, per flow,
 * what they would change. Then the same policies are enforced (the mark removed) and every probe
 * is run again: the connections that stop passing are exactly the staged would-deny list, and
 * those that start passing exactly the would-newly-allow list.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { it } from 'node:test';
import type { FlowRecord } from '../../src/flows/index.ts';
import { loadCluster } from '../../src/ingest/index.ts';
import { STAGED_ANNOTATION } from '../../src/model/types.ts';
import { probeLab, type ControlPlaneLab, type ProbePort, type ProbeResult } from '../../src/lab/index.ts';
import { REALIZE_MS, ROOT } from './lab-control-plane-shared.ts';
import { flowLab, sleep } from './lab-flows-shared.ts';

const STAGED = join(ROOT, 'examples/staged/monitoring.yaml');
const PORTS: ProbePort[] = [
  { port: 53, protocol: 'UDP' },
  { port: 8080, protocol: 'TCP' },
  { port: 5432, protocol: 'TCP' },
];

type Raw = { metadata: { annotations?: Record<string, string> } & Record<string, unknown> };

/** The staged example's objects, with or without their staged mark. */
async function candidates(marked: boolean): Promise<object[]> {
  const loaded = await loadCluster([STAGED]);
  return loaded.rawObjects.map((r) => {
    const object = r.value as Raw;
    if (marked) return object;
    const { [STAGED_ANNOTATION]: _mark, ...annotations } = object.metadata.annotations ?? {};
    return { ...object, metadata: { ...object.metadata, annotations } };
  });
}

const key = (from: string | undefined, to: string | undefined, protocol: string, port: number): string =>
  `${from} → ${to} ${protocol}/${port}`;
const probeKey = (p: ProbeResult): string => key(p.from, p.to, p.protocol, p.port);
const flowKey = (r: FlowRecord): string => key(r.src.pod, r.dst.pod, r.protocol, r.port);

/** Probe connections (any address family) that passed. */
const passed = (results: readonly ProbeResult[]): Set<string> =>
  new Set(results.filter((r) => r.observed).map(probeKey));

/** Each node's nftables ruleset without counters: what the kernel enforces. */
function rulesets(lab: ControlPlaneLab): string[] {
  return lab.plan.nodes.map((node) =>
    execFileSync('ip', ['netns', 'exec', node.netns, 'nft', '-s', 'list', 'ruleset'], { encoding: 'utf8' }),
  );
}

export function stagedSuite(datapath: 'nftables' | 'ebpf', prefix: string): void {
  const flowing = flowLab(datapath, prefix);

  void it("a staged policy's would-deny list is what enforcing it then denies", async () => {
    const lab = await flowing.up();
    const kernel = datapath === 'nftables' ? rulesets(lab) : undefined;

    await lab.apply(await candidates(true));
    await lab.waitRealized(REALIZE_MS);
    // Realized, and nothing in the kernel moved: staged policies are not enforced.
    if (kernel) assert.deepEqual(rulesets(lab), kernel);
    const staged = await probeLab(lab, PORTS, { timeoutMs: 800 });
    assert.deepEqual(staged.disagreements, []);
    // The agents poll their datapath every 100 ms; a denied probe is settled 250 ms after its last stage.
    await sleep(1500);
    const records = await flowing.flows('--staged');
    assert.ok(records.every((r) => r.staged !== undefined));
    const wouldDeny = new Set(records.filter((r) => r.staged?.verdict === 'denied').map(flowKey));
    const wouldAllow = new Set(
      records
        .filter((r) => r.staged?.verdict === 'allowed')
        .map(flowKey)
        .filter((k) => !wouldDeny.has(k)),
    );
    for (const r of records)
      for (const side of r.staged?.decidedBy ?? [])
        assert.ok(
          [side.policy, ...(side.isolatedBy ?? [])].some(
            (p) => p === 'monitoring/prometheus-egress' || p === 'shop/db-from-monitoring',
          ) || side.outcome !== 'deny',
          `${flowKey(r)}: ${JSON.stringify(side)}`,
        );

    await lab.apply(await candidates(false));
    await lab.waitRealized(REALIZE_MS);
    if (kernel) assert.notDeepEqual(rulesets(lab), kernel);
    const enforced = await probeLab(lab, PORTS, { timeoutMs: 800 });
    assert.deepEqual(enforced.disagreements, []);
    const before = passed(staged.results);
    const after = passed(enforced.results);
    const nowDenied = [...before].filter((k) => !after.has(k)).sort();
    const nowAllowed = [...after].filter((k) => !before.has(k)).sort();
    assert.ok(nowDenied.length > 0 && nowAllowed.length > 0, 'the candidates change something');
    assert.deepEqual([...wouldDeny].sort(), nowDenied);
    assert.deepEqual([...wouldAllow].sort(), nowAllowed);
  });
}
