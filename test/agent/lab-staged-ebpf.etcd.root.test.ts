/**
 * Staged policy on eBPF, as root with everything real (etcd, the reflector, one `palisade agent
 * --datapath ebpf --flow-log` per node, packets): see lab-staged-shared.ts.
 */
import { describe } from 'node:test';
import { needsEtcd } from '../live/etcd-fixture.ts';
import { needsEbpf } from '../helpers/ebpf.ts';
import { stagedSuite } from './lab-staged-shared.ts';

const skip = needsEtcd || needsEbpf('staged policy in the lab with a control plane on eBPF');

describe('staged policy on eBPF (lab with a control plane)', { skip }, () => stagedSuite('ebpf', 'stge'));
