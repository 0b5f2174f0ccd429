/**
 * `palisade agent` and `palisade status` as processes and commands against a real etcd: JSON log
 * lines, /healthz /readyz /metrics on loopback, `status` in text and JSON, SIGTERM stops the
 * agent gracefully (exit 0, status "stopped"), an unreachable etcd is one line and exit 1,
 * usage errors exit 2.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { createServer, type AddressInfo } from 'node:net';
import { freePort } from '../../src/etcd/index.ts';
import { cli } from '../helpers/cli.ts';
import { needsEtcd, suiteEtcd } from '../live/etcd-fixture.ts';
import { agentArgs, smallCluster, uniqueLayout, writeObjects } from './helpers.ts';
import { palisadeArgv } from '../helpers/executable.ts';
import type { KeyLayout } from '../../src/reflected/index.ts';

describe('palisade agent and palisade status', { skip: needsEtcd }, () => {
  const etcd = suiteEtcd();
  const children: ChildProcess[] = [];
  after(() => {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  /** `palisade agent` on the classifier datapath as a process, killed after the suite if still running. */
  const spawnAgent = (
    layout: KeyLayout,
    extra: readonly string[],
  ): ChildProcessByStdio<null, Readable, Readable> => {
    const child = spawn(
      process.execPath,
      [
        ...palisadeArgv(),
        ...agentArgs({ etcd: etcd.server.endpoint, datapath: 'classifier', layout, extra }),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.push(child);
    return child;
  };

  it('runs as a process: logs JSON, serves health and metrics, reports status, stops on SIGTERM', async () => {
    const layout = uniqueLayout();
    const root = layout.base.replace(/\/v1\/$/, '');
    const revision = await writeObjects(etcd.store, layout, smallCluster());
    const child = spawnAgent(layout, [
      // Port 0, read back from the log: a port chosen free beforehand can be taken by
      // another test's server before the agent binds it (the test then spoke to that server).
      '--listen',
      '127.0.0.1:0',
      '--lease-ttl',
      '2',
      '--status-interval',
      '50',
    ]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));

    let url = '';
    await waitFor(() => {
      url = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(stdout)?.[1] ?? '';
      return Promise.resolve(url !== '');
    }, 'the agent to say where it listens');
    await waitFor(
      async () => (await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200,
      'ready',
      20_000,
    );
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    assert.match(metrics, /palisade_agent_realized_revision\{node="n1",datapath="classifier"\} \d+/);
    assert.match(metrics, /palisade_agent_ready\{node="n1",datapath="classifier"\} 1/);
    assert.match(metrics, /palisade_agent_pipeline_seconds_bucket/);
    assert.match(metrics, /process_resident_memory_bytes/);

    await waitFor(async () => {
      const r = await cli(['status', '--etcd', etcd.server.endpoint, '--prefix', root, '-o', 'json']);
      const parsed = JSON.parse(r.stdout) as {
        nodes: { node: string; state: string; lag?: number; record?: { realizedRevision: number } }[];
      };
      return (
        r.code === 0 &&
        parsed.nodes[0]?.state === 'alive' &&
        parsed.nodes[0].lag === 0 &&
        parsed.nodes[0].record!.realizedRevision >= revision
      );
    }, 'status to show the agent current');
    const text = await cli(['status', '--etcd', etcd.server.endpoint, '--prefix', root]);
    assert.equal(text.code, 0);
    assert.match(text.stdout, /^store revision \d+, policy revision \d+; 1 alive, 0 dead, 0 behind\n/);
    assert.match(text.stdout, /NODE +STATE +PHASE +DATAPATH +REALIZED +LAG/);
    assert.match(text.stdout, /\nn1 +alive +ready +classifier +\d+ +0 /);

    child.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
    const lines = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string; level: number; node: string });
    assert.ok(lines.every((l) => l.node === 'n1' && typeof l.level === 'number'));
    assert.ok(lines.some((l) => l.msg.startsWith('first snapshot realized')));
    assert.ok(lines.some((l) => l.msg.startsWith('stopped')));
    const stopped = await cli(['status', '--etcd', etcd.server.endpoint, '--prefix', root]);
    assert.match(stopped.stdout, /\nn1 +stopped /);
  });

  it('says in one line when it cannot listen, and exits 2 at once', async () => {
    // A port another process holds (seen in the fault suite: a restarted agent's port taken by
    // some connection): one line, no stack, and the realizer's thread does not keep it running.
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as AddressInfo).port;
    try {
      const child = spawnAgent(uniqueLayout(), ['--listen', `127.0.0.1:${port}`]);
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await Promise.race([
        new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c))),
        new Promise<string>((resolve) => setTimeout(() => resolve('still running after 30 s'), 30_000)),
      ]);
      assert.equal(code, 2, stderr);
      assert.match(
        stderr,
        new RegExp(
          `^palisade: cannot serve /healthz on --listen 127\\.0\\.0\\.1:${port}: the address is in use \\(another agent on this node, or another service\\?\\)\n$`,
        ),
      );
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });

  it('says in one line when etcd does not answer, and exits 1', async () => {
    const port = await freePort();
    const result = await cli(['status', '--etcd', `http://127.0.0.1:${port}`]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^palisade: cannot reach etcd at http:\/\/127\.0\.0\.1:\d+: .*\n$/);
  });

  it('refuses bad options with a usage error', async () => {
    const agent = ['agent', '--node', 'n1', '--etcd', 'http://127.0.0.1:1'];
    const bad = await cli([...agent, '--datapath', 'nope']);
    assert.equal(bad.code, 2);
    assert.match(
      bad.stderr,
      /^palisade: --datapath must be one of nftables, ebpf, classifier, vpp-acl, vpptcp, neutron, not "nope"/,
    );
    const neutron = await cli([...agent, '--datapath', 'neutron']);
    assert.equal(neutron.code, 2);
    assert.match(neutron.stderr, /--datapath neutron needs --neutron-url URL/);
    const misplaced = await cli([
      ...agent,
      '--datapath',
      'nftables',
      '--neutron-url',
      'http://127.0.0.1:9696',
    ]);
    assert.equal(misplaced.code, 2);
    assert.match(misplaced.stderr, /--neutron-url and --neutron-network are options of --datapath neutron/);
    const level = await cli([...agent, '--datapath', 'nftables', '--log-level', 'loud']);
    assert.equal(level.code, 2);
    assert.match(
      level.stderr,
      /--log-level must be one of fatal, error, warn, info, debug, trace, silent, not "loud"/,
    );
    const output = await cli(['status', '--etcd', 'http://127.0.0.1:1', '-o', 'yaml']);
    assert.equal(output.code, 2);
    assert.match(output.stderr, /--output must be one of text, json, not "yaml"/);
    const cidr = await cli([...agent, '--datapath', 'nftables', '--pod-cidr', '10.0.0.0/33']);
    assert.equal(cidr.code, 2);
    assert.match(cidr.stderr, /--pod-cidr 10\.0\.0\.0\/33 is not a CIDR/);
    const listen = await cli([
      'agent',
      '--node',
      'n1',
      '--etcd',
      'http://127.0.0.1:1',
      '--datapath',
      'classifier',
      '--listen',
      'nowhere',
    ]);
    assert.equal(listen.code, 2);
    assert.match(listen.stderr, /--listen nowhere: expected host:port/);
  });
});

// A deadline against hangs, not a figure: the agent starts under tsx, which took over 10 s with test
// files running side by side on a loaded machine.
async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
