/**
 * The agent runs as an unprivileged user with only the capabilities it needs (issue 34, finding
 * 7): `setpriv` starts it as uid 65534 with CAP_NET_ADMIN (and CAP_SYS_ADMIN for `--netns`) in
 * its ambient set and nothing else in its bounding set. With its locks under a `--run-dir` it may
 * write, it realizes the cluster, repairs a deleted table and holds no other capability. Where it
 * may not write its run directory it says so in one line, without a stack trace.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../../src/dataplane/index.ts';
import { readStatus } from '../../src/agent/index.ts';
import { needsEtcd, suiteEtcd } from '../live/etcd-fixture.ts';
import { needsRoot, scratchNetns } from '../helpers/kernel.ts';
import { palisadeArgv } from '../helpers/executable.ts';
import { agentArgs, distanceFromFresh, smallCluster, uniqueLayout, writeObjects } from './helpers.ts';
import { connectEtcd, startEtcd, type EtcdStore } from '../../src/etcd/index.ts';
import type { KeyLayout } from '../../src/reflected/index.ts';
import type { Raw } from '../helpers/builders.ts';
import { parseCidr } from '../../src/net/ip.ts';

const NOBODY = 65534;
const setprivMissing = !existsSync('/usr/bin/setpriv') && 'skipped: needs setpriv (util-linux)';
const skip = needsEtcd || needsRoot('the unprivileged agent test') || setprivMissing;
const POD_CIDRS = [parseCidr('10.1.0.0/24')].map((r) => (r.ok ? r.value : assert.fail('cidr')));

/** CAP_NET_ADMIN is bit 12, CAP_SYS_ADMIN bit 21. */
const NET_ADMIN = 1n << 12n;
const SYS_ADMIN = 1n << 21n;

/** `setpriv` arguments: uid/gid 65534, no groups, exactly `caps` ambient and bounding. */
function unprivileged(caps: readonly string[]): string[] {
  const list = caps.map((c) => `+${c}`).join(',');
  return [
    'setpriv',
    `--reuid=${NOBODY}`,
    `--regid=${NOBODY}`,
    '--clear-groups',
    `--inh-caps=-all,${list}`,
    `--ambient-caps=-all,${list}`,
    `--bounding-set=-all,${list}`,
    '--',
  ];
}

/** The test bundle's directory is private to root: the unprivileged agent must read it. */
function shareBundle(): void {
  const bundle = process.env.PALISADE_BUNDLE_DIR;
  if (bundle) chmodSync(bundle, 0o755);
}

