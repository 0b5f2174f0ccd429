/**
 * The eBPF datapath on a node, as the agent keeps it (Mizar's design: the maps kept current as
 * the cluster changes). The program is loaded and pinned under /sys/fs/bpf/palisade/<netns-NS |
 * host>/ — or, when pins are there (an earlier agent, `render --target ebpf --apply`), kept: its
 * maps are the policy the node enforces, which the renderer reads back and continues. Every batch
 * becomes map writes under the renderer's epoch switch (no packet sees a half-written policy).
 *
 * Fail closed: at start the programs go on every interface a route into the pod CIDRs leads to,
 * so a pod whose address has no record yet is dropped; a pod that appears later is attached when
 * its route does (`ip monitor route` makes the agent verify at once) and when the renderer first
 * writes its record.
 *
 * Verified (the agent's timer, or a route change): the pins are there, every such interface runs
 * the node's programs on both hooks (attachments.ts), and the policy maps hold exactly what the
 * renderer wrote (shadow-maps.ts). Repaired: pins put back from this process's descriptors,
 * programs attached again, entries written back — and verified again at once: a repair that did
 * not take is an error (the agent fails, not ready), never "repaired".
 */
import {
  attach,
  attachedDevices,
  detach,
  devicesFor,
  interfaceNames,
  isLoaded,
  loadProgram,
  pinDir,
  PinnedMaps,
  PinnedProgram,
  PROGRAMS,
  pruneLinks,
  unload,
  attachmentProblems,
  routedDevices,
  ShadowMaps,
  type PinLocation,
} from './kernel/index.ts';
import { DataplaneError, keepRunning, startTiedProcess, type TiedProcess } from '../../dataplane/index.ts';
import { formatIp } from '../../net/ip.ts';
import { directDeliveryRefusal } from './host-conntrack.ts';
import { openFlowEvents, type FlowEventReader } from './kernel/flow-events.ts';
import { mergeSides } from './flow-sides.ts';
import { EbpfRenderer } from './renderer.ts';
import type { DatapathCounts, NodeContext, NodeDatapath } from '../types.ts';

/** An eBPF node datapath, with what `render --apply` reports of it. */
interface EbpfNode extends NodeDatapath {
  readonly renderer: EbpfRenderer;
  /** Where its program and maps are pinned. */
  readonly pinned: string;
  /** Why direct delivery is off on this node, when it was asked for and cannot be on. */
  readonly refusal: string | undefined;
}

/**
 * Opens the node's program and maps — for the agent (the registry holds the datapath's lock
 * around it) and for `render --target ebpf --apply` (target.ts), which realizes one snapshot.
 */
