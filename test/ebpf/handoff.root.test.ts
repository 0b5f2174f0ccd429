/**
 * The hand-over between two pods of one node against the kernel (root, clang, bpftool): the
 * sender's from_pod settles the receiver's side and leaves its verdict in a per-CPU slot for the
 * receiver's to_pod (bpf/handoff.h). Each test pins itself to one CPU, so its test runs of the two
 * hooks share the slot the way one packet's two hooks do. It proves the slot serves exactly one
 * packet in one epoch and lives no longer than the next to_pod, and that after an update the
 * receiver's side is judged again (in the new epoch, by its own first packet's direction and port)
 * before it is handed over, never taken from the earlier epoch.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { IpAddress } from '../../src/net/ip.ts';
import {
  frameOf,
  layout,
  pinDir,
  pinToCurrentCpu,
  setConfigFlag,
  TC_ACT_OK,
  TC_ACT_SHOT,
} from '../../src/datapaths/ebpf/kernel/index.ts';
import { ipOf, pod, policy, type Raw } from '../helpers/builders.ts';
import { needsEbpf, nodeHooks, scratchProgram, type NodeHooks } from '../helpers/ebpf.ts';
import { base, ctSideIn, db, dbFromWeb, dual, isolated, tcp, web } from '../helpers/ebpf-pods.ts';

const SKIP = needsEbpf('testing the BPF hand-over');

let nextPort = 20000;
/** A source port no earlier packet used, so every packet is a new connection. */
const freshPort = (): number => (nextPort = nextPort >= 60000 ? 20000 : nextPort + 1);

