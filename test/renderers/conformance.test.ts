/**
 * The renderer conformance suite: the same cases (test/helpers/renderer-conformance.ts) for every
 * registered render target, found in the registry (a new target is checked without being named
 * here). Targets with an in-process interpreter (VPP ACL, VPPTCP, Neutron, the classifier's maps)
 * are judged here for every packet between pods, nodes and outside addresses on the sample
 * ports; targets only the kernel can judge (nftables, eBPF) in conformance-kernel.root.test.ts.
 */
import { describe, it } from 'node:test';
import type { RenderTarget } from '../../src/datapaths/index.ts';
import { clusterOf } from '../helpers/builders.ts';
import { CASES, checkInProcess } from '../helpers/renderer-conformance.ts';
import { TARGETS } from '../helpers/renderer-verdicts.ts';

/** Why a target cannot be checked here (false: it can). */
function skipReason(target: RenderTarget, engines = false): string | false {
  const ordered = target.capabilities.orderedClusterPolicy;
  if (engines && ordered !== true) return `it refuses cluster policy: ${ordered.refusal}`;
  if (engines && target.capabilities.enginePolicy)
    return `it refuses them: ${target.capabilities.enginePolicy.refusal}`;
  if (target.interpreter) return false;
  if (target.capabilities.applies !== 'kernel') return 'it has neither an interpreter nor a kernel datapath';
  return false;
}

describe('renderer conformance', () => {
  for (const { name, objects, engines } of CASES) {
    describe(name, () => {
      for (const target of TARGETS) {
        if (!target.interpreter && target.capabilities.applies === 'kernel') continue; // conformance-kernel.root.test.ts
        it(target.name, { skip: skipReason(target, engines) }, () => {
          checkInProcess(target, clusterOf(objects()));
        });
      }
    });
  }
});
