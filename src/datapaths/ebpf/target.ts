/**
 * The eBPF render target: one node's policy as the BPF maps of the Mizar-style program
 * (bpf/palisade.bpf.c), printed as JSON, or applied to the kernel (root): the program is loaded
 * and pinned under /sys/fs/bpf/palisade/<netns-NS|host>/ (reused when already there — its maps
 * are read back), the maps written, and the programs attached to the interface each local pod
 * address is routed to — the node datapath an agent opens (node.ts), realizing one snapshot.
 * Its interpreter reads the maps as the program does.
 */
import { CLASSIFIER_ENGINE_REFUSAL, type TargetImplementation } from '../types.ts';
import { EbpfError } from './kernel/index.ts';
import { EbpfRenderer } from './renderer.ts';
import { ebpfDocument } from './print.ts';
import { ebpfVerdicts } from './interpreter.ts';
import { openEbpfNode } from './node.ts';
import type { EbpfOutput } from './output.ts';

export const ebpfTarget: TargetImplementation<EbpfOutput> = {
  capabilities: {
    scope: 'node',
    nodeRequired: false,
    orderedClusterPolicy: true,
    enginePolicy: { refusal: CLASSIFIER_ENGINE_REFUSAL },
    policesOwnNode: true,
    applies: 'kernel',
  },
  formats: ['json'],
  create(store, { node, options }) {
    if (node === undefined) throw new EbpfError('the ebpf target renders one node at a time: name it');
    const allowNodeLocal = options.allowNodeLocal ?? true;
    const apply = options.apply;
    // Applied: the node's datapath as an agent opens it (program and maps pinned — or kept, and
    // read back — attached to each pod's interface as its record is first written), realizing
    // one snapshot.
    const applied =
      apply &&
      openEbpfNode({
        node,
        state: store,
        ...(apply.netns !== undefined ? { netns: apply.netns } : {}),
        podCidrs: options.podCidrs ?? [],
        allowNodeLocal,
        recheckFlows: options.recheckFlows ?? true,
        directDelivery: options.directDelivery ?? true,
      });
    const renderer =
      applied?.renderer ??
      new EbpfRenderer({
        state: store,
        node,
        allowNodeLocal,
        recheckFlows: options.recheckFlows ?? true,
        directDelivery: options.directDelivery ?? true,
      });
    const directDelivery = (options.directDelivery ?? true) && applied?.refusal === undefined;
    return {
      renderer,
      output: () => {
        // One-shot renders exit next: the last commit's tail (old side, deletions) runs now.
        renderer.settle();
        return {
          node,
          content: renderer.content(),
          allowNodeLocal,
          pinned: applied?.pinned,
          directDelivery,
          warnings: applied?.refusal !== undefined ? [applied.refusal] : [],
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
