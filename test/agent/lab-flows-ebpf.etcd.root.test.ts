/**
 * Flow reports on eBPF, as root with everything real (etcd, the reflector, one `palisade agent
 * --datapath ebpf --flow-log` per node, the program's ring buffer, packets): see
 * lab-flows-shared.ts.
 */
import { describe } from 'node:test';
import { needsEtcd } from '../live/etcd-fixture.ts';
import { needsEbpf } from '../helpers/ebpf.ts';
import { flowSuite } from './lab-flows-shared.ts';

const skip = needsEtcd || needsEbpf('flow reports in the lab with a control plane on eBPF');

describe('palisade flows on eBPF (lab with a control plane)', { skip }, () => flowSuite('ebpf', 'fle'));
