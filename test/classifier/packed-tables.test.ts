/**
 * The packed lookup form against a plain model: random tables of any width (up to 1,100 slots,
 * so summaries of more than one word), with ports, ranges, protocols, L3 entries, host and
 * prefix entries (few and many: scanned lists and tries), excepts, IPv6 and groups (scanned and
 * hashed entry lists) give the same first matching slot as a direct reading of the rules, and
 * their port signatures never rule out a port that matches; blocks stay right after the arena
 * is compacted under them. One-word tables (bitmap words in their entries, sections only where
 * they have entries) are checked on their own too.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DirectionTable } from '../../src/classifier/direction-table.ts';
import { PackedTables, portBit } from '../../src/classifier/table-arena.ts';
import { addressWords } from '../../src/classifier/lpm-trie.ts';
import { cidrContains, parseCidr, parseIp, type Cidr, type IpAddress } from '../../src/net/ip.ts';
import type { Protocol } from '../../src/model/types.ts';

const RUNS = Number(process.env.PALISADE_PROPERTY_RUNS ?? 150);
const PROTOCOLS: Protocol[] = ['TCP', 'UDP', 'SCTP'];

const cidr = (text: string): Cidr => {
  const parsed = parseCidr(text);
  if (!parsed.ok) throw new Error(text);
  return parsed.value;
};
const ip = (text: string): IpAddress => {
  const parsed = parseIp(text);
  if (!parsed.ok) throw new Error(text);
  return parsed.value;
};

// Prefixes that nest and overlap, hosts inside them, and IPv6.
const PREFIXES = [
  '0.0.0.0/0',
  '10.0.0.0/8',
  '10.1.0.0/16',
  '10.1.2.0/24',
  '10.1.2.128/25',
  '192.168.0.0/16',
  '192.168.7.0/24',
  ...Array.from({ length: 12 }, (_, i) => `10.1.2.${i + 1}/32`),
  '::/0',
  'fd00::/8',
  'fd00:1::/32',
  'fd00:1::5/128',
].map(cidr);
const REMOTES = [
  '10.1.2.1',
  '10.1.2.7',
  '10.1.2.12',
  '10.1.2.200',
  '10.1.9.9',
  '10.200.0.1',
  '192.168.7.7',
  '192.168.8.8',
  '8.8.8.8',
  'fd00:1::5',
  'fd00:1::6',
  'fd00:2::1',
  '2001:db8::1',
].map(ip);
const PORTS = [53, 80, 443, 8080, 9000, 9050];

interface SlotSpec {
  readonly prim: number[];
  readonly supp?: { readonly block: number; readonly except: number[] };
  readonly groups: number[];
  readonly port:
    | { kind: 'l3' }
    | { kind: 'protocol'; protocol: number }
    | { kind: 'port'; protocol: number; port: number }
    | { kind: 'range'; protocol: number; from: number; to: number };
}

const slotArb: fc.Arbitrary<SlotSpec> = fc.record({
  prim: fc.array(fc.nat(PREFIXES.length - 1), { maxLength: 3 }),
  supp: fc.option(
    fc.record({
      block: fc.nat(PREFIXES.length - 1),
      except: fc.array(fc.nat(PREFIXES.length - 1), { maxLength: 2 }),
    }),
    { nil: undefined },
  ),
  groups: fc.array(fc.nat(11), { maxLength: 3 }),
  port: fc.oneof(
    fc.constant({ kind: 'l3' as const }),
    fc.record({ kind: fc.constant('protocol' as const), protocol: fc.nat(2) }),
    fc.record({
      kind: fc.constant('port' as const),
      protocol: fc.nat(2),
      port: fc.oneof(fc.constantFrom(...PORTS), fc.integer({ min: 1, max: 40 })),
    }),
    fc.record({
      kind: fc.constant('range' as const),
      protocol: fc.nat(2),
      from: fc.constant(9000),
      to: fc.constant(9100),
    }),
  ),
});

function build(slots: readonly SlotSpec[]): DirectionTable {
  const table = new DirectionTable(slots.length);
  table.useGroups({ groupLabel: (g) => `g${g}` });
  slots.forEach((slot, bit) => {
    for (const p of slot.prim) table.addCidr('prim', PREFIXES[p] as Cidr, (PREFIXES[p] as Cidr).text, bit);
    if (slot.supp) {
      const block = PREFIXES[slot.supp.block] as Cidr;
      table.addCidr('supp', block, block.text, bit);
      for (const e of slot.supp.except)
        table.addCidr('except', PREFIXES[e] as Cidr, (PREFIXES[e] as Cidr).text, bit);
    }
    for (const g of slot.groups) table.addGroup(g, bit);
    const port = slot.port;
    if (port.kind === 'l3') table.addL3(bit);
    else if (port.kind === 'protocol') table.addProtocol(PROTOCOLS[port.protocol] as Protocol, bit);
    else if (port.kind === 'port') table.addPort(PROTOCOLS[port.protocol] as Protocol, port.port, bit);
    else table.addRange(PROTOCOLS[port.protocol] as Protocol, port.from, port.to, bit);
  });
  return table;
}

/** The model: the lowest slot whose peers contain the remote and whose ports contain the packet. */
function expectedSlot(
  slots: readonly SlotSpec[],
  remote: IpAddress,
  groups: readonly number[],
  protocol: number,
  port: number,
): number {
  const inside = (p: number): boolean => {
    const c = PREFIXES[p] as Cidr;
    return c.family === remote.family && cidrContains(c, remote);
  };
  return slots.findIndex((slot) => {
    const peers =
      slot.prim.some(inside) ||
      slot.groups.some((g) => groups.includes(g)) ||
      (slot.supp !== undefined && inside(slot.supp.block) && !slot.supp.except.some(inside));
    const p = slot.port;
    const ports =
      p.kind === 'l3' ||
      (p.protocol === protocol &&
        (p.kind === 'protocol' ||
          (p.kind === 'port' && p.port === port) ||
          (p.kind === 'range' && port >= p.from && port <= p.to)));
    return peers && ports;
  });
}

