/**
 * The eBPF datapath's fault suite (fault-trials/suite.ts): root, a real etcd, agent processes
 * keeping the BPF program and maps of a lab's node namespaces, real connections between its pods.
 */
import { needsEbpf } from '../helpers/ebpf.ts';
import { faultSuite } from './fault-trials/suite.ts';

faultSuite('ebpf', needsEbpf('the agent fault tests on ebpf'));
