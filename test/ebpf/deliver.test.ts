/**
 * Direct delivery between two pods of one node against the kernel (root, clang, bpftool): when
 * `peers` names the receiver (bpf/palisade.h, struct peer), from_pod sends a packet whose two
 * sides are current and allowed straight into the receiver's namespace (TC_ACT_REDIRECT), and
 * anything else — a connection's first packet, a receiver whose side denies it, a side of an
 * earlier epoch, a receiver `peers` does not name — takes the host's path to the receiver's own
 * to_pod as before. The lab's suite runs on it end to end (the lab writes `peers`).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { IpAddress } from '../../src/net/ip.ts';
import { layout, TC_ACT_OK, TC_ACT_SHOT } from '../../src/ebpf/index.ts';
import { addressOf } from '../../src/renderers/ebpf/index.ts';
import { needsEbpf, nodeHooks, scratchProgram } from '../helpers/ebpf.ts';
import { base, db, dbFromWeb, isolated, tcp, web } from '../helpers/ebpf-pods.ts';

const SKIP = needsEbpf('testing direct delivery');
/** What a tc program returns for a packet it redirected (linux/pkt_cls.h). */
const TC_ACT_REDIRECT = 7;

let nextPort = 30000;
const freshPort = (): number => (nextPort = nextPort >= 60000 ? 30000 : nextPort + 1);

/** The same frame with another TCP sequence number: another packet of its connection. */
const withSeq = (frame: Buffer, seq: number): Buffer => {
  const copy = Buffer.from(frame);
  copy.writeUInt32BE(seq, 14 + 20 + 4);
  return copy;
};

describe('direct delivery between two pods of a node', { skip: SKIP }, () => {
  const n1 = scratchProgram('pd1');
  const mac = Uint8Array.from([2, 0, 0, 0, 0, 1]);
  const name = (ip: IpAddress, ifindex: number) =>
    n1.maps().put('peers', layout.peerKey(addressOf(ip).bytes), layout.peerValue(ifindex, mac, mac));
  const forget = (ip: IpAddress) => n1.maps().remove('peers', layout.peerKey(addressOf(ip).bytes));

  it('delivers a connection’s later packets both ways, never its first, and only to a pod `peers` names', () => {
    const n = nodeHooks(n1, [...base, dbFromWeb]);
    try {
      name(db, 1);
      name(web, 1);
      const sport = freshPort();
      const syn = tcp(web, db, sport, 80);
      assert.equal(n.from(syn), TC_ACT_OK, 'the first packet takes the host’s path');
      assert.equal(n.to(syn), TC_ACT_OK, 'and db’s own hook');
      assert.equal(n.from(tcp(db, web, 80, sport)), TC_ACT_REDIRECT, 'db’s reply goes straight to web');
      assert.equal(n.from(withSeq(syn, 2)), TC_ACT_REDIRECT, 'web’s next packet straight to db');
      forget(db);
      assert.equal(n.from(withSeq(syn, 3)), TC_ACT_OK, 'db no longer named: the host’s path');
      assert.equal(n.to(withSeq(syn, 3)), TC_ACT_OK, 'with the hand-over to db’s hook');
    } finally {
      forget(db);
      forget(web);
      n.close();
    }
  });

  it('never delivers what the receiver’s side denies, nor a side judged in an earlier epoch', () => {
    const n = nodeHooks(n1, [...base, dbFromWeb]);
    try {
      name(db, 1);
      name(web, 1);
      const denied = tcp(web, db, freshPort(), 81);
      assert.equal(n.from(denied), TC_ACT_OK, 'web may send to 81');
      assert.equal(n.to(denied), TC_ACT_SHOT, 'db’s ingress is closed on 81');
      const again = withSeq(denied, 2);
      assert.equal(n.from(again), TC_ACT_OK, 'not delivered: db’s side denies it');
      assert.equal(n.to(again), TC_ACT_SHOT, 'db’s hook drops it');

      const sport = freshPort();
      const syn = tcp(web, db, sport, 80);
      assert.equal(n.from(syn), TC_ACT_OK);
      assert.equal(n.to(syn), TC_ACT_OK);
      assert.equal(n.from(withSeq(syn, 2)), TC_ACT_REDIRECT, 'allowed both ways: delivered');
      n.update([...base, isolated('db', 'Ingress')]);
      const next = withSeq(syn, 3);
      assert.equal(n.from(next), TC_ACT_OK, 'after the update: judged again, not delivered');
      assert.equal(n.to(next), TC_ACT_SHOT, 'db’s ingress is closed now');
      assert.equal(n.from(withSeq(syn, 4)), TC_ACT_OK, 'nor later: db’s current side denies it');
    } finally {
      forget(db);
      forget(web);
      n.close();
    }
  });
});
