/**
 * The lab with dual-stack pods on nftables: IPv6 is routed between namespaces and nodes and
 * enforced by the same table (family inet), each family probed on its own (shared with the eBPF
 * datapath: test/helpers/lab-suite.ts). Needs root.
 */
import { labDualStackSuite } from '../helpers/lab-suite.ts';
import { needsRoot } from '../helpers/kernel.ts';

labDualStackSuite('nftables', needsRoot('the lab (network namespaces and nftables)'));
