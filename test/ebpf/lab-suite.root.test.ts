/**
 * The lab's suite on the eBPF datapath — the same cases and expected verdicts the nftables
 * datapath passes (test/helpers/lab-suite.ts): no policy, the Kubernetes documentation examples,
 * random and tiered policies, replies, established flows, a deny cutting a flow within 1 s, 100
 * updates under a prober, cross-node, fail closed, the AdminNetworkPolicy conformance suite, and
 * dual-stack. Needs root, clang and bpftool.
 */
import { labConformanceSuite, labDualStackSuite, labSuite } from '../helpers/lab-suite.ts';
import { needsEbpf } from '../helpers/ebpf.ts';

const SKIP = needsEbpf('the lab on eBPF');
labSuite('ebpf', SKIP);
labConformanceSuite('ebpf', SKIP);
labDualStackSuite('ebpf', SKIP);
