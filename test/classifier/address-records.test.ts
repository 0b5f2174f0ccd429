/**
 * Address records against a plain model: after every operation of a random sequence (endpoints
 * set and cleared, node addresses, groups added and removed, on IPv4 and IPv6 addresses), each
 * address finds the record the model says, with the same table handles, nodes and sorted group
 * list — through hash growth, tombstones, record reuse and group-list compaction.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  AddressRecords,
  ENDPOINT_NODE,
  NODE_ADDRESS_OF,
  INGRESS_PORTS,
  EGRESS_PORTS,
  TABLE_GROUPS,
  TIER_GROUPS,
  type GroupList,
} from '../../src/classifier/address-records.ts';
import { parseIp, type IpAddress } from '../../src/net/ip.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

const POOL: IpAddress[] = [
  ...Array.from({ length: 300 }, (_, i) => `10.${i % 3}.${Math.floor(i / 250)}.${(i % 250) + 1}`),
  '255.255.255.255',
  '0.0.0.1',
  ...Array.from({ length: 20 }, (_, i) => `fd00::${(i + 1).toString(16)}`),
].map((text) => {
  const parsed = parseIp(text);
  if (!parsed.ok) throw new Error(text);
  return parsed.value;
});

type Op =
  | { kind: 'endpoint'; address: number; tables: number[]; node: number }
  | { kind: 'clear'; address: number }
  | { kind: 'node'; address: number; node: number }
  | { kind: 'add'; address: number; group: number; list: GroupList }
  | { kind: 'remove'; address: number; group: number; list: GroupList };

const address = fc.nat(POOL.length - 1);
/** Either of an address's group lists: NetworkPolicy tables' (inline first) or tier tables'. */
const list = fc.constantFrom(TABLE_GROUPS, TIER_GROUPS);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('endpoint' as const),
    address,
    tables: fc.array(fc.integer({ min: -1, max: 500 }), { minLength: 6, maxLength: 6 }),
    node: fc.nat(5),
  }),
  fc.record({ kind: fc.constant('clear' as const), address }),
  fc.record({ kind: fc.constant('node' as const), address, node: fc.integer({ min: 1, max: 5 }) }),
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('add' as const), address, group: fc.nat(6), list }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('remove' as const), address, group: fc.nat(6), list }),
  },
);

interface ModelRecord {
  tables: number[];
  node: number;
  endpoint: boolean;
  nodeOf: number;
  groups: Set<number>;
  tierGroups: Set<number>;
}

describe('address records', () => {
  it('≡ a map of records after every operation', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 50, maxLength: 1500, size: 'max' }), (ops) => {
        // Tiny to start with: the hash rehashes and overflow group lists compact.
        const records = new AddressRecords({ hashSlots: 4, overflowInts: 8 });
        const model = new Map<number, ModelRecord>();
        const get = (a: number): ModelRecord => {
          let r = model.get(a);
          if (!r)
            model.set(
              a,
              (r = {
                tables: [-1, -1, -1, -1, -1, -1],
                node: 0,
                endpoint: false,
                nodeOf: 0,
                groups: new Set(),
                tierGroups: new Set(),
              }),
            );
          return r;
        };
        const dropIfEmpty = (a: number): void => {
          const r = model.get(a);
          if (r && !r.endpoint && r.nodeOf === 0 && r.groups.size === 0 && r.tierGroups.size === 0)
            model.delete(a);
        };
        ops.forEach((op, step) => {
          const ip = POOL[op.address] as IpAddress;
          if (op.kind === 'endpoint') {
            records.setEndpoint(ip, op.tables, [op.node * 3, ~op.node], op.node);
            Object.assign(get(op.address), { tables: op.tables, node: op.node, endpoint: true });
          } else if (op.kind === 'clear') {
            records.clearEndpoint(ip);
            const r = model.get(op.address);
            if (r) Object.assign(r, { tables: [-1, -1, -1, -1, -1, -1], node: 0, endpoint: false });
            dropIfEmpty(op.address);
          } else if (op.kind === 'node') {
            records.setNodeAddress(ip, op.node);
            get(op.address).nodeOf = op.node;
          } else if (op.kind === 'add') {
            const r = get(op.address);
            const groups = op.list === TIER_GROUPS ? r.tierGroups : r.groups;
            assert.equal(records.addGroup(ip, op.group, op.list), !groups.has(op.group));
            groups.add(op.group);
          } else {
            records.removeGroup(ip, op.group, op.list);
            const r = model.get(op.address);
            (op.list === TIER_GROUPS ? r?.tierGroups : r?.groups)?.delete(op.group);
            dropIfEmpty(op.address);
          }
          // Check the touched address every step, and all of them now and then.
          const check = step % 100 === 0 ? POOL.map((_, i) => i) : [op.address];
          for (const a of check) {
            const ip = POOL[a] as IpAddress;
            const base = records.find(ip);
            const r = model.get(a);
            assert.equal(base >= 0, r !== undefined, `record of ${a} after step ${step}`);
            if (!r) continue;
            const data = records.dataOf(ip);
            assert.equal(records.isEndpoint(ip), r.endpoint);
            assert.deepEqual(records.tablesOf(ip), r.tables);
            if (r.endpoint) {
              assert.equal(data[base + INGRESS_PORTS], r.node * 3);
              assert.equal(data[base + EGRESS_PORTS], ~r.node);
            }
            assert.equal(data[base + ENDPOINT_NODE], r.node);
            assert.equal(data[base + NODE_ADDRESS_OF], r.nodeOf);
            assert.deepEqual(
              records.groupsOf(ip),
              [...r.groups].sort((x, y) => x - y),
            );
            assert.deepEqual(
              records.groupsOf(ip, TIER_GROUPS),
              [...r.tierGroups].sort((x, y) => x - y),
            );
          }
        });
      }),
      { numRuns: Math.max(10, Math.floor(RUNS / 5)) },
    );
  });

  it('compacts group lists and reuses records under churn', () => {
    const records = new AddressRecords({ hashSlots: 4, overflowInts: 8 });
    for (let round = 0; round < 20; round++) {
      for (const ip of POOL)
        for (let g = 0; g < 6; g++) {
          records.addGroup(ip, (g * 7 + round) % 40);
          records.addGroup(ip, (g * 5 + round) % 40, TIER_GROUPS);
        }
      for (const ip of POOL)
        for (let g = 0; g < 40; g++) {
          records.removeGroup(ip, g);
          records.removeGroup(ip, g, TIER_GROUPS);
        }
    }
    assert.ok(records.compactions > 0);
    for (const ip of POOL) assert.equal(records.find(ip), -1, 'every record released');
    const ip = POOL[5] as IpAddress;
    records.addGroup(ip, 3);
    assert.deepEqual(records.groupsOf(ip), [3]);
  });
});
