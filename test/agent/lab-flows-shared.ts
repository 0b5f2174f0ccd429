/**
 * The flow-report suite of the lab with a control plane, on either datapath: every probe's
 * connection is reported by the nodes that judged it, with the kernel's verdict and, for each
 * side, the deciding rule `palisade check -o json` names for that connection; the filters,
 * `--follow` and the verdict metric on the agents' endpoints; `palisade serve --lab` following the
 * same agents shows every record, judged by its own reading of the same manifests alike.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { decidingRule, type FlowRecord } from '../../src/flows/index.ts';
import { loadCluster } from '../../src/ingest/index.ts';
import { loadControlPlaneLab, probeLab, type ControlPlaneLab, type ProbePort } from '../../src/lab/index.ts';
import type { Verdict } from '../../src/semantics/types.ts';
import { flowAgentsOf } from '../../src/cli/commands/flows.ts';
import { startServer } from '../../src/serve/index.ts';
import { cli } from '../helpers/cli.ts';
import { REALIZE_MS, SHOP } from './lab-control-plane-shared.ts';

const PORTS: ProbePort[] = [
  { port: 53, protocol: 'UDP' },
  { port: 8080, protocol: 'TCP' },
  { port: 5432, protocol: 'TCP' },
];

/** GET over a Unix socket: the body. */
function getUnix(socketPath: string, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end();
  });
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A lab with a control plane whose agents log flows, for one suite: `up` makes it (the shop,
 * or the objects given), `flows` runs `palisade flows --lab … -o json`; the lab is taken down and
 * its state directory removed after the suite, whatever happened.
 */
export function flowLab(datapath: 'nftables' | 'ebpf', prefix: string) {
  const stateRoot = mkdtempSync(join(tmpdir(), `palisade-flows-${datapath}-`));
  const name = `${prefix}${process.pid % 100000}`;
  let lab: ControlPlaneLab | undefined;

  after(async () => {
    lab?.close();
    const { ControlPlaneLab } = await loadControlPlaneLab();
    if (existsSync(join(stateRoot, name)))
      await ControlPlaneLab.down(name, { stateRoot }).catch(() => undefined);
    rmSync(stateRoot, { recursive: true, force: true });
  });

  return {
    name,
    stateRoot,
    get lab(): ControlPlaneLab | undefined {
      return lab;
    },
    async up(files: readonly string[] = SHOP): Promise<ControlPlaneLab> {
      const { ControlPlaneLab } = await loadControlPlaneLab();
      const loaded = await loadCluster([...files]);
      lab = await ControlPlaneLab.up(
        name,
        loaded.rawObjects.map((r) => r.value as object),
        loaded.cluster,
        { stateRoot, realizeTimeoutMs: REALIZE_MS, datapath, flowLog: true },
      );
      return lab;
    },
    flows: async (...args: string[]): Promise<FlowRecord[]> => {
      const result = await cli(['flows', '--lab', name, '--state-dir', stateRoot, '-o', 'json', ...args]);
      assert.equal(result.code, 0, result.stderr);
      return result.stdout
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as FlowRecord);
    },
  };
}

