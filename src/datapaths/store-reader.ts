/**
 * A renderer for targets that read the store when asked for their output rather than the
 * pipeline's per-pod tables (Neutron's security groups are per policy, not per pod): it hears
 * transactions and keeps nothing. It needs no tables, so a pipeline whose every renderer is one
 * skips compiling them.
 */
import type { Renderer, RendererTxn } from './types.ts';

export function storeReader(name: string): Renderer<{ readonly pods: number }> {
  return {
    name,
    reads: 'store',
    newTxn(): RendererTxn<{ readonly pods: number }> {
      let pods = 0;
      return {
        render: () => {
          pods++;
        },
        changes: () => ({ pods }),
        commit: () => {},
      };
    },
  };
}
