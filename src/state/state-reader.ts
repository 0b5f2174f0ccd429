/**
 * What the group index and the cluster policy store read of ClusterState's pods and namespaces.
 * One class's methods rather than closures made for each state: compiled code inlines the
 * functions it calls, and code that had inlined one state's closures was thrown away with that
 * state, so every new state (each resync, each command's compile) paid again for optimizing the
 * paths that read it.
 */
import type { Endpoint, Labels } from '../model/types.ts';
import type { LabelSetIndex } from './label-sets.ts';

export class StateReader {
  constructor(
    private readonly pods: ReadonlyMap<string, Endpoint>,
    /** Namespaces in use, with their effective labels. */
    private readonly namespaces: ReadonlyMap<string, Labels>,
    private readonly podsOfNamespace: ReadonlyMap<string, ReadonlySet<string>>,
    readonly podLabelSets: LabelSetIndex,
    /** Namespaces as label sets in partition "", members are namespace names. */
    readonly namespaceLabelSets: LabelSetIndex,
  ) {}

  pod(id: string): Endpoint | undefined {
    return this.pods.get(id);
  }

  namespaceLabels(namespace: string): Labels | undefined {
    return this.namespaces.get(namespace);
  }

  allPods(): Iterable<Endpoint> {
    return this.pods.values();
  }

  podsByNamespace(): Iterable<[string, ReadonlySet<string>]> {
    return this.podsOfNamespace.entries();
  }
}
