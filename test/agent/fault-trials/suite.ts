/**
 * A datapath's fault suite, as root with a real etcd, real agent processes enforcing in a lab's
 * node namespaces, and real connections between lab pods: the control plane's faults
 * (control-plane.ts) and those that once left a node open while its agent said ready
 * (enforcement.ts). The faults are independent (each its own etcd, lab and agents) and run two at
 * a time (both datapaths' suites run side by side in `npm test`); each one's time to converge is
 * printed at the end, and nothing may be left behind.
 */
import { after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { needsEtcd } from '../../live/etcd-fixture.ts';
import { needsRoot } from '../../helpers/kernel.ts';
import { FaultWorld } from '../fault-world.ts';
import { controlPlaneTrials } from './control-plane.ts';
import { enforcementTrials } from './enforcement.ts';
import type { FaultSuite } from './shared.ts';

/** Registers the fault suite of `datapath` (`needs`: why it would be skipped, or false). */
export function faultSuite(datapath: FaultSuite['datapath'], needs: string | false = false): void {
  const skip = needsEtcd || needsRoot(`the agent fault tests on ${datapath}`) || needs;
  describe(
    `node agent faults on ${datapath} (real etcd, agents, the datapath and packets)`,
    { skip, concurrency: 2 },
    () => {
      const worlds: FaultWorld[] = [];
      const temps: string[] = [];
      const times: [string, number][] = [];
      after(async () => {
        await Promise.all(worlds.map((w) => w.close()));
        for (const dir of temps) rmSync(dir, { recursive: true, force: true });
        for (const [fault, ms] of times)
          process.stdout.write(`# ${datapath}: converged after "${fault}": ${ms.toFixed(0)} ms\n`);
        // Nothing left behind: no namespace, agent process or etcd data of any world.
        const left = (await Promise.all(worlds.map((w) => w.leftovers()))).flat();
        assert.deepEqual(left, [], 'the fault worlds left nothing behind');
      });
      const suite: FaultSuite = {
        datapath,
        world: async (t, name, options) => {
          const w = await FaultWorld.create(name, { datapath, ...options });
          worlds.push(w);
          t.after(() => w.close());
          return w;
        },
        temps,
        converged: (fault, ms) => void times.push([fault, ms]),
      };
      controlPlaneTrials(suite);
      enforcementTrials(suite);
    },
  );
}
