/**
 * The nftables datapath's fault suite, as root with a real etcd, real agent processes enforcing
 * in a lab's node namespaces, and real connections between lab pods: the control plane's faults
 * (fault-trials/control-plane.ts) and those that once left a node open while its agent said
 * ready (fault-trials/enforcement.ts). The faults are independent (each its own etcd, lab and
 * agents) and run three at a time; each one's time to converge is printed at the end.
 */
import { after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { needsEtcd } from '../live/etcd-fixture.ts';
import { needsRoot } from '../helpers/kernel.ts';
import { FaultWorld } from './fault-world.ts';
import { controlPlaneTrials } from './fault-trials/control-plane.ts';
import { enforcementTrials } from './fault-trials/enforcement.ts';
import type { FaultSuite } from './fault-trials/shared.ts';

const skip = needsEtcd || needsRoot('the agent fault tests');

describe(
  'node agent faults on nftables (real etcd, agents, nftables and packets)',
  { skip, concurrency: 3 },
  () => {
    const worlds: FaultWorld[] = [];
    const temps: string[] = [];
    const times: [string, number][] = [];
    after(async () => {
      await Promise.all(worlds.map((w) => w.close()));
      for (const dir of temps) rmSync(dir, { recursive: true, force: true });
      for (const [fault, ms] of times)
        process.stdout.write(`# converged after "${fault}": ${ms.toFixed(0)} ms\n`);
      // Nothing left behind: no namespace, agent process or etcd data of any world.
      const left = (await Promise.all(worlds.map((w) => w.leftovers()))).flat();
      assert.deepEqual(left, [], 'the fault worlds left nothing behind');
    });
    const suite: FaultSuite = {
      world: async (name, options) => {
        const w = await FaultWorld.create(name, options);
        worlds.push(w);
        return w;
      },
      temps,
      converged: (fault, ms) => void times.push([fault, ms]),
    };
    controlPlaneTrials(suite);
    enforcementTrials(suite);
  },
);
