/**
 * Staged policy on nftables, as root with everything real (etcd, the reflector, one `palisade
 * agent --flow-log` per node, packets): see lab-staged-shared.ts.
 */
import { describe } from 'node:test';
import { needsEtcd, needsOpenssl } from '../live/etcd-fixture.ts';
import { needsRoot } from '../helpers/kernel.ts';
import { stagedSuite } from './lab-staged-shared.ts';

const skip = needsEtcd || needsOpenssl || needsRoot('staged policy in the lab with a control plane');

describe('staged policy on nftables (lab with a control plane)', { skip }, () =>
  stagedSuite('nftables', 'stg'),
);
