/**
 * The CFP's MapState (seed 004): its examples 1a–1d, 2a, 2b and the incremental example as
 * goldens, and properties on random ordered rules — the map's longest-prefix answer equals the
 * first matching rule by priority for every probe, incremental updates end where a fresh build
 * does, and the returned changes turn the old entries into the new ones.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { MapState, portRangePrefixes, prefixText } from '../../src/ordered/index.ts';
import type { MapChange, MapEntry, MapRule } from '../../src/ordered/index.ts';

/** Maps that record refused keys (the goldens list them). */
class MapStateRecording<V> extends MapState<V> {
  constructor(rules: readonly MapRule<V>[] = []) {
    super(rules, { recordRefused: true });
  }
}

const TCP = 6;
const UDP = 17;
const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);

type Ports = [number, number] | '*';
function rule(
  priority: number,
  protocol: number,
  ports: Ports,
  identities: number[] | '*',
  verdict = 'allow',
): MapRule<string> {
  return {
    priority,
    protocol,
    ports: ports === '*' ? [{ value: 0, len: 0 }] : portRangePrefixes(ports[0], ports[1]),
    identities: identities === '*' ? '*' : new Set(identities),
    verdict,
    label: `rule${priority}`,
  };
}

const proto = (p: number) => (p === TCP ? 'tcp' : p === UDP ? 'udp' : String(p));
function show(entry: MapEntry<string>): string {
  const covered = entry.coveredBy ? ` covering under ${entry.coveredBy}` : '';
  return `${proto(entry.protocol)} ${prefixText(entry.port)} id ${entry.identity}: ${entry.verdict} (${entry.rule}${covered})`;
}
const entries = (map: MapState<string>) => map.entries().map(show);
const refused = (map: MapState<string>) =>
  map
    .refusedKeys()
    .map(
      (r) =>
        `${r.rule}: ${proto(r.protocol)} ${prefixText(r.port)} id ${r.identity} covered by ${r.coveredBy}`,
    );