describe('the hand-over between two pods of a node', { skip: SKIP }, () => {
  const n1 = scratchProgram('ph1');
  /** A local end's side of a TCP connection's entry in n1's connection table (undefined: not judged). */
  const ctSide = (local: IpAddress, remote: IpAddress, localPort: number, remotePort: number) =>
    ctSideIn(n1.maps(), local, remote, localPort, remotePort);
  const node = (objects: Raw[]) => nodeHooks(n1, objects);
  /** Runs `body` over n1's hooks for `objects`, pinned to one CPU; both undone after. */
  const pinned = (objects: Raw[], body: (n: NodeHooks, cpu: number) => void) => {
    const n = node(objects);
    const pin = pinToCurrentCpu();
    try {
      body(n, pin.cpu);
    } finally {
      pin.restore();
      n.close();
    }
  };
  /** The same frame with another TCP sequence number: another packet of its connection. */
  const withSeq = (frame: Buffer, seq: number) => {
    const copy = Buffer.from(frame);
    copy.writeUInt32BE(seq, 14 + 20 + 4);
    return copy;
  };

  const handoffPath = () => join(pinDir(n1.location), 'maps', 'handoffs');
  /** A CPU's hand-over slot (struct handoff: src, dst, ports, ident, check at 48). */
  const handoffSlot = (cpu: number): Buffer => {
    const [entry] = JSON.parse(
      execFileSync('bpftool', ['-j', 'map', 'dump', 'pinned', handoffPath()], { encoding: 'utf8' }),
    ) as { values: { cpu: number; value: string[] }[] }[];
    const value = entry?.values.find((v) => v.cpu === cpu)?.value;
    assert.ok(value, 'a slot for this CPU');
    return Buffer.from(value.map((h) => parseInt(h, 16)));
  };

  /** Writes every CPU's hand-over slot. */
  const writeSlot = (value: Buffer) =>
    execFileSync('bpftool', [
      'map',
      'update',
      'pinned',
      handoffPath(),
      'key',
      'hex',
      '00',
      '00',
      '00',
      '00',
      'value',
      'hex',
      ...[...value].map((b) => b.toString(16).padStart(2, '0')),
    ]);
  /** A CPU's slot's verdict forged to deny (bit 32 of its check: outside the hash it checks). */
  const forgeDenyAt = (cpu: number) => {
    const value = handoffSlot(cpu);
    assert.notEqual(value.readBigUInt64LE(48), 0n, 'a verdict was handed over');
    assert.equal(value[52]! & 1, 1, 'allowed');
    value[52]! &= ~1;
    writeSlot(value);
  };

  // Between two pods of the node, from_pod judges the receiver's side too, writes it into the
  // connection's entry, and hands its verdict on this very packet to the to_pod that runs next
  // on the same CPU (the test pins itself to one CPU so its test runs do the same). Proved by
  // forging the handed verdict: to_pod follows it once, for exactly that packet in that epoch.
  it('hands the receiver’s verdict from from_pod to to_pod for exactly one packet between pods of the node', () => {
    const remote = ipOf('10.0.1.1');
    const n = node([
      ...base,
      pod('a', 'far', { app: 'far' }, { ips: ['10.0.1.1'], node: 'n2' }),
      dbFromWeb,
      policy('a', 'far', {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'far' } } }] }],
      }),
    ]);
    const pin = pinToCurrentCpu();
    const slot = () => handoffSlot(pin.cpu);
    const forgeDeny = () => forgeDenyAt(pin.cpu);
    try {
      const sport = freshPort();
      const syn = tcp(web, db, sport, 80);
      assert.equal(n.from(syn), TC_ACT_OK, 'web opens');
      assert.deepEqual(
        ctSide(db, web, 80, sport) && {
          allowed: ctSide(db, web, 80, sport)?.allowed,
          direction: ctSide(db, web, 80, sport)?.direction,
        },
        { allowed: true, direction: 1 },
        'db’s side judged at web’s hook (its ingress), in the one insert',
      );
      forgeDeny();
      assert.equal(n.to(syn), TC_ACT_SHOT, 'db’s hook follows the handed verdict');
      assert.equal(n.to(syn), TC_ACT_OK, 'once: the same packet again takes the entry');

      // A tracked packet: both sides current in the entry, handed over from it. (Each to_pod
      // empties the slot, so each check below is given its own hand-over.)
      const next = withSeq(syn, 1);
      assert.equal(n.from(next), TC_ACT_OK);
      forgeDeny();
      assert.equal(n.to(withSeq(syn, 2)), TC_ACT_OK, 'another packet of the connection: not its verdict');
      assert.equal(n.from(next), TC_ACT_OK);
      forgeDeny();
      assert.equal(n.to(tcp(web, db, freshPort(), 80)), TC_ACT_OK, 'another connection: not its verdict');
      assert.equal(n.from(next), TC_ACT_OK);
      forgeDeny();
      assert.equal(n.to(next), TC_ACT_SHOT, 'the packet it was handed for');
      assert.equal(n.from(next), TC_ACT_OK);
      forgeDeny();
      n.update([...base, dbFromWeb, isolated('web', 'Ingress')]);
      assert.equal(
        n.to(next),
        TC_ACT_OK,
        'an update between the hooks: the verdict of an old epoch decides nothing',
      );

      // A receiver whose side denies: handed over as denied, as its own hook judges it.
      const closed = tcp(web, db, freshPort(), 81);
      assert.equal(n.from(closed), TC_ACT_OK, 'web may send anywhere');
      assert.equal(slot()[52]! & 1, 0, 'handed over: denied');
      assert.equal(n.to(closed), TC_ACT_SHOT);

      // Not to a pod of this node: nothing handed over, no side judged for it.
      writeSlot(Buffer.alloc(64));
      const out = freshPort();
      assert.equal(n.from(tcp(db, remote, out, 443)), TC_ACT_OK);
      assert.equal(slot().readBigUInt64LE(48), 0n, 'no hand-over to another node');
      assert.ok(ctSide(db, remote, out, 443), 'db’s side tracked');
      assert.equal(ctSide(remote, db, 443, out), undefined, 'the far end’s side not judged here');

      // Off (the benchmarks' comparison): each hook judges its own side.
      setConfigFlag(n1.maps(), layout.CFG_NO_HANDOFF, true);
      const alone = freshPort();
      assert.equal(n.from(tcp(web, db, alone, 80)), TC_ACT_OK);
      assert.equal(slot().readBigUInt64LE(48), 0n, 'off: nothing handed over');
      assert.equal(ctSide(db, web, 80, alone), undefined, 'off: db’s side left to its hook');
      assert.equal(n.to(tcp(web, db, alone, 80)), TC_ACT_OK);
      setConfigFlag(n1.maps(), layout.CFG_NO_HANDOFF, false);
    } finally {
      pin.restore();
      n.close();
    }
  });

  it('hands over IPv6 and UDP packets too, and to_pod empties the slot it takes', () => {
    const n = node([
      ...dual,
      dbFromWeb,
      policy('a', 'db-udp', {
        podSelector: { matchLabels: { app: 'db' } },
        ingress: [
          {
            from: [{ podSelector: { matchLabels: { app: 'web' } } }],
            ports: [{ port: 53, protocol: 'UDP' }],
          },
        ],
      }),
    ]);
    const pin = pinToCurrentCpu();
    const bytes16 = (ip: IpAddress) => {
      const b = Buffer.alloc(16);
      const length = ip.family === 4 ? 4 : 16;
      for (let i = 0; i < length; i++) b[i] = Number((ip.value >> BigInt(8 * (length - 1 - i))) & 0xffn);
      return b;
    };
    try {
      for (const [from, to] of [
        [web, db],
        [ipOf('fd00::1'), ipOf('fd00::2')],
      ] as const)
        for (const protocol of ['TCP', 'UDP'] as const) {
          const where = `IPv${from.family} ${protocol}`;
          const packet = {
            src: from,
            dst: to,
            protocol,
            srcPort: freshPort(),
            dstPort: protocol === 'TCP' ? 80 : 53,
          };
          assert.equal(n.from(frameOf(packet)), TC_ACT_OK, `${where}: sent`);
          const handed = handoffSlot(pin.cpu);
          assert.notEqual(handed.readBigUInt64LE(48), 0n, `${where}: handed over`);
          assert.deepEqual(
            [handed.subarray(0, 16), handed.subarray(16, 32)],
            [bytes16(from), bytes16(to)],
            `${where}: for this packet`,
          );
          assert.equal(handed[52]! & 1, 1, `${where}: allowed`);
          assert.equal(n.to(frameOf(packet)), TC_ACT_OK, `${where}: received`);
          assert.equal(handoffSlot(pin.cpu).readBigUInt64LE(48), 0n, `${where}: taken`);
          const closed = { ...packet, srcPort: freshPort(), dstPort: 9 };
          assert.equal(n.from(frameOf(closed)), TC_ACT_OK, `${where}: sent to a closed port`);
          assert.equal(handoffSlot(pin.cpu)[52]! & 1, 0, `${where}: handed over denied`);
          assert.equal(n.to(frameOf(closed)), TC_ACT_SHOT, `${where}: dropped at the receiver`);
        }
    } finally {
      pin.restore();
      n.close();
    }
  });

  // A packet that passed from_pod and never reached its to_pod (dropped, queued or redirected in
  // between) must not leave its verdict for a later identical packet: the next to_pod on the CPU,
  // whichever packet it runs for, empties the slot. Proved by forging the left verdict.
  it('empties a slot at the next to_pod on its CPU, matched or not: a later identical packet takes the ordinary path', () =>
    pinned([...base, dbFromWeb], (n, cpu) => {
      const lost = tcp(web, db, freshPort(), 80);
      assert.equal(n.from(lost), TC_ACT_OK, 'web sends; its to_pod does not run');
      forgeDenyAt(cpu);
      assert.equal(n.to(tcp(web, db, freshPort(), 80)), TC_ACT_OK, 'another packet’s to_pod runs');
      assert.equal(handoffSlot(cpu).readBigUInt64LE(48), 0n, 'and empties the slot');
      assert.equal(n.to(lost), TC_ACT_OK, 'the packet handed for comes later: judged from the entry');
    }));

  // After an update, the receiver's side in the entry is an earlier epoch's: from_pod judges it
  // again in the new epoch (as the receiver's to_pod would: by its first packet's direction and
  // port) before handing it over, whether the sender's own side is judged again on this packet or
  // was made current by an earlier one.
  describe('after an update, hands over the receiver’s side judged in the new epoch', () => {
    for (const senderCurrent of [false, true])
      it(`a request whose receiver’s ingress the update closes is dropped at the receiver (the sender’s side ${senderCurrent ? 'made current by a reply' : 'judged again on it'})`, () =>
        pinned([...base, dbFromWeb], (n) => {
          const sport = freshPort();
          const syn = tcp(web, db, sport, 80);
          assert.equal(n.from(syn), TC_ACT_OK, 'web opens');
          assert.equal(n.to(syn), TC_ACT_OK, 'db accepts');
          n.update([...base, isolated('db', 'Ingress')]);
          if (senderCurrent) {
            assert.equal(n.to(tcp(db, web, 80, sport)), TC_ACT_OK, 'a reply makes web’s side current');
            assert.ok(
              ctSide(web, db, sport, 80)!.epoch > ctSide(db, web, 80, sport)!.epoch,
              'web’s side in the new epoch, db’s in the earlier',
            );
          }
          const next = withSeq(syn, 1);
          assert.equal(n.from(next), TC_ACT_OK, 'web may still send');
          assert.equal(n.to(next), TC_ACT_SHOT, 'db’s ingress is closed now');
        }));

    // web opened the connection: a reply to it is judged as web's egress to db's port, not as
    // web's ingress on its own source port. Each policy pair opens one of the two and closes the other.
    it('a reply is judged as the egress its receiver opened, not as an ingress on its own port', () => {
      const webEgressTo = (port: number) =>
        policy('a', 'web-egress', {
          podSelector: { matchLabels: { app: 'web' } },
          policyTypes: ['Egress'],
          egress: [{ to: [{ podSelector: { matchLabels: { app: 'db' } } }], ports: [{ port }] }],
        });
      const webIngressFromDbOn = (port: number) =>
        policy('a', 'web-ingress', {
          podSelector: { matchLabels: { app: 'web' } },
          policyTypes: ['Ingress'],
          ingress: [{ from: [{ podSelector: { matchLabels: { app: 'db' } } }], ports: [{ port }] }],
        });
      for (const egressOpen of [false, true])
        pinned([...base, dbFromWeb], (n) => {
          const where = egressOpen ? 'web’s egress to 80 open' : 'web’s egress to 80 closed';
          const sport = freshPort();
          const syn = tcp(web, db, sport, 80);
          assert.equal(n.from(syn), TC_ACT_OK, `${where}: web opens`);
          assert.equal(n.to(syn), TC_ACT_OK, `${where}: db accepts`);
          n.update(
            egressOpen
              ? [...base, dbFromWeb, webEgressTo(80), webIngressFromDbOn(sport + 1)]
              : [...base, dbFromWeb, webEgressTo(81), webIngressFromDbOn(sport)],
          );
          const reply = tcp(db, web, 80, sport);
          assert.equal(n.from(reply), TC_ACT_OK, `${where}: db replies (its side judged again: allowed)`);
          assert.equal(n.to(reply), egressOpen ? TC_ACT_OK : TC_ACT_SHOT, `${where}: web takes the reply`);
        });
    });
  });
});
