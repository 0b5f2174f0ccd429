/**
 * The BPF program's connection tracking (root, clang, bpftool), with packets run through both
 * hooks of node n1 with BPF_PROG_TEST_RUN: it passes replies, cuts a flow an update denies at its
 * next packet (and keeps it when asked to), keeps one entry per connection with a side per local
 * end, carries a first fragment's verdict to the fragments after it, and drops an address the
 * node renders no pod for.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { type IpAddress } from '../../src/net/ip.ts';
import {
  frameOf,
  pinDir,
  PinnedProgram,
  TC_ACT_OK,
  TC_ACT_SHOT,
} from '../../src/datapaths/ebpf/kernel/index.ts';
import { changesBetween } from '../../src/pipeline/index.ts';
import { clusterOf, ipOf, policy, type Raw } from '../helpers/builders.ts';
import { needsEbpf, nodeHooks, nodePipeline, scratchProgram } from '../helpers/ebpf.ts';
import { base, ctSideIn, db, dbFromWeb, dual, isolated, tcp, v4, web } from '../helpers/ebpf-pods.ts';
import { freshPort, withExtraHeaders } from './program-helpers.ts';

const SKIP = needsEbpf('testing the BPF program');

describe('the BPF program: connections', { skip: SKIP }, () => {
  const n1 = scratchProgram('pt1');

  /** A local end's side of a TCP connection's entry in n1's connection table (undefined: not judged). */
  const ctSide = (local: IpAddress, remote: IpAddress, localPort: number, remotePort: number) =>
    ctSideIn(n1.maps(), local, remote, localPort, remotePort);

  /** One node's pipeline over n1's maps, and its two programs. */
  const node = (objects: Raw[], recheckFlows = true) => nodeHooks(n1, objects, recheckFlows);

  it('passes replies where the reverse direction is denied, both ends on the node', () => {
    const n = node([...base, dbFromWeb, isolated('web', 'Ingress'), isolated('db', 'Egress')]);
    try {
      const sport = freshPort();
      assert.equal(n.from(tcp(web, db, sport, 80)), TC_ACT_OK, 'web sends');
      assert.equal(n.to(tcp(web, db, sport, 80)), TC_ACT_OK, 'db accepts');
      assert.equal(n.from(tcp(db, web, 80, sport)), TC_ACT_OK, 'db replies (its egress is closed)');
      assert.equal(n.to(tcp(db, web, 80, sport)), TC_ACT_OK, 'web takes the reply (its ingress is closed)');
      const other = freshPort();
      assert.equal(n.from(tcp(db, web, other, 80)), TC_ACT_SHOT, 'db cannot open a connection to web');
    } finally {
      n.close();
    }
  });

  // A connection has one entry on the node, whose ends are in a canonical order, which every
  // packet finds with one lookup — its replies, and both ends' hooks when both are local pods,
  // each judging its own side; after an update, whichever packet comes first judges it again as
  // its end's first packet was judged — that packet's direction and destination port, not the reply's.
  it('judges a connection again by its first packet after an update, whichever end sends first, from one entry per connection with a side per local end', () => {
    const n = node([...base, dbFromWeb]);
    try {
      const sport = freshPort();
      assert.equal(n.from(tcp(web, db, sport, 80)), TC_ACT_OK, 'web opens');
      assert.equal(n.to(tcp(web, db, sport, 80)), TC_ACT_OK, 'db accepts');
      assert.equal(n.from(tcp(db, web, 80, sport)), TC_ACT_OK, 'db replies');
      assert.equal(n.to(tcp(db, web, 80, sport)), TC_ACT_OK, 'web takes the reply');
      const tracked = n1
        .maps()
        .entries('conntrack')
        .filter(([key]) => key.readUInt16LE(2) === sport || key.readUInt16LE(4) === sport);
      assert.equal(tracked.length, 1, 'one entry for both ends: neither db nor the replies made another');
      assert.equal(ctSide(web, db, sport, 80)?.direction, 0, 'web opened it (egress)');
      assert.equal(ctSide(db, web, 80, sport)?.direction, 1, 'db accepted it (ingress)');
      // Now db lets web in on the connection's source port only, and web may send to db on 80 only.
      n.update([
        ...base,
        policy('a', 'db', {
          podSelector: { matchLabels: { app: 'db' } },
          ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: sport }] }],
        }),
        policy('a', 'web', {
          podSelector: { matchLabels: { app: 'web' } },
          policyTypes: ['Egress'],
          egress: [{ to: [{ podSelector: { matchLabels: { app: 'db' } } }], ports: [{ port: 80 }] }],
        }),
      ]);
      assert.equal(
        n.from(tcp(db, web, 80, sport)),
        TC_ACT_SHOT,
        'db’s reply first: judged as db’s ingress on 80',
      );
      assert.equal(
        n.to(tcp(db, web, 80, sport)),
        TC_ACT_OK,
        'web’s reply first: judged as web’s egress to 80',
      );
      assert.equal(n.to(tcp(web, db, sport, 80)), TC_ACT_SHOT, 'the request at db');
      assert.equal(n.from(tcp(web, db, sport, 80)), TC_ACT_OK, 'the request at web');
    } finally {
      n.close();
    }
  });

  it('reads ports where they are for IPv4 and IPv6, in place and after options or extension headers', () => {
    const n = node([...dual, dbFromWeb]);
    try {
      for (const [from, to] of [
        [web, db],
        [ipOf('fd00::1'), ipOf('fd00::2')],
      ] as const)
        for (const extra of [false, true]) {
          const frame = (dstPort: number) => {
            const f = tcp(from, to, freshPort(), dstPort);
            return extra ? withExtraHeaders(f) : f;
          };
          const where = `IPv${from.family}${extra ? ' with extra headers' : ''}`;
          assert.equal(n.to(frame(80)), TC_ACT_OK, `${where}: the allowed port`);
          assert.equal(n.to(frame(81)), TC_ACT_SHOT, `${where}: another port`);
        }
    } finally {
      n.close();
    }
  });

  it('cuts a tracked connection at its next packet after an update denies it — replies too; keeps unrelated ones', () => {
    const n = node([...base, dbFromWeb]);
    try {
      const sport = freshPort();
      assert.equal(n.to(tcp(web, db, sport, 80)), TC_ACT_OK);
      n.update([...base, dbFromWeb, isolated('web', 'Ingress')]);
      assert.equal(n.to(tcp(web, db, sport, 80)), TC_ACT_OK, 'an unrelated update keeps the flow');
      n.update([...base, isolated('db', 'Ingress')]);
      assert.equal(n.to(tcp(web, db, sport, 80)), TC_ACT_SHOT, 'the request is cut');
      assert.equal(n.from(tcp(db, web, 80, sport)), TC_ACT_SHOT, 'its reply too');
      n.update([...base, dbFromWeb]);
      assert.equal(n.to(tcp(web, db, sport, 80)), TC_ACT_OK, 'allowed again');
    } finally {
      n.close();
    }
  });

  it('keeps tracked connections across a denying update when told to (--keep-flows)', () => {
    const n = node([...base, dbFromWeb], false);
    try {
      const sport = freshPort();
      assert.equal(n.to(tcp(web, db, sport, 80)), TC_ACT_OK);
      n.update([...base, isolated('db', 'Ingress')]);
      assert.equal(n.to(tcp(web, db, sport, 80)), TC_ACT_OK);
      assert.equal(n.to(tcp(web, db, freshPort(), 80)), TC_ACT_SHOT, 'new connections follow the policy');
    } finally {
      n.close();
    }
  });

  // A judgement made in this epoch decides the same judgement (local, remote, direction,
  // protocol, port) again from a per-CPU slot, without the records or tables; an update moves the
  // epoch, and the slot of the earlier one decides nothing. Proved by forging a slot's verdict:
  // the next new connection follows the forgery in the same epoch, and the policy after an update.
  it('decides a judgement made in this epoch again from its verdict cache, and never across an update', () => {
    const n = node([...base, dbFromWeb]);
    const path = join(pinDir(n1.location), 'maps', 'verdicts');
    try {
      assert.equal(n.to(tcp(web, db, freshPort(), 80)), TC_ACT_OK, 'judged by the tables');
      const slots = (
        JSON.parse(
          execFileSync('bpftool', ['-j', 'map', 'dump', 'pinned', path], {
            encoding: 'utf8',
            maxBuffer: 1 << 30,
          }),
        ) as {
          key: string[];
          values: { value: string[] }[];
        }[]
      ).flatMap(({ key, values }) =>
        values.map(({ value }) => ({ key, value: Buffer.from(value.map((h: string) => parseInt(h, 16))) })),
      );
      // struct verdict_slot: local[16], remote[16], query (8 bytes: port, protocol index,
      // direction, family, config), check (8: the epoch, then the verdict's bit). Earlier tests
      // left slots of the same pods in earlier epochs: the latest is this judgement's.
      const query = 80n | (1n << 24n) | (4n << 32n);
      const mine = slots
        .filter(
          ({ value }) =>
            value.subarray(0, 16).equals(v4(db)) &&
            value.subarray(16, 32).equals(v4(web)) &&
            (value.readBigUInt64LE(32) & 0xffffffffffn) === query &&
            value.readBigUInt64LE(40) !== 0n,
        )
        .sort((x, y) => y.value.readUInt32LE(40) - x.value.readUInt32LE(40))[0];
      assert.ok(mine, 'the judgement is in a slot: db’s ingress from web');
      assert.equal(mine.value[44]! & 1, 1, 'with its verdict: allowed');
      mine.value[44]! &= ~1; // forged: denied (bpftool writes it to every CPU's copy)
      const hex = (bytes: Iterable<number | string>) =>
        [...bytes].map((b) =>
          typeof b === 'string' ? b.replace('0x', '') : b.toString(16).padStart(2, '0'),
        );
      execFileSync('bpftool', [
        'map',
        'update',
        'pinned',
        path,
        'key',
        'hex',
        ...hex(mine.key),
        'value',
        'hex',
        ...hex(mine.value),
      ]);
      assert.equal(
        n.to(tcp(web, db, freshPort(), 80)),
        TC_ACT_SHOT,
        'the same judgement again: from the slot',
      );
      assert.equal(n.to(tcp(web, db, freshPort(), 81)), TC_ACT_SHOT, 'another port: its own judgement');
      n.update([...base, dbFromWeb, isolated('web', 'Ingress')]);
      assert.equal(n.to(tcp(web, db, freshPort(), 80)), TC_ACT_OK, 'after an unrelated update: judged again');
      n.update([...base, isolated('db', 'Ingress')]);
      assert.equal(n.to(tcp(web, db, freshPort(), 80)), TC_ACT_SHOT, 'after a denying update: denied');
      assert.equal(n.to(tcp(web, db, freshPort(), 80)), TC_ACT_SHOT, 'and from the slot');
      n.update([...base, dbFromWeb]);
      assert.equal(n.to(tcp(web, db, freshPort(), 80)), TC_ACT_OK, 'allowed again');
    } finally {
      n.close();
    }
  });

  it('drops what no rendered pod owns, passes what no policy speaks of (ARP, neighbour discovery)', () => {
    const n = node([...base, isolated('db', 'Ingress')]);
    try {
      assert.equal(n.from(tcp(ipOf('10.0.0.9'), db, freshPort(), 80)), TC_ACT_SHOT, 'a spoofed source');
      assert.equal(n.to(tcp(web, ipOf('10.0.0.9'), freshPort(), 80)), TC_ACT_SHOT, 'an unknown destination');
      const arp = Buffer.alloc(42);
      arp.writeUInt16BE(0x0806, 12);
      assert.equal(n.from(arp), TC_ACT_OK);
      const nd = frameOf({
        src: ipOf('fe80::1'),
        dst: ipOf('fe80::2'),
        protocol: 'UDP',
        srcPort: 0,
        dstPort: 0,
      });
      nd[14 + 6] = 58; // ICMPv6
      nd[14 + 40] = 135; // neighbour solicitation
      assert.equal(n.to(nd), TC_ACT_OK);
      // The kernel's test runs refuse frames shorter than an IP header: cut inside the ports.
      const truncated = tcp(web, db, freshPort(), 80).subarray(0, 14 + 20 + 2);
      assert.equal(n.to(truncated), TC_ACT_SHOT, 'a TCP header cut short');
    } finally {
      n.close();
    }
  });

  // The lab once replaced a node's renderer while the old one's tail still waited for its grace
  // period; that tail then rewrote "its" old side — by then the live side, switched by the new
  // renderer — with its own policy, and probes passed for ~10 ms where the live policy denied.
  it('a writer replaced while its tail waits for a grace period never writes the side packets read', async () => {
    const maps = n1.maps();
    const deny = [...base, isolated('db', 'Ingress')];
    const first = nodePipeline('n1', maps);
    first.pipeline.apply({ type: 'resync', cluster: clusterOf(deny) });
    first.renderer.settle();
    // An update that allows web → db, its tail (the old side brought level) left pending.
    first.pipeline.applyBatch(changesBetween(clusterOf(deny), clusterOf([...base, dbFromWeb])));
    const to = PinnedProgram.open(n1.location, 'to_pod');
    const verdict = () => to.run(tcp(web, db, freshPort(), 80)).retval;
    try {
      assert.equal(verdict(), TC_ACT_OK);
      // Answered right after the first writer's tail, before the second writer's (which deletes
      // the allowing table and so would hide what the first wrote).
      const afterStaleTail = new Promise<number>((resolve, reject) =>
        maps.graceAsync((error) => (error ? reject(error) : resolve(verdict()))),
      );
      // A second writer takes the maps over (reads them back) and makes the deny live.
      const second = nodePipeline('n1', maps);
      second.pipeline.apply({ type: 'resync', cluster: clusterOf(deny) });
      assert.equal(verdict(), TC_ACT_SHOT);
      // The first writer's grace period ends: its tail must not touch the maps.
      assert.equal(await afterStaleTail, TC_ACT_SHOT, 'the live side still denies after the stale tail');
      assert.throws(
        () => first.pipeline.applyBatch(changesBetween(clusterOf([...base, dbFromWeb]), clusterOf(base))),
        /another writer switched them/,
      );
      second.renderer.settle();
    } finally {
      to.close();
    }
  });

  it('lets the fragments after an allowed first fragment through, and no others', () => {
    const n = node([...base, dbFromWeb]);
    try {
      const fragment = (first: boolean, id: number, port: number) => {
        const f = tcp(web, db, 40000, port);
        f.writeUInt16BE(id, 14 + 4);
        f.writeUInt16BE(first ? 0x2000 : 0x0010, 14 + 6); // MF set; or offset 128 bytes
        if (!first) f.fill(0, 14 + 20); // a later fragment carries payload, not ports
        return f;
      };
      assert.equal(n.to(fragment(false, 7, 80)), TC_ACT_SHOT, 'no first fragment seen');
      assert.equal(n.to(fragment(true, 7, 80)), TC_ACT_OK);
      assert.equal(n.to(fragment(false, 7, 80)), TC_ACT_OK, 'follows its first fragment');
      assert.equal(n.to(fragment(true, 8, 81)), TC_ACT_SHOT);
      assert.equal(n.to(fragment(false, 8, 81)), TC_ACT_SHOT, 'a denied first fragment opens nothing');
    } finally {
      n.close();
    }
  });
});