describe('MapState: the CFP examples', () => {
  const base = rule(1, TCP, [0, 1023], '*');

  it('1a: (tcp, 0-1023, id 5) under (tcp, 0-1023, *) is refused', () => {
    const map = new MapStateRecording([base, rule(2, TCP, [0, 1023], [5])]);
    assert.deepEqual(entries(map), ['tcp 0-1023 id *: allow (rule1)']);
    assert.deepEqual(refused(map), ['rule2: tcp 0-1023 id 5 covered by rule1']);
  });

  it('1b: (tcp, 80, *) under (tcp, 0-1023, *) is refused', () => {
    const map = new MapStateRecording([base, rule(2, TCP, [80, 80], '*')]);
    assert.deepEqual(refused(map), ['rule2: tcp 80 id * covered by rule1']);
  });

  it('1c: (tcp, *, id 5) is inserted: it has lower precedence', () => {
    const map = new MapStateRecording([base, rule(2, TCP, '*', [5], 'deny')]);
    assert.deepEqual(entries(map), ['tcp * id 5: deny (rule2)', 'tcp 0-1023 id *: allow (rule1)']);
    assert.equal(map.lookup(5, TCP, 80)?.rule, 'rule1');
    assert.equal(map.lookup(5, TCP, 8080)?.rule, 'rule2');
  });

  it('1d: (udp, 53, id 5) is inserted: it covers no higher-priority entry', () => {
    const map = new MapStateRecording([base, rule(2, UDP, [53, 53], [5])]);
    assert.deepEqual(entries(map), ['tcp 0-1023 id *: allow (rule1)', 'udp 53 id 5: allow (rule2)']);
  });

  it('2a: a wildcard ancestor refuses both later keys, and incremental updates of the covered rule stay out', () => {
    const map = new MapStateRecording([
      rule(1, TCP, '*', '*'),
      rule(2, TCP, [80, 80], '*'),
      rule(3, TCP, [80, 80], [5]),
    ]);
    assert.deepEqual(entries(map), ['tcp * id *: allow (rule1)']);
    assert.deepEqual(refused(map), [
      'rule2: tcp 80 id * covered by rule1',
      'rule3: tcp 80 id 5 covered by rule1',
    ]);
    assert.deepEqual(map.setIdentities('rule3', new Set([5, 6])), []);
  });

  it('2b: a descendant wildcard is inserted with covering entries for the higher-priority identities', () => {
    const map = new MapStateRecording([rule(1, TCP, '*', [5, 6], 'deny'), rule(2, TCP, [80, 80], '*')]);
    assert.deepEqual(entries(map), [
      'tcp * id 5: deny (rule1)',
      'tcp * id 6: deny (rule1)',
      'tcp 80 id *: allow (rule2)',
      'tcp 80 id 5: deny (rule1 covering under rule2)',
      'tcp 80 id 6: deny (rule1 covering under rule2)',
    ]);
    // rule1 is covered by rule2: an identity joining rule1 gets its covering entry too.
    const changes = map.setIdentities('rule1', new Set([5, 6, 7]));
    assert.deepEqual(changes.map((c) => `${c.op} ${show(c.entry)}`).sort(), [
      'add tcp * id 7: deny (rule1)',
      'add tcp 80 id 7: deny (rule1 covering under rule2)',
    ]);
    assert.equal(map.lookup(7, TCP, 80)?.verdict, 'deny');
    assert.equal(map.lookup(8, TCP, 80)?.verdict, 'allow');
  });

  it('incremental example 1: identity 9 joins all three selectors in one transaction', () => {
    const map = new MapStateRecording([
      rule(1, TCP, [0, 1023], [5, 6]),
      rule(2, TCP, [80, 80], [7]),
      rule(3, TCP, '*', [8]),
    ]);
    const changes = map.updateIdentities([
      { label: 'rule1', identities: new Set([5, 6, 9]) },
      { label: 'rule2', identities: new Set([7, 9]) },
      { label: 'rule3', identities: new Set([8, 9]) },
    ]);
    assert.deepEqual(changes.map((c) => `${c.op} ${show(c.entry)}`).sort(), [
      'add tcp * id 9: allow (rule3)',
      'add tcp 0-1023 id 9: allow (rule1)',
    ]);
    assert.ok(refused(map).includes('rule2: tcp 80 id 9 covered by rule1'));
  });

  it('inserting a rule never renumbers existing entries', () => {
    const map = new MapStateRecording([rule(10, TCP, [80, 80], [1]), rule(30, TCP, '*', '*', 'deny')]);
    const before = new Map(map.entries().map((e) => [show(e), e.priority]));
    map.addRule(rule(20, TCP, [443, 443], [1]));
    for (const entry of map.entries()) {
      const was = before.get(show(entry));
      if (was !== undefined) assert.equal(entry.priority, was);
    }
  });
});

// --- properties ----------------------------------------------------------------------------

const PORT_CHOICES: Ports[] = ['*', [80, 80], [0, 1023], [64, 127], [1000, 9000], [53, 53], [8080, 8080]];
const PROBE_PORTS = [0, 53, 64, 80, 100, 127, 1023, 1024, 5000, 8080, 9000, 65535];
const IDENTITIES = [1, 2, 3, 4, 5, 6];

const ruleArb = fc.record({
  protocol: fc.constantFrom(TCP, UDP),
  ports: fc.constantFrom(...PORT_CHOICES),
  identities: fc.oneof(fc.constant<'*'>('*'), fc.subarray(IDENTITIES.slice(0, 5), { minLength: 1 })),
  verdict: fc.constantFrom('allow', 'deny', 'pass'),
});
const rulesArb = fc
  .array(ruleArb, { maxLength: 10 })
  .chain((rs) =>
    fc
      .shuffledSubarray([...Array(100).keys()], { minLength: rs.length, maxLength: rs.length })
      .map((prios) =>
        rs.map((r, i) => rule(prios[i] as number, r.protocol, r.ports, r.identities, r.verdict)),
      ),
  );

/** The ground truth: the first rule by priority matching the probe. */
function firstMatch(rules: readonly MapRule<string>[], identity: number, protocol: number, port: number) {
  return [...rules]
    .sort((a, b) => a.priority - b.priority)
    .find(
      (r) =>
        r.protocol === protocol &&
        (r.identities === '*' || r.identities.has(identity)) &&
        r.ports.some((p) => p.len === 0 || (port >>> (16 - p.len)) << (16 - p.len) === p.value),
    );
}

