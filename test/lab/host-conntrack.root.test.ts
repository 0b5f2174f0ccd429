/**
 * Direct delivery between two pods of a node next to the host's own netfilter, as a node running
 * kube-proxy has it (docs/ARCHITECTURE.md, "Delivered directly"): a packet that from_pod sends
 * straight into the receiver's namespace skips the host's NAT and its conntrack, so the program
 * asks the host's conntrack first — a translated connection (a Service's DNAT and the un-NAT of
 * its replies, a masquerade) always takes the host's path, and the host's entry of a connection
 * delivered directly is expired at once, so the host neither holds it for days nor later judges a
 * packet of it `ct state invalid` by a window it stopped seeing. Each test builds a one-node eBPF
 * lab with two pods, writes kube-proxy-like nft rules into the node's namespace itself (nat
 * hooks, the forward chain's `ct state invalid` drop, counted: it must stay 0 in every test), and
 * removes the lab, namespaces, rules and temp dirs again, passed or failed. The cases: a port
 * translated on a pod's own address; a Service's address, TCP and UDP, across an update; one
 * socket to a pod and to its Service, and a port reused for a Service after a direct connection
 * (the same tuple at the backend); a masquerade between pods; a long-lived connection across
 * updates (no INVALID, no retransmission); no host entries left by connections delivered
 * directly; and delivery seen in the host's forward counters, on and off. Needs root, clang,
 * bpftool, conntrack.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { needsEbpf } from '../helpers/ebpf.ts';
import {
  between,
  hostConnections,
  needsConntrackTool,
  nftCounter,
  nftLoad,
  retransmittedSegments,
} from '../helpers/node-netfilter.ts';
import {
  converse,
  exchangeAll,
  invalidOn,
  kubeProxyLike,
  learnBothPods,
  SERVER_TCP,
  SERVER_UDP,
  SERVICE_IP,
  setDirectDelivery,
  TABLE,
  twoPods,
  updateKeepingAllowed,
} from '../helpers/two-pod-lab.ts';

const SKIP = needsEbpf('the host-conntrack tests') || needsConntrackTool('the host-conntrack tests');

describe(
  'direct delivery next to the host’s netfilter (kube-proxy’s NAT and conntrack)',
  { skip: SKIP },
  () => {
    it(
      'a port translated on a pod’s own address: one TCP connection, every message both ways',
      { timeout: 120_000 },
      async (t) => {
        const pods = await twoPods(t);
        await nftLoad(
          pods.node,
          kubeProxyLike({ dnat: `ip daddr ${pods.b.ip} tcp dport 80 dnat to ${pods.b.ip}:${SERVER_TCP}` }),
        );
        await learnBothPods(pods);
        const conversation = await converse(pods, pods.a, { protocol: 'TCP', ip: pods.b.ip, port: 80 });
        await exchangeAll(conversation, 60, 'a → b:80, translated to 8080 by the host');
        const translated = between(await hostConnections(pods.node, 'tcp'), pods.a.ip, pods.b.ip).filter(
          (c) => c.original.sport === conversation.localPort,
        );
        assert.deepEqual(
          translated.map((c) => [c.original.dport, c.reply.sport]),
          [[80, SERVER_TCP]],
          'the host tracks the connection, translated',
        );
        assert.equal(await invalidOn(pods.node), 0, 'packets the host judged INVALID');
      },
    );

    it(
      'a Service’s virtual address (DNAT to a pod of the node): TCP replies come back from it, also after an update',
      { timeout: 120_000 },
      async (t) => {
        const pods = await twoPods(t);
        await nftLoad(
          pods.node,
          kubeProxyLike({ dnat: `ip daddr ${SERVICE_IP} tcp dport 80 dnat to ${pods.b.ip}:${SERVER_TCP}` }),
        );
        // The client's socket is connected to the Service's address: data the host did not translate
        // back (from b:8080) is no part of its connection and never reaches it as an echo.
        await learnBothPods(pods);
        const conversation = await converse(pods, pods.a, { protocol: 'TCP', ip: SERVICE_IP, port: 80 });
        await exchangeAll(conversation, 50, 'a → Service → b');
        // The gate is asked again after an update (the connection's sides judged again).
        updateKeepingAllowed(pods, 1);
        await learnBothPods(pods);
        await exchangeAll(conversation, 50, 'a → Service → b after an update');
        assert.equal(await invalidOn(pods.node), 0, 'packets the host judged INVALID');
      },
    );

    it(
      'a UDP Service (DNS-like): every datagram’s reply comes back from the Service’s address',
      { timeout: 120_000 },
      async (t) => {
        const pods = await twoPods(t);
        await nftLoad(
          pods.node,
          kubeProxyLike({ dnat: `ip daddr ${SERVICE_IP} udp dport 53 dnat to ${pods.b.ip}:${SERVER_UDP}` }),
        );
        // Every echo must come from 10.96.0.10:53, where the datagram went (a resolver drops others).
        await learnBothPods(pods);
        const conversation = await converse(pods, pods.a, { protocol: 'UDP', ip: SERVICE_IP, port: 53 });
        await exchangeAll(conversation, 50, 'a → Service (UDP) → b');
        updateKeepingAllowed(pods, 1);
        await learnBothPods(pods);
        await exchangeAll(conversation, 50, 'a → Service (UDP) → b after an update');
        assert.equal(await invalidOn(pods.node), 0, 'packets the host judged INVALID');
      },
    );

    it(
      'one UDP socket to a pod directly and to its Service: every reply from where its datagram went',
      { timeout: 120_000 },
      async (t) => {
        const pods = await twoPods(t);
        await nftLoad(
          pods.node,
          kubeProxyLike({ dnat: `ip daddr ${SERVICE_IP} udp dport 53 dnat to ${pods.b.ip}:${SERVER_UDP}` }),
        );
        // A resolver's socket asking a pod by its address and through its Service: after the host
        // translates the Service's datagrams, both flows are the same tuple at b (a's port ↔
        // b:5353), the first one delivered directly — the second's replies must not be.
        const socket = await converse(pods, pods.a, { protocol: 'UDP', ip: pods.b.ip, port: SERVER_UDP });
        await exchangeAll(socket, 20, 'a → b directly');
        await exchangeAll(socket, 20, 'the same socket → Service → b', { ip: SERVICE_IP, port: 53 });
        await exchangeAll(socket, 20, 'the same socket → b directly again');
        assert.equal(await invalidOn(pods.node), 0, 'packets the host judged INVALID');
      },
    );

    it(
      'a source port reused for a Service after a direct connection to its backend',
      { timeout: 120_000 },
      async (t) => {
        const pods = await twoPods(t);
        await nftLoad(
          pods.node,
          kubeProxyLike({ dnat: `ip daddr ${SERVICE_IP} tcp dport 80 dnat to ${pods.b.ip}:${SERVER_TCP}` }),
        );
        const direct = await converse(pods, pods.a, { protocol: 'TCP', ip: pods.b.ip, port: SERVER_TCP });
        await exchangeAll(direct, 20, 'a → b directly');
        // Reset, not closed: no TIME_WAIT keeps the port, which the next connection binds at once.
        // Linux picks the same ephemeral port for another destination as readily.
        await direct.reset();
        const port = direct.localPort;
        await direct.close();
        const viaService = await converse(pods, pods.a, { protocol: 'TCP', ip: SERVICE_IP, port: 80 }, port);
        await exchangeAll(viaService, 50, `a:${port} → Service → b (the earlier connection's tuple at b)`);
        assert.equal(await invalidOn(pods.node), 0, 'packets the host judged INVALID');
      },
    );

    it(
      'a source translated between two pods (masquerade to the node’s address): every message both ways',
      { timeout: 120_000 },
      async (t) => {
        const pods = await twoPods(t);
        // b answers the node's address; the host translates that back to a. A packet of a's
        // delivered straight to b would arrive from a's own address, which b's socket does not know.
        await nftLoad(
          pods.node,
          kubeProxyLike({
            snat: `ip saddr ${pods.a.ip} ip daddr ${pods.b.ip} tcp dport ${SERVER_TCP} snat to ${pods.nodeAddress}`,
          }),
        );
        await learnBothPods(pods);
        const conversation = await converse(pods, pods.a, {
          protocol: 'TCP',
          ip: pods.b.ip,
          port: SERVER_TCP,
        });
        await exchangeAll(conversation, 50, 'a → b, masqueraded by the host');
        assert.equal(await invalidOn(pods.node), 0, 'packets the host judged INVALID');
      },
    );

    it(
      'no `ct state invalid` after direct delivery: a long-lived connection across policy updates',
      { timeout: 120_000 },
      async (t) => {
        const pods = await twoPods(t);
        await nftLoad(pods.node, kubeProxyLike());
        const retransmitted = async () =>
          (await retransmittedSegments(pods.a.netns)) + (await retransmittedSegments(pods.b.netns));
        const retransmittedBefore = await retransmitted();
        const conversation = await converse(pods, pods.a, {
          protocol: 'TCP',
          ip: pods.b.ip,
          port: SERVER_TCP,
        });
        let slowest = await exchangeAll(conversation, 50, 'before any update (delivered directly)');
        // Each update moves the epoch: both sides are judged again on the host's path, which then
        // sees the connection mid-stream — with the host's stale entry, as INVALID.
        for (const round of [1, 2]) {
          updateKeepingAllowed(pods, round);
          slowest = Math.max(slowest, await exchangeAll(conversation, 50, `after update ${round}`));
        }
        assert.equal(await invalidOn(pods.node), 0, 'packets the host judged INVALID');
        // A dropped segment costs a retransmission after at least 200 ms: none may have been needed.
        assert.equal(
          await retransmitted(),
          retransmittedBefore,
          `segments retransmitted (slowest message ${slowest.toFixed(0)} ms)`,
        );
      },
    );

    it(
      'no pile-up in the host’s conntrack after short connections delivered directly',
      { timeout: 120_000 },
      async (t) => {
        const pods = await twoPods(t);
        // The host tracks connections only where a rule needs it (a namespace without one has no
        // conntrack hooks at all); kube-proxy's rules do.
        await nftLoad(pods.node, kubeProxyLike());
        const agent = pods.lab.agent(pods.a.id);
        for (const protocol of ['TCP', 'UDP'] as const) {
          const port = protocol === 'TCP' ? SERVER_TCP : SERVER_UDP;
          // 50 in all, 10 at a time: connect, echo, close (UDP: one datagram and its echo).
          for (let batch = 0; batch < 5; batch++) {
            const outcomes = await agent.probe(
              Array.from({ length: 10 }, () => ({ ip: pods.b.ip, port, protocol })),
              2000,
            );
            assert.ok(
              outcomes.every((o) => o.connected),
              `${protocol}: ${outcomes.map((o) => o.detail).join(', ')}`,
            );
          }
        }
        // Every connection left the host's path at its first packet delivered directly, and its host
        // entry was expired then: what is left (ESTABLISHED for days, SYN_SENT, UDP's unreplied
        // entries) would be slots held for connections the host no longer sees.
        for (const protocol of ['tcp', 'udp'] as const) {
          const left = between(await hostConnections(pods.node, protocol), pods.a.ip, pods.b.ip);
          assert.equal(
            left.length,
            0,
            `${protocol} entries between a and b in the host's conntrack, e.g.\n${left
              .slice(0, 3)
              .map((c) => c.line)
              .join('\n')}`,
          );
        }
        assert.equal(await invalidOn(pods.node), 0, 'packets the host judged INVALID');
      },
    );

    it(
      'delivery is real: few of a connection’s packets cross the host’s forward path, all of them with it off',
      { timeout: 120_000 },
      async (t) => {
        const pods = await twoPods(t);
        await nftLoad(
          pods.node,
          kubeProxyLike({
            forward: `ip saddr . ip daddr { ${pods.a.ip} . ${pods.b.ip}, ${pods.b.ip} . ${pods.a.ip} } counter name "forwarded"`,
          }),
        );
        const forwarded = () => nftCounter(pods.node, 'ip', TABLE, 'forwarded');
        const direct = await converse(pods, pods.a, { protocol: 'TCP', ip: pods.b.ip, port: SERVER_TCP });
        await exchangeAll(direct, 100, 'delivered directly');
        await direct.close();
        const onTheHostsPath = await forwarded();
        assert.ok(
          onTheHostsPath <= 10,
          `${onTheHostsPath} of the connection's packets crossed the host's forward path`,
        );

        setDirectDelivery(pods.node, false);
        const hosted = await converse(pods, pods.a, { protocol: 'TCP', ip: pods.b.ip, port: SERVER_TCP });
        await exchangeAll(hosted, 100, 'with direct delivery off');
        await hosted.close();
        const all = (await forwarded()) - onTheHostsPath;
        // A message and its echo are a packet each way at least.
        assert.ok(
          all >= 200,
          `with direct delivery off, only ${all} packets crossed the host's forward path`,
        );
        assert.equal(await invalidOn(pods.node), 0, 'packets the host judged INVALID');
      },
    );
  },
);
