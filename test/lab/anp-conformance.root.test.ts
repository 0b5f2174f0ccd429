/**
 * The upstream AdminNetworkPolicy conformance suite in the kernel, nftables enforcing (shared with
 * the eBPF datapath: test/helpers/lab-suite.ts). Needs root.
 */
import { labConformanceSuite } from '../helpers/lab-suite.ts';
import { needsRoot } from '../helpers/kernel.ts';

labConformanceSuite('nftables', needsRoot('the conformance suite in the lab'));
