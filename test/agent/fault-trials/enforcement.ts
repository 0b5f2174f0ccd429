/**
 * Faults that once left a node open while its agent said ready (issue 34), tried as an operator
 * would, with agent processes, a continuous prober and real packets: the datapath edited behind
 * the agent's back, a poison value in a transaction with a real change, a policy's value
 * truncated, etcd killed with SIGKILL in the middle of changes, a burst of 1,000 changes, and a
 * large change while /healthz and the status lease are watched. After each: the kernel equals a
 * fresh render of what etcd holds, no probe got through where no state written so far allows,
 * and the time to converge is noted.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { readStatus } from '../../../src/agent/index.ts';
import { run } from '../../../src/dataplane/index.ts';
import { pinDir } from '../../../src/datapaths/ebpf/kernel/index.ts';
import { routedDevices } from '../../../src/datapaths/ebpf/kernel/attachments.ts';
import { extraPod, ingress, sleep, until, type FaultWorld } from '../fault-world.ts';
import type { Raw } from '../../helpers/builders.ts';
import { askHealth, type HealthAsks } from '../side-processes.ts';
import { check, CONVERGE_MS, currentRevision, STARTUP_MS, type FaultSuite } from './shared.ts';

/**
 * Removes a pin directory the agent may be repairing meanwhile: a pin it puts back between
 * emptying the directory and removing it made rmdir fail (ENOTEMPTY) on a loaded machine, so the
 * removal tries again, removing what is there then.
 */
function removeRepaired(path: string): Promise<void> {
  return rm(path, { recursive: true, maxRetries: 10, retryDelay: 20 });
}

/** A value 200,000 levels deep: it overflowed the decoders' stack. */
const DEEP = '{"a":'.repeat(200_000) + '1' + '}'.repeat(200_000);

/** Deletes the first entry of a pinned map with bpftool (another writer's edit). */
async function deleteFirstEntry(map: string): Promise<void> {
  const dump = JSON.parse((await run('bpftool', ['-j', 'map', 'dump', 'pinned', map])).stdout) as {
    key: string[];
  }[];
  const key = dump[0]?.key;
  assert.ok(key, `${map} has an entry`);
  const deleted = await run('bpftool', [
    'map',
    'delete',
    'pinned',
    map,
    'key',
    'hex',
    ...key.map((b) => b.replace(/^0x/, '')),
  ]);
  assert.equal(deleted.code, 0, deleted.stderr);
}

/** A node's agent's count of differences found and repaired (its /metrics). */
const DRIFT_REPAIRS = 'palisade_agent_drift_repairs_total';

/**
 * Times an out-of-band edit on node-1 to its repair: `edit`, then until node-1's agent counts one
 * more repair than before it (within `boundMs` of the edit), then until every node's datapath
 * equals a fresh render. Returns the ms from the edit to the agent's repair. The repair is seen in
 * the agent's own counter, an HTTP read: seen by reading every node's datapath (a fresh render and
 * three nodes' tables or maps per poll, twice while they differed), it counted the test's reads
 * too — seconds each in CI, where one repair took 15.9 s to be seen.
 */
async function editRepaired(
  w: FaultWorld,
  what: string,
  edit: () => Promise<unknown>,
  boundMs: number,
): Promise<number> {
  const agent = w.agents.get('node-1')!;
  // Read until it answers: a busy agent may not within one read's wait (fault-world.ts ANSWER_MS).
  let before = 0;
  await until(
    "node-1's agent serves /metrics",
    async () => {
      const read = await agent.metric(DRIFT_REPAIRS);
      if (read !== undefined) before = read;
      return read !== undefined;
    },
    30_000,
  ).catch((error: Error) => {
    error.message += `\n${w.logs()}`;
    throw error;
  });
  const started = performance.now();
  await edit();
  await until(
    `${what}: repaired by node-1's agent`,
    async () => {
      const repairs = await agent.metric(DRIFT_REPAIRS);
      return (repairs ?? 0) > before || `${repairs ?? 'no answer'} repairs, ${before} before the edit`;
    },
    boundMs,
  ).catch((error: Error) => {
    error.message += `\n${w.logs()}`;
    throw error;
  });
  const repaired = performance.now() - started;
  await until(`${what}: every datapath equals a fresh render`, () => w.equalsFresh(), CONVERGE_MS);
  return repaired;
}

