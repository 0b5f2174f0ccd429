/**
 * eBPF on a fleet of nodes driven by one process (the lab: `lab up --datapath ebpf`): in each node's namespace the program
 * is loaded and pinned under /sys/fs/bpf/palisade/netns-<node namespace>/ (the path `render
 * --target ebpf --apply --netns` uses, so either continues the other), attached with tc to every
 * local pod's host-side veth, and its maps written by one EbpfRenderer per node; the fleet
 * commits in two phases across nodes. A re-opened lab renders its policy over a preview of each
 * node's maps (read from the kernel, written nowhere): what it would write is the drift a command
 * reports, and only an apply writes it (a resync over maps read back: only what differs).
 * `lab down` deletes the namespaces (the programs go with their interfaces) and the pins (the
 * maps go with the last reference).
 */
import {
  attach,
  EbpfError,
  layout,
  loadProgram,
  PinnedMaps,
  PreviewMaps,
  unload,
  type BpfMaps,
  type PinLocation,
} from './kernel/index.ts';
import { EbpfFleetRenderer } from './fleet.ts';
import { EbpfRenderer } from './renderer.ts';
import type { FleetBackend, FleetContext, FleetDatapath, FleetPlan, Renderer } from '../types.ts';

const locationOf = (netns: string): PinLocation => ({ instance: `netns-${netns}` });

interface Node {
  readonly maps: PinnedMaps;
  renderer: EbpfRenderer;
  /** While paused: the overlay the renderer writes to instead of the kernel. */
  preview: PreviewMaps | undefined;
  /** The epoch before the latest transaction (to count what it wrote). */
  epochBefore: number;
}

function open({ plan, store, allowNodeLocal, killDenied }: FleetContext): FleetDatapath {
  const nodes = new Map<string, Node>();
  const renderer = (name: string, maps: BpfMaps) =>
    new EbpfRenderer({ state: store, node: name, kernel: maps, allowNodeLocal, recheckFlows: killDenied });
  try {
    for (const node of plan.nodes) {
      const location = locationOf(node.netns);
      loadProgram(location);
      const maps = PinnedMaps.open(location);
      const made = renderer(node.name, maps);
      nodes.set(node.name, { maps, renderer: made, preview: undefined, epochBefore: made.epoch });
      // Attached before any policy is written: until then every pod fails closed. Attaching
      // again (a re-opened lab) replaces the filter in place, and restores one removed by hand.
      for (const pod of plan.pods)
        if (pod.node === node.name) attach(location, node.netns, pod.hostInterface);
    }
  } catch (error) {
    for (const { maps } of nodes.values()) maps.close();
    throw error;
  }
  const fleetNodes = new Map([...nodes].map(([name, n]) => [name, n.renderer]));
  const fleet = new EbpfFleetRenderer(fleetNodes);
  /**
   * A node's renderer replaced by a new one over `maps`. The outgoing one's tail runs first (old
   * side brought level, dead tables deleted): the new one reads the maps back and must see them
   * as that tail leaves them, and a tail left pending would later write the side the outgoing
   * writer believed no packet reads — after the new one's switch, the live side.
   */
  const replace = (name: string, n: Node, maps: BpfMaps): void => {
    n.renderer.settle();
    n.renderer = renderer(name, maps);
    fleetNodes.set(name, n.renderer);
  };
  /** Set by attach(): the renderers start again from the kernel, which a resync must correct. */
  let stale = false;
  const kernelEpoch = (n: Node): number | undefined => n.maps.get('gen', layout.u32(0))?.readUInt32LE(0);
  // Each transaction notes every node's epoch first, so an apply reports its own writes only
  // (not a resync that caught up before it).
  const counted: Renderer = {
    name: fleet.name,
    reads: fleet.reads,
    newTxn: (options) => {
      for (const n of nodes.values()) n.epochBefore = n.renderer.epoch;
      return fleet.newTxn(options);
    },
  };
  return {
    kind: 'ebpf',
    renderer: counted,
    resyncsAfterAttach: true,
    pause: () => {
      for (const [name, n] of nodes) {
        n.preview = new PreviewMaps(n.maps);
        replace(name, n, n.preview);
      }
    },
    attach: () => {
      const drift: { node: string; pending: number }[] = [];
      for (const [name, n] of nodes) {
        const pending = n.preview?.changes ?? 0;
        if (pending !== 0) drift.push({ node: name, pending });
        if (!n.preview) continue;
        n.preview = undefined;
        replace(name, n, n.maps);
        stale = true;
      }
      return drift;
    },
    verify: () => {
      let changed = stale;
      stale = false;
      for (const [name, n] of nodes) {
        if (kernelEpoch(n) !== n.renderer.epoch) {
          // Another process wrote these maps: start again from what they hold.
          replace(name, n, n.maps);
          changed = true;
        }
      }
      return changed;
    },
    unchecked: () => [...nodes].filter(([, n]) => kernelEpoch(n) !== n.renderer.epoch).map(([name]) => name),
    operations: () =>
      new Map(
        [...nodes].map(([name, n]) => {
          const restricted = n.renderer.lastRestrict;
          const phases =
            n.renderer.epoch === n.epochBefore
              ? 0
              : (n.renderer.lastCommit?.operations ?? 0) +
                (restricted && restricted.epoch > n.epochBefore ? restricted.operations : 0);
          return [name, phases];
        }),
      ),
    close: () => {
      for (const n of nodes.values()) {
        n.renderer.settle();
        n.maps.close();
      }
    },
  };
}

function remove(plan: FleetPlan): string[] {
  const problems: string[] = [];
  for (const node of plan.nodes)
    try {
      unload(locationOf(node.netns));
    } catch (error) {
      problems.push(
        error instanceof EbpfError
          ? error.message
          : `cannot unpin ${node.name}'s program and maps: ${String(error)}`,
      );
    }
  return problems;
}

export const ebpfFleet: FleetBackend = { open, remove };