export function flowSuite(datapath: 'nftables' | 'ebpf', prefix: string): void {
  const flowing = flowLab(datapath, prefix);
  const { name, stateRoot, flows } = flowing;

  void it("every probe's flow: the kernel's verdict, and the rule check names for each side", async () => {
    const lab = await flowing.up();
    const report = await probeLab(lab, PORTS, { timeoutMs: 800 });
    assert.deepEqual(report.disagreements, []);
    // The agents poll their datapath every 100 ms (eBPF's counts are read two polls after they are made).
    await sleep(1500);
    const records = await flows();
    const problems: string[] = [];
    let checked = 0;
    for (const probe of report.results) {
      const what = `${probe.from} → ${probe.to} ${probe.protocol}/${probe.port}`;
      const mine = records.filter(
        (r) =>
          r.src.pod === probe.from &&
          r.dst.pod === probe.to &&
          r.protocol === probe.protocol &&
          r.port === probe.port,
      );
      if (mine.length === 0) {
        problems.push(`${what}: no flow reported`);
        continue;
      }
      const kernelAllowed = mine.every((r) => r.verdict === 'allowed');
      if (kernelAllowed !== probe.observed)
        problems.push(
          `${what}: flows say ${kernelAllowed ? 'allowed' : 'denied'}, the probe ${probe.observed}`,
        );
      for (const r of mine) if (r.mismatch) problems.push(`${what} [${r.node}]: ${r.mismatch}`);
      const check = await cli([
        'check',
        '-f',
        ...SHOP,
        '--from',
        probe.from,
        '--to',
        probe.to,
        '--port',
        String(probe.port),
        '--protocol',
        probe.protocol,
        '-o',
        'json',
      ]);
      const verdict = (JSON.parse(check.stdout) as { verdict: Verdict }).verdict;
      const reported = new Set<string>();
      for (const r of mine)
        for (const side of r.decidedBy) {
          reported.add(side.direction);
          const expected = decidingRule(verdict[side.direction]);
          if (JSON.stringify(side) !== JSON.stringify(expected))
            problems.push(
              `${what} [${r.node}] ${side.direction}: ${JSON.stringify(side)}, check: ${JSON.stringify(expected)}`,
            );
        }
      // The source's node always judges egress; the destination's judges ingress when egress let it through.
      if (!reported.has('egress')) problems.push(`${what}: no node named its egress side`);
      if (verdict.egress.allowed && !reported.has('ingress'))
        problems.push(`${what}: no node named its ingress side`);
      checked++;
    }
    assert.deepEqual(problems, []);
    assert.ok(checked > 40, `${checked} probes checked`);
    assert.ok(records.some((r) => r.verdict === 'denied') && records.some((r) => r.verdict === 'allowed'));
  });

  void it('filters at the agent; the verdict metric counts by side, verdict and policy', async () => {
    const { lab } = flowing;
    assert.ok(lab);
    const toDb = await flows('--to', 'shop/db-0', '--verdict', 'allowed');
    assert.ok(toDb.length > 0);
    assert.ok(toDb.every((r) => r.dst.pod === 'shop/db-0' && r.verdict === 'allowed'));
    assert.ok(toDb.some((r) => r.src.pod?.startsWith('shop/api') && r.port === 5432));
    const byPolicy = await flows('--policy', 'shop/db');
    assert.ok(byPolicy.length > 0 && byPolicy.every((r) => r.decidedBy.some((d) => d.policy === 'shop/db')));
    const text = await cli([
      'flows',
      '--lab',
      name,
      '--state-dir',
      stateRoot,
      '--to',
      'shop/db-0',
      '--port',
      '5432',
    ]);
    assert.match(
      text.stdout,
      /^ALLOWED shop\/api-\S+ -> shop\/db-0 TCP\/5432 ×\d+ \[node-\d\] {2}.*ingress: allowed by shop\/db ingress\[0\]/m,
    );
    const socket = lab.record.agents.find((a) => a.node === 'node-2')?.socket;
    assert.ok(socket);
    const metrics = await getUnix(socket, '/metrics');
    assert.match(
      metrics,
      /palisade_policy_verdicts_total\{direction="ingress",verdict="allowed",policy="shop\/db",node="node-2",datapath="[a-z]+"\} [1-9]/,
    );
    assert.match(
      metrics,
      /palisade_policy_verdicts_total\{direction="ingress",verdict="denied",policy="isolated",/,
    );
    const usage = await cli(['flows', '--lab', name, '--state-dir', stateRoot, '--port', '0']);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /port must be 1-65535/);
  });

  void it("serve --lab follows the agents: every record on /api/flows, none disagreeing with serve's check", async () => {
    const records = await flows();
    // The agents as `palisade serve --lab NAME --state-dir DIR` resolves them.
    const agents = flowAgentsOf({ lab: name, stateDir: stateRoot });
    const served = await startServer({
      read: () => loadCluster([...SHOP]),
      watch: [],
      semantics: 'v1',
      address: '127.0.0.1',
      port: 0,
      flows: { kind: 'agents', agents },
    });
    try {
      const key = (r: FlowRecord): string =>
        `${r.node} ${r.src.ip} ${r.dst.ip} ${r.protocol}/${r.port} ${r.verdict}`;
      type Served = FlowRecord & { disagreement?: string; check: unknown };
      let answer: { flows: Served[]; problems: unknown[] } = { flows: [], problems: [] };
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline) {
        const response = await fetch(new URL('/api/flows', served.url));
        answer = (await response.json()) as typeof answer;
        if (answer.flows.length >= records.length) break;
        await sleep(100);
      }
      assert.deepEqual(answer.problems, []);
      assert.deepEqual(answer.flows.map(key).sort(), records.map(key).sort());
      assert.deepEqual(
        answer.flows.flatMap((f) => (f.disagreement ? [`${key(f)}: ${f.disagreement}`] : [])),
        [],
      );
      assert.ok(answer.flows.every((f) => f.check !== null));
    } finally {
      await served.close();
    }
  });

  void it('--follow prints a new connection as the agent reports it', async () => {
    const opened = flowing.lab;
    assert.ok(opened);
    const following = cli([
      'flows',
      '--lab',
      name,
      '--state-dir',
      stateRoot,
      '--follow',
      '--for',
      '4',
      '--from',
      'shop/api-5f6b-m9w1c',
      '--port',
      '8443',
      '-o',
      'json',
    ]);
    await sleep(500);
    await probeLab(opened, [{ port: 8443, protocol: 'TCP' }], { timeoutMs: 800 });
    const result = await following;
    assert.equal(result.code, 0, result.stderr);
    const seen = result.stdout
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as FlowRecord);
    assert.ok(
      seen.some((r) => r.dst.pod === 'payments/gateway-6d4f-b7n3v' && r.verdict === 'allowed'),
      result.stdout,
    );
  });
}