export function openEbpfNode(context: NodeContext): EbpfNode {
  const { netns } = context;
  const where = netns ? ` in network namespace ${netns}` : '';
  const location: PinLocation = { instance: netns !== undefined ? `netns-${netns}` : 'host' };
  const podCidrs = context.podCidrs ?? [];
  let maps: PinnedMaps | undefined;
  const programs: PinnedProgram[] = [];
  let loadedNew: boolean;
  let renderer: EbpfRenderer;
  let shadow: ShadowMaps;
  let refusal: string | undefined;
  /** Interfaces this datapath attached the programs to (and still means to). */
  const attached = new Set<string>();
  const attachTo = (device: string): void => {
    attach(location, netns, device);
    attached.add(device);
  };
  try {
    loadedNew = loadProgram(location);
    maps = PinnedMaps.open(location);
    for (const program of [PROGRAMS.fromPod, PROGRAMS.toPod])
      programs.push(PinnedProgram.open(location, program));
    shadow = new ShadowMaps(maps);
    const directDelivery = context.directDelivery ?? true;
    refusal = directDelivery ? directDeliveryRefusal(netns) : undefined;
    renderer = new EbpfRenderer({
      state: context.state,
      node: context.node,
      kernel: shadow,
      allowNodeLocal: context.allowNodeLocal ?? true,
      recheckFlows: context.recheckFlows ?? true,
      directDelivery: directDelivery && refusal === undefined,
      ...(context.flowLog ? { flowEvents: true } : {}),
      onNewPods: (pods) => {
        const devices = devicesFor(
          netns,
          pods.flatMap((pod) => pod.ips.map(formatIp)),
        );
        // Pods come and go: the pinned links of interfaces that are gone are removed first.
        pruneLinks(location, netns);
        for (const device of new Set(devices.values())) if (device !== undefined) attachTo(device);
      },
    });
  } catch (error) {
    for (const program of programs) program.close();
    maps?.close();
    throw error;
  }
  const pinnedMaps = maps;
  /** The interfaces the programs must be on now: routed into the pod CIDRs, or attached for a pod. */
  const expected = (): string[] => [...new Set([...routedDevices(netns, podCidrs), ...attached])].sort();
  /**
   * Interfaces that are gone (a deleted pod's veth) are forgotten, and their pinned links removed:
   * a pin would hold the defunct link, and the program, for as long as the node runs.
   */
  const forgetGone = (): void => {
    const present = new Set(interfaceNames(netns) ?? attached);
    for (const device of [...attached]) if (!present.has(device)) attached.delete(device);
    pruneLinks(location, netns);
  };
  /** What the node holds that differs from what was written: pins, attachments, map entries. */
  const differences = (): string[] => [
    ...(isLoaded(location)
      ? attachmentProblems(location, netns, expected())
      : [`pins under ${pinDir(location)} are missing`]),
    ...shadow.differences(),
  ];
  let monitor: TiedProcess | undefined;
  let flowEvents: FlowEventReader | undefined;
  return {
    name: 'ebpf',
    renderer,
    pinned: pinDir(location),
    refusal,
    prepare() {
      if (context.flowLog && !flowEvents) flowEvents = openFlowEvents(location);
      const routed = routedDevices(netns, podCidrs);
      for (const device of routed) attachTo(device);
      const held = loadedNew
        ? `loaded the eBPF program under ${pinDir(location)}`
        : `kept the program and maps pinned under ${pinDir(location)} (enforced until the first snapshot is rendered)`;
      const closedNote =
        routed.length > 0
          ? `; on ${routed.length} interface${routed.length === 1 ? '' : 's'} routed into the pod CIDRs${where}, addresses without a record are dropped until then`
          : podCidrs.length === 0
            ? '; without --pod-cidr a pod is attached when its record is first written'
            : '';
      return Promise.resolve(`${held}${closedNote}${refusal ? `; ${refusal}` : ''}`);
    },
    // The renderer's commits inside the pipeline's are the realization.
    realize: () => Promise.resolve(),
    ...(context.flowLog
      ? {
          flows: () => mergeSides(flowEvents?.read() ?? []),
          flowsLost: () => flowEvents?.lost ?? 0,
          flowsPending: () => flowEvents?.pending() ?? false,
        }
      : {}),
    counts(): DatapathCounts {
      const content = renderer.content();
      return { tables: content.tables.length, rules: content.records.length, sets: content.groups.size };
    },
    verify() {
      forgetGone();
      return Promise.resolve(differences());
    },
    repair() {
      pinnedMaps.repin();
      programs.forEach((program, i) =>
        program.repinAt(`${pinDir(location)}/progs/${i === 0 ? PROGRAMS.fromPod : PROGRAMS.toPod}`),
      );
      const present = new Set(interfaceNames(netns) ?? []);
      for (const device of expected()) if (present.has(device)) attachTo(device);
      shadow.restore();
      forgetGone();
      const left = differences();
      if (left.length > 0)
        return Promise.reject(
          new DataplaneError(`repaired the eBPF datapath${where}, but it still differs (${left.join('; ')})`),
        );
      return Promise.resolve();
    },
    watch(suspect) {
      monitor = keepRunning(
        (stopped) =>
          startTiedProcess({
            argv: ['ip', 'monitor', 'route'],
            ...(netns !== undefined ? { netns } : {}),
            onLine: (line) => suspect(`a route changed: ${line.trim()}`),
            onStopped: stopped,
          }),
        (why) => suspect(`${why}; restarting it`),
      );
    },
    cleanup() {
      const devices = attachedDevices(netns);
      for (const device of devices) detach(netns, device, location);
      unload(location);
      return Promise.resolve(
        `removed the eBPF programs from ${devices.length} interface${devices.length === 1 ? '' : 's'}${where} and unpinned ${pinDir(location)}`,
      );
    },
    close() {
      monitor?.close();
      flowEvents?.close();
      renderer.settle();
      for (const program of programs) program.close();
      pinnedMaps.close();
      return Promise.resolve();
    },
  };
}