function assertMatches(
  packed: PackedTables,
  handle: number,
  slots: readonly SlotSpec[],
  remoteGroups: number[][],
): void {
  const words = new Uint32Array(4);
  REMOTES.forEach((remote, r) => {
    const groups = Int32Array.from([...new Set(remoteGroups[r % remoteGroups.length])].sort((a, b) => a - b));
    addressWords(remote.family, remote.value, words);
    for (let protocol = 0; protocol < 3; protocol++)
      for (const port of [...PORTS, 7, 9100]) {
        const expected = expectedSlot(slots, remote, [...groups], protocol, port);
        // The port signature may only rule out ports no rule names.
        if (expected >= 0)
          assert.notEqual(
            packed.portSignature(packed.offsetOf(handle)) & portBit(protocol, port),
            0,
            `signature has ${protocol}/${port}`,
          );
        const match = (first: boolean): number =>
          packed.match(
            packed.offsetOf(handle),
            remote.family,
            words,
            groups,
            0,
            groups.length,
            protocol,
            port,
            first,
          );
        assert.equal(
          match(true),
          expected,
          `first slot for ${remote.family === 4 ? remote.value : 'v6'} ${protocol}/${port}`,
        );
        const any = match(false);
        assert.equal(any >= 0, expected >= 0);
      }
  });
}

const remoteGroupsArb = fc.array(fc.array(fc.nat(11), { maxLength: 4 }), { minLength: 1, maxLength: 4 });

describe('packed tables', () => {
  it('give the first matching slot of the rules, at any width', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          { weight: 4, arbitrary: fc.array(slotArb, { minLength: 1, maxLength: 40, size: 'max' }) },
          { weight: 1, arbitrary: fc.array(slotArb, { minLength: 1030, maxLength: 1100 }) },
        ),
        remoteGroupsArb,
        (slots, remoteGroups) => {
          const packed = new PackedTables();
          const handle = packed.add(build(slots));
          assertMatches(packed, handle, slots, remoteGroups);
        },
      ),
      { numRuns: Math.max(20, Math.floor(RUNS / 3)) },
    );
  });

  it('give the same slots for one-word tables with short prefix lists only (no cold sections but those)', () => {
    // Blocks of up to 32 slots hold bitmap words in their entries and keep a cold header only
    // for what they have: here short IPv4 prefix lists (no hosts, tries or ranges), the case
    // where the cold header is all that holds the prefixes.
    const few = [1, 2, 5, 6]; // 10.0.0.0/8, 10.1.0.0/16, 192.168.0.0/16, 192.168.7.0/24
    const fewSlot: fc.Arbitrary<SlotSpec> = fc.record({
      prim: fc.array(fc.constantFrom(...few), { maxLength: 1 }),
      supp: fc.option(
        fc.record({
          block: fc.constantFrom(...few),
          except: fc.array(fc.constantFrom(...few), { maxLength: 1 }),
        }),
        { nil: undefined },
      ),
      groups: fc.array(fc.nat(11), { maxLength: 2 }),
      port: fc.record({
        kind: fc.constant('port' as const),
        protocol: fc.nat(2),
        port: fc.constantFrom(...PORTS),
      }),
    });
    fc.assert(
      fc.property(
        fc.array(fewSlot, { minLength: 1, maxLength: 4 }),
        remoteGroupsArb,
        (slots, remoteGroups) => {
          const packed = new PackedTables();
          const handle = packed.add(build(slots));
          assertMatches(packed, handle, slots, remoteGroups);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('take every port range that holds the port, however many', () => {
    // 100 distinct ranges all holding 9050; only the last slot's peers hold the remote.
    const slots: SlotSpec[] = Array.from({ length: 100 }, (_, i) => ({
      prim: [i === 99 ? 1 : 5],
      groups: [],
      port: { kind: 'range', protocol: 0, from: 9000 - i, to: 9100 + i },
    }));
    const packed = new PackedTables();
    const handle = packed.add(build(slots));
    assertMatches(packed, handle, slots, [[]]);
  });

  it('keep every live block right when the arena is compacted', () => {
    const packed = new PackedTables();
    const live = new Map<number, SlotSpec[]>();
    const tables = fc.sample(fc.array(slotArb, { minLength: 20, maxLength: 60 }), {
      numRuns: 1500,
      seed: 11,
    });
    let removed = 0;
    tables.forEach((slots, i) => {
      live.set(packed.add(build(slots)), slots);
      // Drop two of every three older tables: garbage builds up and the arena compacts.
      if (i % 3 !== 0) {
        const [oldest] = live.keys();
        if (oldest !== undefined) {
          packed.remove(oldest);
          live.delete(oldest);
          removed++;
        }
      }
    });
    assert.ok(packed.compactions > 0, 'the arena compacted');
    assert.ok(removed > 900);
    for (const [handle, slots] of live) assertMatches(packed, handle, slots, [[0, 3], [5], []]);
  });
});
