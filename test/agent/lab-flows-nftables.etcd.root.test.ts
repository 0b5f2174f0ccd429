/**
 * Flow reports on nftables, as root with everything real (etcd, the reflector, one `palisade
 * agent --flow-log` per node, packets): see lab-flows-shared.ts.
 */
import { describe } from 'node:test';
import { needsEtcd, needsOpenssl } from '../live/etcd-fixture.ts';
import { needsRoot } from '../helpers/kernel.ts';
import { flowSuite } from './lab-flows-shared.ts';

const skip = needsEtcd || needsOpenssl || needsRoot('flow reports in the lab with a control plane');

describe('palisade flows on nftables (lab with a control plane)', { skip }, () =>
  flowSuite('nftables', 'fln'),
);
