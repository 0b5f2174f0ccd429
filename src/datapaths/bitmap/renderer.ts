/**
 * The classifier as a renderer: the pipeline's transactions keep it current without rebuilding
 * it — each affected pod gets its maps looked up or built, and tables that expand a group whose
 * members changed are rebuilt for the pods that use them. Changes wait for `commit`, and commit
 * runs to completion before any lookup can run (one thread), so a lookup sees the old policy or
 * the new one, never a mix: the seed's safe-update property, by construction. With `tiers`, a
 * pod's Admin and Baseline tables are looked up or built with its maps (the pipeline names every
 * pod whose cluster policy changed). The classifier reads the store, not the pipeline's tables.
 *
 * Node addresses (for node-local traffic) are the store's nodes'; a change of nodes rebuilds the
 * classifier, as a resync does — nodes change rarely, and a node's old addresses must go.
 */
import type { PodTables } from '../../configurator/index.ts';
import type { CompilingStore } from '../../state/index.ts';
import { Classifier, type ClassifierOptions } from '../../classifier/index.ts';
import type { Renderer, RendererTxn, RenderedPod } from '../types.ts';

interface ClassifierChanges {
  readonly pods: number;
  readonly groups: number;
}

export class ClassifierRenderer implements Renderer<ClassifierChanges> {
  readonly name = 'classifier';
  readonly reads = 'store' as const;
  classifier: Classifier;
  private nodesVersion: number;

  constructor(
    private readonly state: CompilingStore,
    private readonly options: ClassifierOptions = {},
  ) {
    this.classifier = this.build();
    this.nodesVersion = state.nodesVersion;
  }

  newTxn(options: { readonly resync: boolean }): RendererTxn<ClassifierChanges> {
    const pods = new Set<string>();
    const groups = new Set<string>();
    return {
      render: (pod: RenderedPod, _tables: PodTables | undefined) => {
        pods.add(pod.id);
      },
      groupsChanged: (changed) => {
        for (const group of changed) groups.add(group);
      },
      changes: () => ({ pods: pods.size, groups: groups.size }),
      commit: () => {
        if (options.resync || this.state.nodesVersion !== this.nodesVersion) {
          this.classifier = this.build();
          this.nodesVersion = this.state.nodesVersion;
          return;
        }
        for (const id of pods) this.classifier.setPod(id, this.state.pod(id));
        if (groups.size > 0) this.classifier.groupsChanged(groups);
      },
    };
  }

  private build(): Classifier {
    const classifier = new Classifier(this.state, this.options);
    for (const node of this.state.nodes()) classifier.addNodeAddresses(node.name, node.addresses);
    return classifier;
  }
}
