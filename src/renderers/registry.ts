/**
 * Every render target, by name — what `palisade render --target`, the node agent's
 * `--datapath` and the renderer conformance suite choose from. A target's code is loaded on
 * first use, so naming the targets (help texts, choices) costs nothing and a command that
 * renders to one target never loads the others.
 *
 * Adding a target: a folder under `renderers/` whose `target.ts` exports a
 * `TargetImplementation`, and one line below (docs/ARCHITECTURE.md, "Adding a render target").
 */
import type { RenderTarget, TargetImplementation } from './types.ts';

interface Entry<Output> {
  readonly description: string;
  readonly load: () => Promise<TargetImplementation<Output>>;
}

const entry = <Output>(
  description: string,
  load: () => Promise<TargetImplementation<Output>>,
): Entry<Output> => ({ description, load });

const TARGETS = {
  nftables: entry("one node's nftables table: an nft script, or applied to the kernel", () =>
    import('./nftables/target.ts').then((m) => m.nftablesTarget),
  ),
  'vpp-acl': entry('ligato vpp-agent ACLs per node (JSON)', () =>
    import('./vpp-acl/target.ts').then((m) => m.vppAclTarget),
  ),
  vpptcp: entry('VPP session rules per node (JSON)', () =>
    import('./vpptcp/target.ts').then((m) => m.vpptcpTarget),
  ),
  neutron: entry("the cluster's OpenStack Neutron security groups and API requests (JSON)", () =>
    import('./neutron/target.ts').then((m) => m.neutronTarget),
  ),
  bitmap: entry("the in-process classifier's Mizar-style maps per endpoint (JSON)", () =>
    import('./bitmap/target.ts').then((m) => m.bitmapTarget),
  ),
  ebpf: entry("one node's BPF maps for the eBPF datapath (JSON), or loaded and attached to the kernel", () =>
    import('./ebpf/target.ts').then((m) => m.ebpfTarget),
  ),
};

export type TargetName = keyof typeof TARGETS;

/** The output type of a named target's instances. */
export type OutputOf<N extends TargetName> = (typeof TARGETS)[N] extends Entry<infer O> ? O : never;

/** Target names in registry order. */
export const TARGET_NAMES = Object.keys(TARGETS) as readonly TargetName[];

export function isTargetName(name: string): name is TargetName {
  return Object.hasOwn(TARGETS, name);
}

export function targetDescription(name: TargetName): string {
  return TARGETS[name].description;
}

/** A target, its code loaded. */
export async function loadTarget<N extends TargetName>(name: N): Promise<RenderTarget<OutputOf<N>>> {
  const found = TARGETS[name] as Entry<OutputOf<N>>;
  return { ...(await found.load()), name, description: found.description };
}

/** Every target, loaded, in registry order (the conformance suite runs them all). */
export async function loadTargets(): Promise<RenderTarget[]> {
  return Promise.all(TARGET_NAMES.map((name) => loadTarget(name) as Promise<RenderTarget>));
}
