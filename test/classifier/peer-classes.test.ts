/**
 * Peer classes against a plain model, through random sequences of changes: addresses changing
 * groups, groups becoming tier groups, tier tables registered and dropped. After each change
 * every address's class stands for exactly its tier groups (equal sets, equal classes; no tier
 * group, no class), only classes in use are kept, and every table's entry for an address's class
 * is the OR of the table's bitmaps of the address's groups — with its summary words — or absent
 * when that OR is empty.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ClassMap, NO_CLASS, PeerClasses } from '../../src/classifier/peer-classes.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);
const GROUPS = 10;
const ADDRESSES = 8;

type Op =
  | { kind: 'groups'; address: number; groups: number[] }
  | { kind: 'mark'; group: number }
  | { kind: 'register'; width: number; bits: [number, number[]][] }
  | { kind: 'unregister'; which: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('groups' as const),
      address: fc.nat(ADDRESSES - 1),
      groups: fc.uniqueArray(fc.nat(GROUPS - 1), { maxLength: 5 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('mark' as const), group: fc.nat(GROUPS - 1) }) },
  {
    weight: 2,
    arbitrary: fc.integer({ min: 1, max: 40 }).chain((width) =>
      fc.record({
        kind: fc.constant('register' as const),
        width: fc.constant(width),
        bits: fc.uniqueArray(
          fc.tuple(
            fc.nat(GROUPS - 1),
            fc.array(fc.oneof(fc.constant(0), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })), {
              minLength: width,
              maxLength: width,
            }),
          ),
          { maxLength: 5, selector: ([group]) => group },
        ),
      }),
    ),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('unregister' as const), which: fc.nat(5) }) },
);

describe('peer classes', () => {
  it('class maps find what was added and not deleted, through growth and deletions in probe chains', () => {
    fc.assert(
      fc.property(
        // Ids from a wide range collide in the hash, as sequential ones seldom do.
        fc.uniqueArray(fc.nat(2 ** 30), { minLength: 1, maxLength: 300 }),
        fc.array(fc.tuple(fc.boolean(), fc.nat(299)), { minLength: 1, maxLength: 600 }),
        (pool, picks) => {
          const ops = picks.map(([add, i]) => [add, pool[i % pool.length] as number] as const);
          // One group whose bitmap is the class's own number: each entry's bitmap names its class.
          const bits = new Map<number, Int32Array>();
          const map = new ClassMap(bits, 1);
          const model = new Set<number>();
          for (const [add, id] of ops) {
            if (add && !model.has(id)) {
              bits.set(id, Int32Array.of(id + 1));
              map.add(id, [id]);
              model.add(id);
            } else if (!add) {
              map.delete(id);
              model.delete(id);
            }
          }
          assert.equal(map.size, model.size);
          for (const id of pool) {
            const at = map.find(id);
            if (!model.has(id)) assert.equal(at, NO_CLASS, `class ${id} was deleted`);
            else assert.equal(map.bits[at], id + 1, `class ${id}'s bitmap`);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('keep every address in the class of its tier groups and every table entry the OR of its groups', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 40 }), (ops) => {
        const classes = new PeerClasses();
        const tier = new Set<number>();
        const groupsOf: number[][] = Array.from({ length: ADDRESSES }, () => []);
        const classOf: number[] = Array.from({ length: ADDRESSES }, () => NO_CLASS);
        const tables: { index: number; width: number; bits: Map<number, Int32Array> }[] = [];
        for (const op of ops) {
          if (op.kind === 'groups') {
            groupsOf[op.address] = [...op.groups].sort((a, b) => a - b);
            classOf[op.address] = classes.classOf(
              groupsOf[op.address] as number[],
              classOf[op.address] as number,
            );
          } else if (op.kind === 'mark') {
            tier.add(op.group);
            if (classes.markTier(op.group))
              groupsOf.forEach((groups, a) => {
                if (groups.includes(op.group)) classOf[a] = classes.classOf(groups, classOf[a] as number);
              });
          } else if (op.kind === 'register') {
            // Tables use tier groups only: their groups are marked first, as tier tables do.
            for (const [group] of op.bits)
              if (classes.markTier(group))
                groupsOf.forEach((groups, a) => {
                  if (groups.includes(group)) classOf[a] = classes.classOf(groups, classOf[a] as number);
                });
            for (const [group] of op.bits) tier.add(group);
            const bits = new Map(op.bits.map(([group, words]) => [group, Int32Array.from(words)]));
            tables.push({ index: classes.register(bits, op.width), width: op.width, bits });
          } else if (tables.length > 0) {
            const [table] = tables.splice(op.which % tables.length, 1);
            classes.unregister((table as { index: number }).index);
          }
          check(classes, tier, groupsOf, classOf, tables);
        }
      }),
      { numRuns: RUNS },
    );
  });
});

function check(
  classes: PeerClasses,
  tier: ReadonlySet<number>,
  groupsOf: readonly number[][],
  classOf: readonly number[],
  tables: readonly { index: number; width: number; bits: Map<number, Int32Array> }[],
): void {
  const byKey = new Map<string, number>();
  groupsOf.forEach((groups, a) => {
    const key = groups.filter((g) => tier.has(g)).join(',');
    const id = classOf[a] as number;
    if (key === '') return assert.equal(id, NO_CLASS, `address ${a} is in no tier group`);
    assert.notEqual(id, NO_CLASS, `address ${a} has a class`);
    const known = byKey.get(key);
    if (known === undefined) {
      assert.ok(![...byKey.values()].includes(id), `class ${id} stands for one set of tier groups`);
      byKey.set(key, id);
    } else assert.equal(id, known, `addresses in the same tier groups share a class`);
  });
  assert.equal(classes.size, byKey.size, 'only classes in use are kept');
  for (const table of tables) {
    const map = classes.maps[table.index] as ClassMap;
    let entries = 0;
    groupsOf.forEach((groups, a) => {
      const id = classOf[a] as number;
      const expected = new Int32Array(table.width);
      for (const g of groups) {
        const bits = table.bits.get(g);
        if (bits)
          for (let w = 0; w < table.width; w++) expected[w] = (expected[w] as number) | (bits[w] as number);
      }
      const at = id === NO_CLASS ? NO_CLASS : map.find(id);
      if (expected.every((w) => w === 0)) return assert.equal(at, NO_CLASS, `no entry for address ${a}`);
      assert.notEqual(at, NO_CLASS, `an entry for address ${a}`);
      assert.deepEqual([...map.bits.subarray(at, at + table.width)], [...expected], `bitmap of address ${a}`);
      for (let j = 0; j < map.summaries; j++) {
        let summary = 0;
        for (let w = j * 32; w < Math.min(table.width, (j + 1) * 32); w++)
          if (expected[w] !== 0) summary |= 1 << (w & 31);
        assert.equal(map.bits[at - map.summaries + j], summary, `summary ${j} of address ${a}`);
      }
    });
    for (const id of new Set(classOf)) if (id !== NO_CLASS && map.find(id) !== NO_CLASS) entries++;
    assert.equal(map.size, entries, 'a table holds entries of live classes only');
  }
}
