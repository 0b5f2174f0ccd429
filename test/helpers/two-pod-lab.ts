/**
 * A one-node eBPF lab with two pods, a and b (b listening on TCP 8080 and UDP 5353 and admitting
 * a), for the tests of direct delivery next to the host's own netfilter
 * (test/lab/host-conntrack.root.test.ts): the lab and whatever a test adds removed when the test ends,
 * passed or failed; kube-proxy-like rules for the node's namespace; conversations from a pod;
 * policy updates that move the node's epoch; the program's learned peers and its direct-delivery
 * switch. Needs root, clang and bpftool.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { layout, PinnedMaps, setConfigFlag } from '../../src/datapaths/ebpf/kernel/index.ts';
import { loadFromObjects } from '../../src/ingest/index.ts';
import { Lab, type LabPod } from '../../src/lab/index.ts';
import { parseIp } from '../../src/net/ip.ts';
import { addressOf } from '../../src/datapaths/ebpf/index.ts';
import { nftCounter, nftDeleteTable } from './node-netfilter.ts';
import { PodConversation, type ConversationTarget } from './pod-conversation.ts';

/** The nft table the tests write into the node's namespace (kube-proxy's rules stand-in). */
export const TABLE = 'hostct';
/** A Service's virtual address, as kube-proxy would translate it (nothing in the lab has it). */
export const SERVICE_IP = '10.96.0.10';
export const SERVER_TCP = 8080;
export const SERVER_UDP = 5353;

const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'hc', labels: { team: 'hc' } } };
const pod = (name: string, ports: { containerPort: number; protocol: string }[]) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'hc', labels: { app: name } },
  spec: { nodeName: 'node-0', containers: [{ name: 'c', ports }] },
  status: { phase: 'Running' },
});
/**
 * b admits a on every port (a port the host translates included: b's side is judged on the port
 * a sends to), and with `round`, one more rule that admits a third pod nobody runs: an update that
 * keeps a → b allowed but changes b's table, so the node's epoch moves.
 */
const bFromA = (round = 0) => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'b-from-a', namespace: 'hc' },
  spec: {
    podSelector: { matchLabels: { app: 'b' } },
    ingress: [
      { from: [{ podSelector: { matchLabels: { app: 'a' } } }] },
      ...(round > 0 ? [{ from: [{ podSelector: { matchLabels: { app: `c${round}` } } }] }] : []),
    ],
  },
});
const objects = [
  namespace,
  pod('a', []),
  pod('b', [
    { containerPort: SERVER_TCP, protocol: 'TCP' },
    { containerPort: SERVER_UDP, protocol: 'UDP' },
  ]),
  bFromA(),
];

/**
 * The node's own rules, as a node running kube-proxy has them: nat chains (here with a Service of
 * a pod elsewhere and the masquerade of marked packets, so every new connection on the node gets
 * the NAT hooks' null binding, as there), the forward chain's `ct state invalid` drop (iptables
 * mode: KUBE-FORWARD's --ctstate INVALID -j DROP), counted; and what a test adds to each chain.
 */
export function kubeProxyLike(added: { dnat?: string; snat?: string; forward?: string } = {}): string {
  return `table ip ${TABLE} {
    counter invalid {}
    counter forwarded {}
    chain prerouting {
      type nat hook prerouting priority dstnat;
      ip daddr 10.96.0.99 tcp dport 80 dnat to 10.244.9.9:8080
      ${added.dnat ?? ''}
    }
    chain postrouting {
      type nat hook postrouting priority srcnat;
      meta mark & 0x4000 == 0x4000 masquerade
      ${added.snat ?? ''}
    }
    chain forward {
      type filter hook forward priority filter; policy accept;
      ct state invalid counter name "invalid" drop
      ${added.forward ?? ''}
    }
  }`;
}

/** Packets the node's kube-proxy-like rules dropped as `ct state invalid`. */
export const invalidOn = (node: string): Promise<number> => nftCounter(node, 'ip', TABLE, 'invalid');

export interface TwoPods {
  readonly lab: Lab;
  /** The node's network namespace (where kube-proxy's rules and the host's conntrack are). */
  readonly node: string;
  readonly nodeAddress: string;
  readonly a: LabPod & { readonly ip: string };
  readonly b: LabPod & { readonly ip: string };
  /** Runs `close` when the test ends (before the lab goes), passed or failed. */
  readonly defer: (close: () => Promise<void> | void) => void;
}

let labs = 0;

/**
 * A one-node eBPF lab with pods a and b (b listening on TCP 8080 and UDP 5353, admitting a),
 * removed with everything the test added when the test ends.
 */