function assertAgrees(map: MapState<string>, rules: readonly MapRule<string>[]): void {
  for (const identity of IDENTITIES)
    for (const protocol of [TCP, UDP])
      for (const port of PROBE_PORTS) {
        const expected = firstMatch(rules, identity, protocol, port);
        const got = map.lookup(identity, protocol, port);
        assert.equal(got?.verdict, expected?.verdict, `id ${identity} ${proto(protocol)}/${port}`);
        assert.equal(got?.priority, expected?.priority, `id ${identity} ${proto(protocol)}/${port} priority`);
      }
}

function applyChanges(entries: MapEntry<string>[], changes: readonly MapChange<string>[]): string[] {
  const set = new Set(entries.map(show));
  for (const c of changes)
    if (c.op === 'delete') assert.ok(set.delete(show(c.entry)), `deleted ${show(c.entry)} was not there`);
  for (const c of changes) if (c.op === 'add') set.add(show(c.entry));
  return [...set].sort();
}

describe('MapState properties', () => {
  it('the longest-prefix answer is the highest-priority matching rule', () => {
    fc.assert(
      fc.property(rulesArb, (rules) => assertAgrees(new MapStateRecording(rules), rules)),
      { numRuns: RUNS * 4 },
    );
  });

  it('a transaction of more specific rules than a selection bit mask holds ends in a fresh build', () => {
    // addRules groups identities by which new rules select them: a bit mask up to 30 rules, a
    // string past that. 31–40 rules of one policy, specific identities only (inserted key by key).
    const specificArb = ruleArb.filter((r) => r.identities !== '*');
    fc.assert(
      fc.property(rulesArb, fc.array(specificArb, { minLength: 31, maxLength: 40 }), (initial, more) => {
        const map = new MapState<string>(initial);
        const added = more.map((r, i) => rule(200 + i, r.protocol, r.ports, r.identities, r.verdict));
        const before = map.entries();
        const changes = map.addRules(added);
        assert.deepEqual(applyChanges(before, changes), entries(map).sort());
        assert.deepEqual(entries(map), entries(new MapState<string>([...initial, ...added])));
        assertAgrees(map, [...initial, ...added]);
      }),
      { numRuns: RUNS },
    );
  });

  it('identities past the dense index (huge, negative) give the entries small ones do', () => {
    // The map keeps identities below 2^24 in an array and the rest in a Map.
    const far = (i: number) => (i % 2 ? -i : i * 2 ** 33);
    const moved = (rs: readonly MapRule<string>[]) =>
      rs.map((r) => ({
        ...r,
        identities: r.identities === '*' ? r.identities : new Set([...r.identities].map(far)),
      }));
    fc.assert(
      fc.property(rulesArb, rulesArb, (initial, more) => {
        const added = more.map((r) => ({ ...r, priority: r.priority + 100, label: `added${r.label}` }));
        const near = new MapState<string>(initial);
        const away = new MapState<string>(moved(initial));
        near.addRules(added);
        away.addRules(moved(added));
        const back = new Map(IDENTITIES.map((i) => [far(i), i]));
        const shown = away
          .entries()
          .map((e) => show(e.identity === '*' ? e : { ...e, identity: back.get(e.identity) as number }));
        assert.deepEqual(shown.sort(), entries(near).sort());
      }),
      { numRuns: RUNS },
    );
  });

  it('incremental updates end in a fresh build, and their changes are exact', () => {
    const opArb = fc.oneof(
      fc.record({
        type: fc.constant('identities' as const),
        which: fc.nat(),
        identities: fc.oneof(fc.constant<'*'>('*'), fc.subarray(IDENTITIES.slice(0, 5))),
      }),
      fc.record({
        type: fc.constant('add' as const),
        rule: ruleArb,
        priority: fc.integer({ min: 0, max: 200 }),
      }),
      fc.record({ type: fc.constant('remove' as const), which: fc.nat() }),
      fc.record({
        type: fc.constant('addMany' as const),
        rules: fc.array(fc.record({ rule: ruleArb, priority: fc.integer({ min: 0, max: 200 }) }), {
          minLength: 2,
          maxLength: 5,
        }),
      }),
    );
    fc.assert(
      fc.property(rulesArb, fc.array(opArb, { maxLength: 8 }), fc.boolean(), (initial, ops, recording) => {
        let rules = [...initial];
        // Without recorded refusals, rules for specific identities are inserted key by key; new
        // priorities fall between the initial ones (0–99) as often as after them.
        const fresh = (list: readonly MapRule<string>[]) =>
          recording ? new MapStateRecording(list) : new MapState<string>(list);
        const map = fresh(initial);
        for (const op of ops) {
          const before = map.entries();
          let changes: MapChange<string>[] = [];
          if (op.type === 'add') {
            if (rules.some((r) => r.priority === op.priority)) continue;
            const added = rule(
              op.priority,
              op.rule.protocol,
              op.rule.ports,
              op.rule.identities,
              op.rule.verdict,
            );
            rules.push(added);
            changes = map.addRule(added);
          } else if (op.type === 'addMany') {
            // One policy's rules in one transaction (addRules), priorities unique as precedence keys are.
            const added: MapRule<string>[] = [];
            for (const { rule: r, priority } of op.rules) {
              if (rules.some((x) => x.priority === priority) || added.some((x) => x.priority === priority))
                continue;
              added.push(rule(priority, r.protocol, r.ports, r.identities, r.verdict));
            }
            rules.push(...added);
            changes = map.addRules(added);
          } else if (rules.length > 0) {
            const target = rules[op.which % rules.length] as MapRule<string>;
            if (op.type === 'remove') {
              rules = rules.filter((r) => r !== target);
              changes = map.removeRule(target.label);
            } else {
              const identities = op.identities === '*' ? ('*' as const) : new Set(op.identities);
              rules = rules.map((r) => (r === target ? { ...r, identities } : r));
              changes = map.setIdentities(target.label, identities);
            }
          }
          assert.deepEqual(applyChanges(before, changes), map.entries().map(show).sort());
          assertAgrees(map, rules);
        }
        assert.deepEqual(entries(map), entries(fresh(rules)));
      }),
      { numRuns: RUNS * 2 },
    );
  });
});