/**
 * How long every agent's /readyz may take to say what it already knows (the change beside it is
 * enforced): the bound is on three agents answering over HTTP, on a machine where CI's other lane
 * runs. 10 s failed trial 8 once in CI (whether here is not known: the lane's output was cut).
 */
const READY_STATUS_MS = 30_000;

/** Every agent's /readyz body matches `pattern` (with status `status`). */
async function everyReadyz(w: FaultWorld, status: number, pattern: RegExp): Promise<boolean | string> {
  for (const [node, agent] of w.agents) {
    const ready = await agent.readyz();
    if (ready?.status !== status || !pattern.test(ready.body))
      return `${node}: ${ready?.status} ${ready?.body}`;
  }
  return true;
}

/** Registers the enforcement trials in the current suite. */
export function enforcementTrials(suite: FaultSuite): void {
  const { world } = suite;

  if (suite.datapath === 'nftables')
    it('7. the table deleted, made dormant, a rule replaced and a chain flushed by hand: repaired at once', async (t) => {
      const w = await world(t, 'oob');
      await w.converged(await currentRevision(w), STARTUP_MS);
      let stop = w.prober();
      const edits: [string, string[]][] = [
        ['the table deleted', ['delete', 'table', 'inet', 'palisade']],
        ['the table made dormant', ['add', 'table', 'inet', 'palisade', '{ flags dormant; }']],
        [
          'an accept inserted in the forward hook',
          ['insert', 'rule', 'inet', 'palisade', 'forward', 'accept'],
        ],
        ['the pod dispatch flushed', ['flush', 'chain', 'inet', 'palisade', 'pod_ingress']],
      ];
      const violations: string[] = [];
      for (const [what, args] of edits) {
        // An edit by root opens the node until the agent repairs it — that window is what is
        // measured, and the prober rests over it; before and after, nothing may get through.
        violations.push(...(await stop()));
        const ms = await editRepaired(w, what, () => w.nft('node-1', args), 10_000);
        suite.converged(`out-of-band edit: ${what} (from the edit to the agent's repair)`, ms);
        stop = w.prober();
        // A round of probes against the repaired table.
        await sleep(400);
      }
      violations.push(...(await stop()));
      const status = await readStatus(w.store, w.layout);
      const node1 = status.nodes.find((n) => n.node === 'node-1')!;
      assert.ok((node1.record?.driftRepairs ?? 0) >= edits.length, JSON.stringify(node1.record));
      assert.deepEqual(violations, [], 'no connection outside the windows the edits opened');
      assert.deepEqual(await w.disagreements(), []);
    });

  if (suite.datapath === 'ebpf')
    it("7. a pod's link removed, a record deleted, the maps' and the programs' pins removed by hand: repaired", async (t) => {
      const w = await world(t, 'oob');
      await w.converged(await currentRevision(w), STARTUP_MS);
      const node = w.lab.plan.nodes.find((n) => n.name === 'node-1')!;
      const dir = pinDir({ instance: `netns-${node.netns}` });
      const [device] = routedDevices(node.netns, w.podCidrs('node-1'));
      assert.ok(device, 'node-1 has a pod interface');
      const edits: [string, () => Promise<unknown>][] = [
        [
          "a pod's ingress link removed (its program is off the interface)",
          () => rm(join(dir, 'links', `${device}-ingress`)),
        ],
        [
          'an address record deleted from the records map',
          () => deleteFirstEntry(join(dir, 'maps', 'records')),
        ],
        ["the maps' pins removed", () => removeRepaired(join(dir, 'maps'))],
        ["the programs' pins removed", () => removeRepaired(join(dir, 'progs'))],
      ];
      let stop = w.prober();
      const violations: string[] = [];
      for (const [what, edit] of edits) {
        // An edit by root opens (or closes) a pod until the agent repairs it — that window is what
        // is measured, and the prober rests over it; before and after, nothing may get through.
        violations.push(...(await stop()));
        const ms = await editRepaired(w, what, edit, 15_000);
        suite.converged(`out-of-band edit: ${what} (from the edit to the agent's repair)`, ms);
        stop = w.prober();
        await sleep(400);
      }
      violations.push(...(await stop()));
      const status = await readStatus(w.store, w.layout);
      const node1 = status.nodes.find((n) => n.node === 'node-1')!;
      assert.ok((node1.record?.driftRepairs ?? 0) >= edits.length, JSON.stringify(node1.record));
      assert.deepEqual(violations, [], 'no connection outside the windows the edits opened');
      assert.deepEqual(await w.disagreements(), []);
    });

  it('8. a poison pod in one transaction with a restrictive change: the change is enforced, the node degraded', async (t) => {
    const w = await world(t, 'poison');
    await w.converged(await currentRevision(w), STARTUP_MS);
    const stop = w.prober();
    // db admits nobody any more; in the same transaction a pod nested 200,000 levels deep.
    const narrower = ingress('db-from-web', { app: 'db' }, { app: 'nobody' }, 5432);
    const poison = { key: `${w.layout.objects}pod/shop/poison`, value: DEEP };
    const started = performance.now();
    const revision = await w.writeRaw([poison], [narrower]);
    await until('the restrictive change is enforced', () => w.equalsFresh(), CONVERGE_MS);
    suite.converged('a poison value beside a restrictive change', performance.now() - started);
    await until(
      'every agent says it is degraded, naming the key',
      () =>
        everyReadyz(
          w,
          503,
          /degraded: 1 key cannot be read \(.*pod\/shop\/poison: the value is nested deeper/,
        ),
      READY_STATUS_MS,
    );
    assert.deepEqual(await w.disagreements(), []);
    // The pod deleted: ready again at the delete's revision.
    const fixed = (await w.store.txn([], [{ type: 'delete', key: poison.key }])).revision;
    await w.converged(Math.max(fixed, revision), CONVERGE_MS);
    assert.deepEqual(await stop(), []);
  });

  it("9. a policy's value truncated: its last good version stays, nothing opens", async (t) => {
    const w = await world(t, 'trunc');
    await w.converged(await currentRevision(w), STARTUP_MS);
    const stop = w.prober();
    const policy = w.objects.get('NetworkPolicy/shop/db-from-web')!;
    const key = w.key(policy);
    const value = (await w.store.get(key))!.value;
    await w.writeRaw([{ key, value: value.slice(0, value.length / 2) }]);
    await until('every agent is degraded', () => everyReadyz(w, 503, /not valid JSON/), READY_STATUS_MS);
    check(w, w.tablesDiffer() === '', 'the tables still hold the policy');
    assert.deepEqual(await w.disagreements(), [], 'nothing the policy denies gets through');
    const revision = await w.write([policy]);
    suite.converged('a truncated policy, then restored', await w.converged(revision, CONVERGE_MS));
    assert.deepEqual(await stop(), []);
  });

  it('10. etcd killed with SIGKILL in the middle of changes, restarted on its data', async (t) => {
    const w = await world(t, 'kill9');
    await w.converged(await currentRevision(w), STARTUP_MS);
    const stop = w.prober();
    // The states written, oldest first: at the crash an agent may not have received (or realized)
    // the last few writes — on a loaded machine it lags — so what it keeps is one of them.
    const written: Raw[][] = [[...w.objects.values()]];
    for (let i = 0; i < 10; i++) {
      await w.write([extraPod(i, { app: i % 2 ? 'web' : 'other' })]);
      written.push([...w.objects.values()]);
    }
    await w.etcd.crash();
    await sleep(3000);
    const nodes = w.lab.plan.nodes.map((n) => n.name);
    await until(
      'the tables are kept while etcd is gone: each node holds one of the written states',
      () => {
        // Newest first: a node usually holds the last state, and each comparison reads its datapath.
        const lost = nodes.filter(
          (node) => !written.toReversed().some((objects) => w.distance(node, objects) === 0),
        );
        return lost.length === 0 || `${lost.join(', ')} hold none: ${w.tablesDiffer()}`;
      },
      15_000,
    ).catch((error: Error) => check(w, false, error.message));
    await w.etcd.up();
    const revision = await w.write([w.relabel('web-2', { app: 'batch' })]);
    suite.converged('etcd killed with SIGKILL, restarted', await w.converged(revision, CONVERGE_MS));
    assert.deepEqual(await stop(), []);
    assert.deepEqual(await w.disagreements(), []);
  });

  it('11. a burst of 1,000 changes: converged, and never outside a written state', async (t) => {
    const w = await world(t, 'burst');
    await w.converged(await currentRevision(w), STARTUP_MS);
    const stop = w.prober();
    let revision = 0;
    for (let i = 0; i < 1000; i++)
      revision = await w.write([
        i % 10 === 9
          ? w.relabel(`web-${(Math.floor(i / 10) % 2) + 1}`, { app: i % 20 === 19 ? 'web' : 'batch' })
          : extraPod(i % 50, { app: i % 3 ? 'web' : 'other', n: String(i) }),
      ]);
    suite.converged('a burst of 1,000 changes', await w.converged(revision, CONVERGE_MS));
    assert.deepEqual(await stop(), []);
    assert.deepEqual(await w.disagreements(), []);
  });

  it('12. a 6,000-pod change: /healthz keeps answering and the status lease never lapses', async (t) => {
    const w = await world(t, 'large');
    await w.converged(await currentRevision(w), STARTUP_MS);
    const asks = askHealth([...w.agents.values()].map((agent) => agent.listenPort));
    let dead = 0;
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const status = await readStatus(w.store, w.layout);
        dead += status.nodes.filter((n) => n.state !== 'alive').length;
        await sleep(50);
      }
    })();
    const started = performance.now();
    let seen: HealthAsks | undefined;
    try {
      // Three transactions of 2,000 (etcd takes at most 1.5 MiB in one), back to back.
      let revision = 0;
      for (let part = 0; part < 3; part++)
        revision = await w.write(
          Array.from({ length: 2000 }, (_, i) => extraPod(part * 2000 + i, { app: 'web' })).concat(
            part === 2 ? [w.relabel('web-2', { app: 'batch' })] : [],
          ),
        );
      suite.converged('a 6,000-pod change', await w.converged(revision, CONVERGE_MS));
    } finally {
      watching = false;
      await watch;
      // Ended whatever happened: an asker left asking keeps the test file from ever exiting (a
      // clean-clone CI run hung for half an hour after this trial failed).
      seen = await asks().catch(() => undefined);
    }
    assert.ok(seen, 'the /healthz asker reported');
    const { latencies, unanswered } = seen;
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.floor(latencies.length * 0.99)] ?? 0;
    process.stdout.write(
      `# 6,000-pod change realized in ${(performance.now() - started).toFixed(0)} ms; /healthz p99 ${p99.toFixed(0)} ms, max ${latencies.at(-1)?.toFixed(0)} ms over ${latencies.length} asks\n`,
    );
    // Latency is printed, not asserted: on a loaded machine it measures the machine as much as the
    // agents (the benchmark agent-health holds the target). Every ask is answered.
    assert.equal(unanswered, 0, '/healthz answered every ask within 5 s');
    assert.equal(dead, 0, 'the status lease never lapsed');
  });
}
