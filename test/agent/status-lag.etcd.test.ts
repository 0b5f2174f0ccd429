/**
 * `palisade status` against a real etcd, a real reflector (`reflect -f FILE --once`) and a real
 * `palisade agent` process frozen with SIGSTOP: a change to an *older* key (created before
 * others, modified after) and a deletion must both show the frozen agent behind, and status exits
 * 1 until it catches up. Before the fix, the policy revision was the last *created* key's (etcd's
 * sort target CREATE, not MOD) and a deletion through files moved it not at all: status printed
 * "0 behind" and exited 0 while the agent held old policy.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli } from '../helpers/cli.ts';
import { palisadeArgv } from '../helpers/executable.ts';
import { needsEtcd, suiteEtcd } from '../live/etcd-fixture.ts';
import { reflectManifests } from '../live/reflector-helpers.ts';
import { agentArgs, policy, smallCluster, uniqueLayout } from './helpers.ts';
import type { Raw } from '../helpers/builders.ts';

interface StatusJson {
  readonly policyRevision: number;
  readonly nodes: readonly { node: string; state: string; lag?: number }[];
}

describe(
  'palisade status: lag against the real policy revision (agent frozen with SIGSTOP)',
  { skip: needsEtcd },
  () => {
    const etcd = suiteEtcd();
    const dir = mkdtempSync(join(tmpdir(), `palisade-lag-${process.pid}-`));
    const children: ChildProcess[] = [];
    after(() => {
      for (const child of children) {
        if (child.exitCode !== null || child.signalCode !== null) continue;
        child.kill('SIGCONT');
        child.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    });

    const layout = uniqueLayout();
    const root = layout.root;
    const file = join(dir, 'cluster.yaml');
    const reflect = (objects: readonly Raw[]): Promise<void> =>
      reflectManifests(etcd.server.endpoint, root, file, objects);
    const status = async (): Promise<{ code: number; json: StatusJson; text: string }> => {
      const args = ['status', '--etcd', etcd.server.endpoint, '--prefix', root];
      const [json, text] = [await cli([...args, '-o', 'json']), await cli(args)];
      return { code: text.code, json: JSON.parse(json.stdout) as StatusJson, text: text.stdout };
    };
    const current = async (): Promise<boolean> => {
      const s = await status();
      return s.code === 0 && s.json.nodes[0]?.state === 'alive' && s.json.nodes[0].lag === 0;
    };

    // The older key (`db-from-web`, created first) is the one modified later.
    const base = [...smallCluster(), policy('shop', 'web-from-db', { app: 'web' }, { app: 'db' })];
    let agent: ChildProcess | undefined;

    it('an agent frozen behind a change to an older key shows lag, and status exits 1', async () => {
      await reflect(base);
      agent = spawn(
        process.execPath,
        [
          ...palisadeArgv(),
          ...agentArgs({
            etcd: etcd.server.endpoint,
            datapath: 'classifier',
            extra: [
              '--listen',
              'off',
              // The frozen agent stays alive (not dead) for the whole test: its lease outlives the pause.
              '--lease-ttl',
              '60',
              '--status-interval',
              '50',
            ],
          }),
          '--prefix',
          root,
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      children.push(agent);
      await waitFor(current, 'the agent to realize the first sync');

      agent.kill('SIGSTOP');
      const before = (await status()).json.policyRevision;
      const changed = base.map((o) =>
        (o.metadata as { name?: string }).name === 'db-from-web'
          ? policy('shop', 'db-from-web', { app: 'db' }, { app: 'web' }, 6432)
          : o,
      );
      await reflect(changed);
      const frozen = await status();
      assert.ok(
        frozen.json.policyRevision > before,
        `policy revision ${frozen.json.policyRevision} > ${before}`,
      );
      assert.equal(frozen.json.nodes[0]?.state, 'alive');
      assert.ok((frozen.json.nodes[0]?.lag ?? 0) > 0, `lag ${frozen.json.nodes[0]?.lag} > 0`);
      assert.match(frozen.text, /; 1 alive, 0 dead, 1 behind\n/);
      assert.equal(frozen.code, 1, 'status exits 1 while an agent is behind');

      agent.kill('SIGCONT');
      await waitFor(current, 'the agent to catch up after SIGCONT');
      base.splice(0, base.length, ...changed);
    });

    it('a deletion (through files) moves the policy revision too', async () => {
      assert.ok(agent);
      agent.kill('SIGSTOP');
      const before = (await status()).json.policyRevision;
      await reflect(base.filter((o) => (o.metadata as { name?: string }).name !== 'web-from-db'));
      const frozen = await status();
      assert.ok(
        frozen.json.policyRevision > before,
        `policy revision ${frozen.json.policyRevision} > ${before}`,
      );
      assert.ok((frozen.json.nodes[0]?.lag ?? 0) > 0, `lag ${frozen.json.nodes[0]?.lag} > 0`);
      assert.equal(frozen.code, 1);
      agent.kill('SIGCONT');
      await waitFor(current, 'the agent to catch up after SIGCONT');
    });

    it('a reflect that changes nothing moves nothing', async () => {
      const before = (await status()).json.policyRevision;
      await reflect(base.filter((o) => (o.metadata as { name?: string }).name !== 'web-from-db'));
      assert.equal((await status()).json.policyRevision, before);
    });
  },
);

// A deadline against hangs, not a figure: agents start through tsx on a loaded machine.
async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
