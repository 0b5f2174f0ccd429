/**
 * The renderer conformance suite for the targets only the kernel can judge (nftables; eBPF once
 * the lab builds it for this suite): each case of test/helpers/renderer-conformance.ts run through
 * the lab (root) and probed pod to pod on TCP and UDP against the reference evaluator. The lab has
 * no SCTP (no kernel module) and does not build host-network pods.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { probeLab } from '../../src/lab/index.ts';
import type { RenderTarget } from '../../src/datapaths/index.ts';
import { needsRoot, startLab } from '../helpers/kernel.ts';
import { clusterOf, type Raw } from '../helpers/builders.ts';
import { CASES } from '../helpers/renderer-conformance.ts';
import { TARGETS } from '../helpers/renderer-verdicts.ts';

/** Kernel targets the lab can run (it builds nftables tables per node). */
const LAB_DATAPATHS = new Set(['nftables']);

async function checkInKernel(objects: () => Raw[]): Promise<void> {
  const { lab, down } = await startLab('c', objects(), clusterOf(objects()));
  try {
    const report = await probeLab(
      lab,
      [
        { port: 80, protocol: 'TCP' },
        { port: 53, protocol: 'UDP' },
        { port: 60, protocol: 'TCP' },
      ],
      { timeoutMs: 400 },
    );
    assert.deepEqual(report.disagreements, []);
  } finally {
    await down();
  }
}

/** Why a kernel target cannot be checked here (false: it can). */
function skipReason(target: RenderTarget, engines = false): string | false {
  const ordered = target.capabilities.orderedClusterPolicy;
  if (engines && ordered !== true) return `it refuses cluster policy: ${ordered.refusal}`;
  if (engines && target.capabilities.enginePolicy)
    return `it refuses them: ${target.capabilities.enginePolicy.refusal}`;
  if (!LAB_DATAPATHS.has(target.name)) return `the lab cannot run the ${target.name} datapath yet`;
  return needsRoot('the lab (network namespaces and nftables)');
}

describe('renderer conformance in the kernel', () => {
  for (const { name, objects, engines } of CASES) {
    describe(name, () => {
      for (const target of TARGETS) {
        if (target.interpreter || target.capabilities.applies !== 'kernel') continue; // conformance.test.ts
        it(`${target.name} (kernel, through the lab)`, { skip: skipReason(target, engines) }, async () => {
          await checkInKernel(objects);
        });
      }
    });
  }
});
