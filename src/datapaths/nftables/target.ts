/**
 * The nftables render target: one node's `inet palisade` table, printed as the nft script of
 * its first (full) transaction, or applied to the kernel (root; in a network namespace when
 * given). Only the kernel interprets it: the conformance suite probes it through the lab.
 */
import { nftRunner } from '../../dataplane/index.ts';
import type { TargetImplementation } from '../types.ts';
import { NftablesRenderer } from './renderer.ts';

/** What an nftables instance realized: the scripts it sent, where they went, and its table's counts. */
export interface NftablesOutput {
  readonly node: string | undefined;
  /** The transactions' scripts, in order (recorded, or applied). */
  readonly scripts: readonly string[];
  readonly applied: boolean;
  readonly stats: ReturnType<NftablesRenderer['stats']>;
}

export const nftablesTarget: TargetImplementation<NftablesOutput> = {
  capabilities: {
    scope: 'node',
    nodeRequired: true,
    orderedClusterPolicy: true,
    policesOwnNode: true,
    applies: 'kernel',
  },
  formats: ['text'],
  create(store, { node, options }) {
    const apply = options.apply;
    const kernel = apply && nftRunner(apply.netns !== undefined ? { netns: apply.netns } : {});
    const sent: string[] = [];
    const renderer = new NftablesRenderer({
      state: store,
      runner: {
        kind: kernel ? kernel.kind : 'recording',
        apply(script, applying) {
          const echoed = kernel?.apply(script, applying) ?? '';
          sent.push(script);
          return echoed;
        },
        // Printing: nothing is in a kernel. Applying: what the namespace holds (read back after a failure).
        query: (command) => (kernel ? kernel.query(command) : undefined),
        close: () => kernel?.close(),
      },
      podCidrs: options.podCidrs ?? [],
      allowNodeLocal: options.allowNodeLocal ?? true,
      recheckFlows: options.recheckFlows ?? true,
    });
    return {
      renderer,
      output: () => ({ node, scripts: [...sent], applied: apply !== undefined, stats: renderer.stats() }),
    };
  },
  print(rendered, { stats }) {
    const text = rendered
      .map(({ output }) =>
        output.applied
          ? `applied table inet palisade for node ${output.node ?? ''}\n`
          : output.scripts.join(''),
      )
      .join('');
    const counts = rendered.map(({ output: { stats: s } }) => {
      return `${s.chains} chains, ${s.rules} rules, ${s.sets} sets, ${s.elements} set elements, ${s.mapEntries} dispatch entries`;
    });
    return { document: { text }, warnings: [], ...(stats ? { stats: counts.join('\n') } : {}) };
  },
};
