/**
 * The lab against the kernel on the nftables datapath: real TCP and UDP between pods in network
 * namespaces on two nodes, compared with the reference evaluator (the suite is shared with the
 * eBPF datapath: test/helpers/lab-suite.ts). Needs root.
 */
import { labSuite } from '../helpers/lab-suite.ts';
import { needsRoot } from '../helpers/kernel.ts';

labSuite('nftables', needsRoot('the lab (network namespaces and nftables)'));
