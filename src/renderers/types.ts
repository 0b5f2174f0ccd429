/**
 * The renderer contract: a renderer realizes compiled tables on a target (nftables, VPP, Neutron,
 * a classifier). Every change reaches it as a transaction: `render` each affected pod with its
 * current tables (or none: the pod is gone or postponed), then `changes()` tells what the
 * transaction would alter and `commit()` realizes it. With `resync`, pods not rendered in the
 * transaction are removed.
 */
import type { IpAddress } from '../net/ip.ts';
import type { PodTables } from '../configurator/types.ts';

export interface RenderedPod {
  readonly id: string;
  readonly ips: readonly IpAddress[];
  readonly node?: string;
}

export interface RendererTxn<Changes = unknown> {
  render(pod: RenderedPod, tables: PodTables | undefined): void;
  /**
   * Address groups whose members changed, and the pods that joined, left or changed in them;
   * set-based renderers update their sets.
   */
  groupsChanged?(groups: ReadonlySet<string>, pods: ReadonlySet<string>): void;
  changes(): Changes;
  commit(): void;
}

export interface Renderer<Changes = unknown> {
  readonly name: string;
  newTxn(options: { readonly resync: boolean }): RendererTxn<Changes>;
}