/** Starts `palisade agent` through `prefix` (setpriv, maybe inside `ip netns exec`); output collected. */
function startAgent(
  prefix: readonly string[],
  args: readonly string[],
  home: string,
): { child: ChildProcess; output: () => string } {
  let output = '';
  const child = spawn(prefix[0]!, [...prefix.slice(1), process.execPath, ...palisadeArgv(), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    // tsx, when the sources run, keeps its cache per user in the temp directory.
    env: { ...process.env, HOME: home },
  });
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

/** Waits until the agent's status says it realized `revision`, ready. */
async function untilReady(
  layout: KeyLayout,
  store: EtcdStore,
  revision: number,
  agent: ReturnType<typeof startAgent>,
): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const record = (await readStatus(store, layout)).nodes[0]?.record;
    if (record && record.realizedRevision >= revision && record.phase === 'ready') return;
    if (agent.child.exitCode !== null || Date.now() > deadline)
      assert.fail(`the agent did not realize:\n${agent.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Waits until the namespace's table is a fresh render again after `edit`. */
async function repairedAfter(
  netns: string,
  edit: string[],
  objects: readonly Raw[],
  agent: ReturnType<typeof startAgent>,
): Promise<void> {
  await run('ip', ['netns', 'exec', netns, 'nft', ...edit]);
  const deadline = Date.now() + 10_000;
  while (distanceFromFresh(netns, objects, 'n1', POD_CIDRS) !== 0) {
    if (Date.now() > deadline) assert.fail(`the table was not repaired:\n${agent.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function stopped(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  child.kill('SIGTERM');
  return new Promise((resolve) => child.once('exit', resolve));
}

function capEff(pid: number): bigint {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('CapEff:'));
  return BigInt(`0x${line!.split(/\s+/)[1]}`);
}

describe('the agent as an unprivileged user', { skip }, () => {
  const etcd = suiteEtcd();
  const netns = skip ? 'unused' : scratchNetns('pal-nonroot');
  const temp = mkdtempSync(join(tmpdir(), 'palisade-nonroot-'));
  // The unprivileged agent goes through it to its run directory, and tsx's cache lives in it.
  chmodSync(temp, 0o711);
  const children: ChildProcess[] = [];
  after(async () => {
    for (const child of children) if (child.signalCode === null) await stopped(child);
    rmSync(temp, { recursive: true, force: true });
  });

  it('with CAP_NET_ADMIN and CAP_SYS_ADMIN only, enforces and repairs a namespace given by --netns', async () => {
    shareBundle();
    const layout = uniqueLayout();
    const objects = smallCluster();
    const revision = await writeObjects(etcd.store, layout, objects);
    const runDir = join(temp, 'run');
    await run('mkdir', ['-m', '0700', runDir]);
    chownSync(runDir, NOBODY, NOBODY);
    const agent = startAgent(
      unprivileged(['net_admin', 'sys_admin']),
      agentArgs({
        etcd: etcd.server.endpoint,
        datapath: 'nftables',
        layout,
        extra: [
          '--netns',
          netns,
          '--pod-cidr',
          '10.1.0.0/24',
          '--run-dir',
          runDir,
          '--listen',
          'off',
          '--status-interval',
          '50',
        ],
      }),
      temp,
    );
    children.push(agent.child);
    await untilReady(layout, etcd.store, revision, agent);
    assert.equal(distanceFromFresh(netns, objects, 'n1', POD_CIDRS), 0);
    // The node process (setpriv execs it) holds exactly those two capabilities, as uid 65534.
    const pid = agent.child.pid!;
    assert.match(
      readFileSync(`/proc/${pid}/status`, 'utf8'),
      new RegExp(`\\nUid:\\s+${NOBODY}\\s+${NOBODY}`),
    );
    assert.equal(capEff(pid), NET_ADMIN | SYS_ADMIN);
    assert.ok(existsSync(join(runDir, 'datapath', `${netns}.lock`)), 'its lock is under --run-dir');
    // The kernel's notifications reach it too: a deleted table comes back.
    await repairedAfter(netns, ['delete', 'table', 'inet', 'palisade'], objects, agent);
    assert.equal(await stopped(agent.child), 0, agent.output());
    assert.ok(!existsSync(join(runDir, 'datapath', `${netns}.lock`)), 'the lock is gone after a stop');
  });

  it('in its own network namespace, with CAP_NET_ADMIN alone', async () => {
    shareBundle();
    // Loopback in the namespace is not the host's: etcd is reached on a unix socket anyone may use.
    const dir = mkdtempSync(join(temp, 'etcd-'));
    chmodSync(dir, 0o755);
    const server = await startEtcd({ unixSocket: join(dir, 'etcd.sock:0') });
    const store = await connectEtcd({ endpoints: [server.endpoint] });
    after(async () => {
      store.close();
      await server.stop();
    });
    chmodSync(join(dir, 'etcd.sock:0'), 0o666);
    const layout = uniqueLayout();
    const objects = smallCluster();
    const revision = await writeObjects(store, layout, objects);
    const runDir = join(temp, 'run-own');
    await run('mkdir', ['-m', '0700', runDir]);
    chownSync(runDir, NOBODY, NOBODY);
    const agent = startAgent(
      ['ip', 'netns', 'exec', netns, ...unprivileged(['net_admin'])],
      agentArgs({
        etcd: `unix://${join(dir, 'etcd.sock:0')}`,
        datapath: 'nftables',
        layout,
        extra: [
          '--pod-cidr',
          '10.1.0.0/24',
          '--run-dir',
          runDir,
          '--listen',
          'off',
          '--status-interval',
          '50',
        ],
      }),
      temp,
    );
    children.push(agent.child);
    await untilReady(layout, store, revision, agent);
    assert.equal(distanceFromFresh(netns, objects, 'n1', POD_CIDRS), 0);
    assert.equal(capEff(agent.child.pid!), NET_ADMIN);
    await repairedAfter(netns, ['add', 'table', 'inet', 'palisade', '{ flags dormant; }'], objects, agent);
    assert.equal(await stopped(agent.child), 0, agent.output());
  });

  it('says in one line when it may not write its run directory', async () => {
    shareBundle();
    // A directory only root may enter, as /run is for an unprivileged user.
    const closed = mkdtempSync(join(tmpdir(), 'palisade-root-only-'));
    after(() => rmSync(closed, { recursive: true, force: true }));
    const runDir = join(closed, 'run');
    const agent = startAgent(
      unprivileged(['net_admin']),
      agentArgs({
        etcd: etcd.server.endpoint,
        datapath: 'nftables',
        extra: ['--listen', 'off', '--run-dir', runDir],
      }),
      temp,
    );
    // 'close': the output is all in once the pipes close.
    const code = await new Promise<number | null>((resolve) => agent.child.once('close', resolve));
    const result = { code, stderr: agent.output() };
    assert.equal(result.code, 1, result.stderr);
    assert.match(
      result.stderr,
      /^palisade: cannot create \/tmp\/palisade-root-only-\w+\/run\/datapath: EACCES/,
    );
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
  });
});
