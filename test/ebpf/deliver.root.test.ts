/**
 * Direct delivery between two pods of one node against the kernel (root, clang, bpftool,
 * conntrack): from_pod sends a packet whose two sides are current and allowed straight into the
 * receiver's namespace (TC_ACT_REDIRECT) when the program has learned, in this epoch, where the
 * host forwards to the receiver (`peers`, from a frame the host sent it: bpf/handoff.h) and the
 * host's conntrack does not translate the connection (bpf/host-ct.h); the host's entry of a
 * connection delivered directly is expired. Anything else — a connection's first packet, a
 * receiver not learned yet or learned in an earlier epoch, a side that denies, a connection the
 * host translates, `--no-direct-delivery` — takes the host's path to the receiver's own to_pod.
 * Each test pins itself to one CPU: learning happens on a taken hand-over, which is per CPU.
 * The host's conntrack here is the test process's namespace's (a test run's packet is on its
 * loopback device); its entries are made with the conntrack tool and removed after.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import type { IpAddress } from '../../src/net/ip.ts';
import { formatIp } from '../../src/net/ip.ts';
import {
  layout,
  pinToCurrentCpu,
  setConfigFlag,
  TC_ACT_OK,
  TC_ACT_SHOT,
} from '../../src/datapaths/ebpf/kernel/index.ts';
import { addressOf } from '../../src/datapaths/ebpf/index.ts';
import { needsEbpf, nodeHooks, scratchProgram, type NodeHooks } from '../helpers/ebpf.ts';
import { needsConntrackTool } from '../helpers/node-netfilter.ts';
import { base, ctSideIn, db, dbFromWeb, dual, isolated, tcp, web } from '../helpers/ebpf-pods.ts';
import { frameOf } from '../../src/datapaths/ebpf/kernel/index.ts';
import { ipOf, policy, type Raw } from '../helpers/builders.ts';

const SKIP = needsEbpf('testing direct delivery') || needsConntrackTool('testing direct delivery');
/** What a tc program returns for a packet it redirected (linux/pkt_cls.h). */
const TC_ACT_REDIRECT = 7;
/** ct_side.host (bpf/palisade.h). */
const HOST_BYPASSED = 1;
const HOST_TRANSLATED = 2;

let nextPort = 30000;
const freshPort = (): number => (nextPort = nextPort >= 60000 ? 30000 : nextPort + 1);

/** The same frame with another TCP sequence number: another packet of its connection. */
const withSeq = (frame: Buffer, seq: number): Buffer => {
  const copy = Buffer.from(frame);
  copy.writeUInt32BE(seq, 14 + 20 + 4);
  return copy;
};

/** A frame as the host forwards it to a pod: its own MAC addresses (destination, source). */
const POD_MAC = Buffer.from([0x0a, 0, 0, 0, 0, 0x02]);
const HOST_MAC = Buffer.from([0x0a, 0, 0, 0, 0, 0xfe]);
const framedByHost = (frame: Buffer): Buffer => {
  const copy = Buffer.from(frame);
  POD_MAC.copy(copy, 0);
  HOST_MAC.copy(copy, 6);
  return copy;
};

/** The host's conntrack in this namespace, through the conntrack tool. */
const conntrack = (args: string[]) => spawnSync('conntrack', args, { encoding: 'utf8' });
/** A TCP entry web:sport → db:80 the host holds, as if it had forwarded the connection's first packet. */
const hostEntry = (sport: number, translatedTo?: number, to = formatIp(db)): void => {
  const made = conntrack([
    '-I',
    ...['-p', 'tcp', '-s', formatIp(web), '-d', to, '--sport', String(sport), '--dport', '80'],
    ...['--state', 'ESTABLISHED', '--timeout', '600'],
    ...(translatedTo !== undefined ? ['--dst-nat', `${formatIp(db)}:${translatedTo}`] : []),
  ]);
  assert.equal(made.status, 0, `conntrack -I: ${made.stderr}`);
};
/** Whether the host still holds a live entry of web:sport → db. */
const hostHolds = (sport: number): boolean =>
  conntrack([
    '-L',
    '-p',
    'tcp',
    '-s',
    formatIp(web),
    '-d',
    formatIp(db),
    '--sport',
    String(sport),
  ]).stdout.includes(`sport=${sport}`);
const forgetHost = (sport: number, to = formatIp(db)): void => {
  conntrack(['-D', '-p', 'tcp', '-s', formatIp(web), '-d', to, '--sport', String(sport)]);
};
/** A Service's virtual address the host translates to db. */
const SERVICE = '10.96.0.10';

