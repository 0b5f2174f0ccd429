/**
 * The nftables datapath's fault suite (fault-trials/suite.ts): root, a real etcd, agent processes
 * enforcing nftables in a lab's node namespaces, real connections between its pods.
 */
import { faultSuite } from './fault-trials/suite.ts';

faultSuite('nftables');
