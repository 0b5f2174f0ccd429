/**
 * The bitmap render target: Palisade's in-process classifier (after Mizar) for the whole
 * cluster, with ordered cluster policy as per-tier tables; printed as the seed's maps (only a
 * node's endpoints when a node is named). Its interpreter is the classifier's own lookup, which
 * also polices traffic between a pod and its own node when asked to.
 */
import type { Classifier } from '../../classifier/index.ts';
import { CLASSIFIER_ENGINE_REFUSAL, type TargetImplementation } from '../types.ts';
import { bitmapDocument } from './print.ts';
import { ClassifierRenderer } from './renderer.ts';

export const bitmapTarget: TargetImplementation<Classifier> = {
  capabilities: {
    scope: 'cluster',
    nodeRequired: false,
    orderedClusterPolicy: true,
    enginePolicy: { refusal: CLASSIFIER_ENGINE_REFUSAL },
    policesOwnNode: true,
  },
  formats: ['json'],
  create(store, { options }) {
    const renderer = new ClassifierRenderer(store, {
      tiers: true,
      allowNodeLocal: options.allowNodeLocal ?? true,
    });
    return { renderer, output: () => renderer.classifier };
  },
  print: (rendered) => ({
    document: { json: bitmapDocument(only(rendered).output, only(rendered).node) },
    warnings: [],
  }),
  interpreter: {
    verdicts: (rendered) => {
      const classifier = only(rendered).output;
      return (packet) => classifier.allows(packet);
    },
  },
};

function only<T>(rendered: readonly T[]): T {
  const [first] = rendered;
  if (!first || rendered.length > 1) throw new Error('bitmap renders the whole cluster at once');
  return first;
}