describe('MapState identity classes', () => {
  it('after insertions, removals and selector changes the map holds the classes of a fresh build', () => {
    // Classes keep a member count, not their members: a count not kept leaves empty classes
    // behind (entries stay right, the map grows). Insertions go key by key (no recorded refusals).
    const opArb = fc.oneof(
      fc.record({
        type: fc.constant('add' as const),
        rules: fc.array(fc.record({ rule: ruleArb, priority: fc.integer({ min: 0, max: 200 }) }), {
          minLength: 1,
          maxLength: 5,
        }),
      }),
      fc.record({ type: fc.constant('remove' as const), which: fc.nat() }),
      fc.record({
        type: fc.constant('identities' as const),
        which: fc.nat(),
        identities: fc.subarray(IDENTITIES.slice(0, 5)),
      }),
    );
    fc.assert(
      fc.property(rulesArb, fc.array(opArb, { maxLength: 8 }), (initial, ops) => {
        let rules = [...initial];
        const map = new MapState<string>(initial);
        for (const op of ops) {
          if (op.type === 'add') {
            const added: MapRule<string>[] = [];
            for (const { rule: r, priority } of op.rules)
              if (![...rules, ...added].some((x) => x.priority === priority))
                added.push(rule(priority, r.protocol, r.ports, r.identities, r.verdict));
            rules.push(...added);
            map.addRules(added);
          } else if (rules.length > 0) {
            const target = rules[op.which % rules.length] as MapRule<string>;
            if (op.type === 'remove') {
              rules = rules.filter((r) => r !== target);
              map.removeRule(target.label);
            } else if (target.identities !== '*') {
              const identities = new Set(op.identities);
              rules = rules.map((r) => (r === target ? { ...r, identities } : r));
              map.setIdentities(target.label, identities);
            }
          }
          assert.equal(map.classCount, new MapState<string>(rules).classCount);
        }
        assert.deepEqual(entries(map), entries(new MapState<string>(rules)));
      }),
      { numRuns: RUNS },
    );
  });
});
