/**
 * The eBPF render target: one node's policy as the BPF maps of the Mizar-style program
 * (bpf/palisade.bpf.c), printed as JSON, or applied to the kernel (root): the program is loaded
 * and pinned under /sys/fs/bpf/palisade/<netns-NS|host>/ (reused when already there — its maps
 * are read back), the maps written, and the programs attached to the interface each local pod
 * address is routed to. Its interpreter reads the maps as the program does.
 */
import {
  attach,
  deviceFor,
  loadProgram,
  PinnedMaps,
  pinDir,
  pruneLinks,
  type PinLocation,
} from '../../ebpf/index.ts';
import { formatIp } from '../../net/ip.ts';
import type { TargetImplementation } from '../types.ts';
import { EbpfError } from '../../ebpf/index.ts';
import { EbpfRenderer } from './renderer.ts';
import { ebpfDocument } from './print.ts';
import { ebpfVerdicts } from './interpreter.ts';
import { directDeliveryRefusal } from './host-conntrack.ts';
import type { EbpfOutput } from './output.ts';

export const ebpfTarget: TargetImplementation<EbpfOutput> = {
  capabilities: {
    scope: 'node',
    nodeRequired: false,
    orderedClusterPolicy: true,
    policesOwnNode: true,
    applies: 'kernel',
  },
  formats: ['json'],
  create(store, { node, options }) {
    if (node === undefined) throw new EbpfError('the ebpf target renders one node at a time: name it');
    const allowNodeLocal = options.allowNodeLocal ?? true;
    const apply = options.apply;
    let directDelivery = options.directDelivery ?? true;
    const refusal = apply && directDelivery ? directDeliveryRefusal(apply.netns) : undefined;
    if (refusal !== undefined) directDelivery = false;
    let pinned: string | undefined;
    let kernel: PinnedMaps | undefined;
    let onNewPods: ConstructorParameters<typeof EbpfRenderer>[0]['onNewPods'];
    if (apply) {
      const location: PinLocation = { instance: apply.netns !== undefined ? `netns-${apply.netns}` : 'host' };
      loadProgram(location);
      kernel = PinnedMaps.open(location);
      pinned = pinDir(location);
      onNewPods = (pods) => {
        const devices = new Set<string>();
        for (const pod of pods)
          for (const ip of pod.ips) {
            const device = deviceFor(apply.netns, formatIp(ip));
            if (device !== undefined) devices.add(device);
          }
        // Pods come and go: the links of interfaces that are gone are unpinned first.
        pruneLinks(location, apply.netns);
        for (const device of devices) attach(location, apply.netns, device);
      };
    }
    const renderer = new EbpfRenderer({
      state: store,
      node,
      allowNodeLocal,
      recheckFlows: options.recheckFlows ?? true,
      directDelivery,
      ...(kernel ? { kernel } : {}),
      ...(onNewPods ? { onNewPods } : {}),
    });
    return {
      renderer,
      output: () => {
        // One-shot renders exit next: the last commit's tail (old side, deletions) runs now.
        renderer.settle();
        return {
          node,
          content: renderer.content(),
          allowNodeLocal,
          pinned,
          directDelivery,
          warnings: refusal !== undefined ? [refusal] : [],
          operations: renderer.recorded.operations,
        };
      },
    };
  },
  print: (rendered) => ({
    document: {
      json:
        rendered.length === 1
          ? ebpfDocument(rendered[0]!.output)
          : { nodes: rendered.map((r) => ebpfDocument(r.output)) },
    },
    warnings: [...new Set(rendered.flatMap((r) => r.output.warnings))],
  }),
  interpreter: {
    verdicts: (rendered) => ebpfVerdicts(rendered),
  },
};