export async function twoPods(t: TestContext): Promise<TwoPods> {
  const stateRoot = mkdtempSync(join(tmpdir(), 'palisade-hostct-'));
  const name = `hc${process.pid % 100000}-${labs++}`;
  const closers: (() => Promise<void> | void)[] = [];
  t.after(async () => {
    for (const close of closers.reverse())
      try {
        await close();
      } catch {
        // Best effort: the lab's removal below takes the namespaces and whatever is in them.
      }
    try {
      await Lab.down(name, { stateRoot });
    } finally {
      rmSync(stateRoot, { recursive: true, force: true });
    }
  });
  const lab = await Lab.up(name, objects, loadFromObjects(objects).cluster, {
    stateRoot,
    datapath: 'ebpf',
    nodes: 1,
  });
  closers.push(() => lab.close());
  const node = lab.plan.nodes[0];
  const withIp = (id: string) => {
    const found = lab.plan.pods.find((p) => p.id === id);
    assert.ok(found?.ips[0], `the lab has ${id}`);
    return { ...found, ip: found.ips[0] };
  };
  assert.ok(node?.addresses[0]);
  const a = withIp('hc/a');
  const b = withIp('hc/b');
  assert.equal(a.node, b.node, 'both pods on one node');
  closers.push(() => nftDeleteTable(node.netns, 'ip', TABLE));
  return {
    lab,
    node: node.netns,
    nodeAddress: node.addresses[0],
    a,
    b,
    defer: (close) => closers.push(close),
  };
}

/** A conversation from a pod, ended when the test ends. */
export async function converse(
  pods: TwoPods,
  from: LabPod,
  target: ConversationTarget,
  localPort?: number,
): Promise<PodConversation> {
  const conversation = await PodConversation.open(
    from.netns,
    target,
    localPort !== undefined ? { localPort } : {},
  );
  pods.defer(() => conversation.close());
  return conversation;
}

/** `count` messages each way over the conversation (UDP: to `to` when given), every one echoed intact. */
export async function exchangeAll(
  conversation: PodConversation,
  count: number,
  what: string,
  to?: { ip: string; port: number },
): Promise<number> {
  const report = await conversation.exchange(count, to ? { to } : {});
  assert.equal(report.echoed, count, `${what}: ${report.failure ?? ''}`);
  return report.slowestMs;
}

/** The node's epoch (the `gen` map): every commit moves it. */
function epochOf(node: string): number {
  const maps = PinnedMaps.open({ instance: `netns-${node}` });
  try {
    return maps.get('gen', layout.u32(0))?.readUInt32LE(0) ?? -1;
  } finally {
    maps.close();
  }
}

/**
 * Turns direct delivery off (or on again) on a node, as `render --target ebpf --apply
 * --no-direct-delivery` does: the program's configuration flag, which the lab's renderer writes
 * only when it is made.
 */
export function setDirectDelivery(node: string, on: boolean): void {
  const maps = PinnedMaps.open({ instance: `netns-${node}` });
  try {
    setConfigFlag(maps, layout.CFG_NO_DIRECT, !on);
  } finally {
    maps.close();
  }
}

/** Whether the program has learned, in the node's current epoch, where the host delivers to `pod`. */
function learnedInThisEpoch(node: string, pod: { readonly ip: string }): boolean {
  const parsed = parseIp(pod.ip);
  assert.ok(parsed.ok);
  const maps = PinnedMaps.open({ instance: `netns-${node}` });
  try {
    const value = maps.get('peers', layout.peerKey(addressOf(parsed.value).bytes));
    const epoch = maps.get('gen', layout.u32(0))?.readUInt32LE(0);
    return value !== undefined && layout.decodePeer(value).epoch === epoch;
  } finally {
    maps.close();
  }
}

/**
 * Plain UDP between a and b (b's 5353, which no test translates between the pods' own
 * addresses), so that the program learns, in the current epoch, where the host delivers to each
 * of them (from the frames the host forwarded untranslated: bpf/handoff.h, learn_peer) — as on a
 * node where pods also talk directly. Without it a translated connection is never delivered
 * directly for want of a learned peer, whatever the conntrack gate says, and the NAT tests would
 * not test the gate.
 */
export async function learnBothPods(pods: TwoPods): Promise<void> {
  const plain = await PodConversation.open(pods.a.netns, {
    protocol: 'UDP',
    ip: pods.b.ip,
    port: SERVER_UDP,
  });
  try {
    await exchangeAll(plain, 3, 'plain UDP between a and b');
  } finally {
    await plain.close();
  }
  assert.ok(
    learnedInThisEpoch(pods.node, pods.a) && learnedInThisEpoch(pods.node, pods.b),
    'both pods learned',
  );
}

/** A policy update that keeps a → b allowed but changes b's table: the node's epoch moves. */
export function updateKeepingAllowed(pods: TwoPods, round: number): void {
  const before = epochOf(pods.node);
  pods.lab.apply([namespace, bFromA(round)], true);
  assert.notEqual(epochOf(pods.node), before, 'the update moved the node’s epoch');
}