describe('direct delivery between two pods of a node', { skip: SKIP }, () => {
  const n1 = scratchProgram('pd1');
  const peerOf = (ip: IpAddress) => {
    const value = n1.maps().get('peers', layout.peerKey(addressOf(ip).bytes));
    return value && layout.decodePeer(value);
  };
  const epoch = () => n1.maps().get('gen', layout.u32(0))!.readUInt32LE(0);
  const forgetPeers = () => {
    for (const [key] of n1.maps().entries('peers')) n1.maps().remove('peers', key);
  };
  /** Runs `body` over n1's hooks for `objects` on one CPU, with no receiver learned before. */
  const pinned = (objects: Raw[], body: (n: NodeHooks) => void) => {
    forgetPeers();
    const n = nodeHooks(n1, objects);
    const pin = pinToCurrentCpu();
    try {
      body(n);
    } finally {
      pin.restore();
      n.close();
    }
  };
  /** web opens a connection to db:80 and db answers, each packet on the host's path. */
  const opened = (n: NodeHooks, sport: number) => {
    const syn = tcp(web, db, sport, 80);
    assert.equal(n.from(syn), TC_ACT_OK, 'the first packet takes the host’s path');
    assert.equal(n.to(framedByHost(syn)), TC_ACT_OK, 'and db’s own hook');
    const reply = tcp(db, web, 80, sport);
    assert.equal(n.from(reply), TC_ACT_OK, 'web not learned yet: the reply takes the host’s path');
    assert.equal(n.to(framedByHost(reply)), TC_ACT_OK, 'to web’s own hook');
    return { syn, reply };
  };
  const webSide = (sport: number) => ctSideIn(n1.maps(), web, db, sport, 80);
  const dbSide = (sport: number) => ctSideIn(n1.maps(), db, web, 80, sport);

  it('learns where the host forwards to a pod from a frame the host sent it, in this epoch', () => {
    pinned([...base, dbFromWeb], (n) => {
      const syn = tcp(web, db, freshPort(), 80);
      assert.equal(n.from(syn), TC_ACT_OK);
      assert.equal(peerOf(db), undefined, 'nothing learned from the sender’s own frame');
      assert.equal(n.to(framedByHost(syn)), TC_ACT_OK);
      const learned = peerOf(db);
      assert.ok(learned, 'db learned from the frame the host sent it');
      assert.equal(learned.ifindex, 1, 'the interface the frame left by (a test run’s: loopback)');
      assert.deepEqual([learned.podMac, learned.hostMac], [POD_MAC, HOST_MAC]);
      assert.equal(learned.epoch, epoch());
      assert.equal(peerOf(web), undefined, 'web has received nothing');
    });
  });

  it('delivers a connection’s later packets both ways, never its first, once each receiver is learned', () => {
    pinned([...base, dbFromWeb], (n) => {
      const sport = freshPort();
      const { syn, reply } = opened(n, sport);
      assert.equal(n.from(withSeq(syn, 2)), TC_ACT_REDIRECT, 'web’s next packet goes straight to db');
      assert.equal(n.from(withSeq(reply, 2)), TC_ACT_REDIRECT, 'db’s next packet straight to web');
      assert.equal(n.from(withSeq(syn, 3)), TC_ACT_REDIRECT);
    });
  });

  it('never delivers what the receiver’s side denies, nor by where it learned in an earlier epoch', () => {
    pinned([...base, dbFromWeb], (n) => {
      const denied = tcp(web, db, freshPort(), 81);
      assert.equal(n.from(denied), TC_ACT_OK, 'web may send to 81');
      assert.equal(n.to(framedByHost(denied)), TC_ACT_SHOT, 'db’s ingress is closed on 81');
      const again = withSeq(denied, 2);
      assert.equal(n.from(again), TC_ACT_OK, 'not delivered: db’s side denies it');
      assert.equal(n.to(framedByHost(again)), TC_ACT_SHOT, 'db’s hook drops it');

      const sport = freshPort();
      const { syn } = opened(n, sport);
      assert.equal(n.from(withSeq(syn, 2)), TC_ACT_REDIRECT, 'allowed both ways: delivered');
      n.update([...base, dbFromWeb, isolated('web', 'Ingress')]);
      assert.equal(n.from(withSeq(syn, 30)), TC_ACT_OK, 'after an update: judged again, on the host’s path');
      assert.notEqual(peerOf(db)?.epoch, epoch(), 'what was learned is of the earlier epoch');
      // That packet's hand-over is not taken (say another packet's to_pod ran first): both
      // sides are current now, but where the host sends db's packets is not known in this epoch.
      const next = withSeq(syn, 3);
      assert.equal(n.from(next), TC_ACT_OK, 'not delivered by where it learned in an earlier epoch');
      assert.equal(n.to(framedByHost(next)), TC_ACT_OK, 'db’s hook takes the hand-over and learns again');
      assert.equal(peerOf(db)?.epoch, epoch());
      assert.equal(n.from(withSeq(syn, 4)), TC_ACT_REDIRECT, 'delivered again');
      n.update([...base, isolated('db', 'Ingress')]);
      const cut = withSeq(syn, 5);
      assert.equal(n.from(cut), TC_ACT_OK, 'judged again');
      assert.equal(n.to(framedByHost(cut)), TC_ACT_SHOT, 'db’s ingress is closed now');
      assert.equal(n.from(withSeq(syn, 6)), TC_ACT_OK, 'never delivered: db’s current side denies it');
    });
  });

  it('learns and delivers IPv6 connections as IPv4 ones, each family on its own', () => {
    pinned([...dual, dbFromWeb], (n) => {
      const [web6, db6] = [ipOf('fd00::1'), ipOf('fd00::2')];
      const sport = freshPort();
      const syn = tcp(web6, db6, sport, 80);
      const reply = tcp(db6, web6, 80, sport);
      assert.equal(n.from(syn), TC_ACT_OK);
      assert.equal(n.to(framedByHost(syn)), TC_ACT_OK);
      assert.equal(n.from(reply), TC_ACT_OK);
      assert.equal(n.to(framedByHost(reply)), TC_ACT_OK);
      assert.equal(peerOf(db6)?.epoch, epoch(), 'db’s IPv6 address learned');
      assert.equal(peerOf(db), undefined, 'not its IPv4 address: no IPv4 frame was forwarded');
      const next = Buffer.from(syn);
      next.writeUInt32BE(2, 14 + 40 + 4);
      assert.equal(n.from(next), TC_ACT_REDIRECT, 'delivered');
    });
  });

  it('delivers nothing, and learns nothing, with direct delivery off', () => {
    pinned([...base, dbFromWeb], (n) => {
      setConfigFlag(n1.maps(), layout.CFG_NO_DIRECT, true);
      try {
        const { syn, reply } = opened(n, freshPort());
        assert.equal(peerOf(db), undefined, 'nothing learned');
        assert.equal(n.from(withSeq(syn, 2)), TC_ACT_OK, 'the host’s path');
        assert.equal(n.from(withSeq(reply, 2)), TC_ACT_OK);
      } finally {
        setConfigFlag(n1.maps(), layout.CFG_NO_DIRECT, false);
      }
    });
  });

  it('expires the host’s entry of a connection it delivers, asking once until the host’s path is taken again', () => {
    const sport = freshPort();
    try {
      pinned([...base, dbFromWeb], (n) => {
        hostEntry(sport);
        const { syn } = opened(n, sport);
        assert.ok(hostHolds(sport), 'the host tracks the connection');
        assert.equal(n.from(withSeq(syn, 2)), TC_ACT_REDIRECT, 'untranslated: delivered');
        assert.equal(hostHolds(sport), false, 'and the host’s entry expired');
        assert.equal(webSide(sport)?.host, HOST_BYPASSED);

        hostEntry(sport);
        assert.equal(n.from(withSeq(syn, 3)), TC_ACT_REDIRECT);
        assert.ok(hostHolds(sport), 'not asked again while every packet is delivered');

        n.update([...base, dbFromWeb, isolated('web', 'Ingress')]);
        const judged = withSeq(syn, 4);
        assert.equal(n.from(judged), TC_ACT_OK, 'judged again: the host’s path');
        assert.equal(webSide(sport)?.host, 0, 'so the host is asked again');
        assert.equal(n.to(framedByHost(judged)), TC_ACT_OK);
        assert.equal(n.from(withSeq(syn, 5)), TC_ACT_REDIRECT);
        assert.equal(hostHolds(sport), false, 'the entry the host made meanwhile expired too');

        forgetPeers();
        const around = withSeq(syn, 6);
        assert.equal(n.from(around), TC_ACT_OK, 'db not known: the host’s path, in the same epoch');
        assert.equal(webSide(sport)?.host, 0, 'so the host is asked again');
        assert.equal(n.to(framedByHost(around)), TC_ACT_OK);
        hostEntry(sport);
        assert.equal(n.from(withSeq(syn, 7)), TC_ACT_REDIRECT);
        assert.equal(hostHolds(sport), false, 'and the entry it made expired');
      });
    } finally {
      forgetHost(sport);
    }
  });

  it('keeps a connection the host translates on the host’s path', () => {
    const sport = freshPort();
    try {
      pinned([...base, dbFromWeb], (n) => {
        hostEntry(sport, 8080);
        const { syn } = opened(n, sport);
        assert.equal(n.from(withSeq(syn, 2)), TC_ACT_OK, 'the host maps db:80 to db:8080: its path');
        assert.equal(webSide(sport)?.host, HOST_TRANSLATED);
        assert.ok(hostHolds(sport), 'and its entry stays');
        assert.equal(n.from(withSeq(syn, 3)), TC_ACT_OK, 'nor later');
      });
    } finally {
      forgetHost(sport);
    }
  });

  it('asks once for both directions: the host’s entry is one for the connection', () => {
    const sport = freshPort();
    try {
      pinned([...base, dbFromWeb], (n) => {
        const { syn, reply } = opened(n, sport);
        assert.equal(n.from(withSeq(syn, 2)), TC_ACT_REDIRECT);
        assert.deepEqual([webSide(sport)?.host, dbSide(sport)?.host], [HOST_BYPASSED, HOST_BYPASSED]);
        hostEntry(sport);
        assert.equal(n.from(withSeq(reply, 2)), TC_ACT_REDIRECT, 'db’s packets too');
        assert.ok(hostHolds(sport), 'without asking again');
      });
    } finally {
      forgetHost(sport);
    }
  });

  it('asks again after a packet of the connection came by the host without a hand-over', () => {
    const sport = freshPort();
    try {
      pinned([...base, dbFromWeb], (n) => {
        const { syn, reply } = opened(n, sport);
        assert.equal(n.from(withSeq(syn, 2)), TC_ACT_REDIRECT);
        // The same ports again, through a Service the host translates to db: at db's hook the
        // same tuple, but no from_pod handed it over (web's hook saw the Service's address).
        hostEntry(sport, 80, SERVICE);
        assert.equal(n.to(framedByHost(withSeq(syn, 100))), TC_ACT_OK, 'db’s hook: still allowed');
        assert.deepEqual([webSide(sport)?.host, dbSide(sport)?.host], [0, 0], 'both directions ask again');
        assert.equal(
          n.from(withSeq(reply, 100)),
          TC_ACT_OK,
          'db’s answer takes the host’s path, to be untranslated',
        );
        assert.equal(dbSide(sport)?.host, HOST_TRANSLATED);
      });
    } finally {
      forgetHost(sport, SERVICE);
    }
  });

  it('keeps a packet on the host’s path whose reply tuple a translated entry holds', () => {
    const sport = freshPort();
    try {
      pinned([...base, dbFromWeb], (n) => {
        // A Service's connection from web's port, translated to db:80: its reply is db:80 → web.
        hostEntry(sport, 80, SERVICE);
        const { syn } = opened(n, sport);
        assert.equal(
          n.from(withSeq(syn, 2)),
          TC_ACT_OK,
          'web → db:80 from that port: the host must remap it',
        );
        assert.equal(webSide(sport)?.host, HOST_TRANSLATED);
      });
    } finally {
      forgetHost(sport, SERVICE);
    }
  });

  it('delivers UDP too, but never a protocol the host’s conntrack cannot be asked about', () => {
    const anyProtocol = policy('a', 'db', {
      podSelector: { matchLabels: { app: 'db' } },
      ingress: [
        {
          from: [{ podSelector: { matchLabels: { app: 'web' } } }],
          ports: ['TCP', 'UDP', 'SCTP'].map((protocol) => ({ protocol, port: 80 })),
        },
      ],
    });
    pinned([...base, anyProtocol], (n) => {
      const sport = freshPort();
      const udp = frameOf({ src: web, dst: db, protocol: 'UDP', srcPort: sport, dstPort: 80 });
      const reply = frameOf({ src: db, dst: web, protocol: 'UDP', srcPort: 80, dstPort: sport });
      assert.equal(n.from(udp), TC_ACT_OK);
      assert.equal(n.to(framedByHost(udp)), TC_ACT_OK);
      assert.equal(n.from(reply), TC_ACT_OK);
      assert.equal(n.to(framedByHost(reply)), TC_ACT_OK);
      assert.equal(n.from(udp), TC_ACT_REDIRECT, 'UDP: delivered');
      const sctp = frameOf({ src: web, dst: db, protocol: 'SCTP', srcPort: sport, dstPort: 80 });
      assert.equal(n.from(sctp), TC_ACT_OK);
      assert.equal(n.to(framedByHost(sctp)), TC_ACT_OK);
      assert.equal(n.from(sctp), TC_ACT_OK, 'SCTP: the host’s path, always');
    });
  });
});
