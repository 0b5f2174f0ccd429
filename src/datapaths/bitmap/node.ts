/**
 * The classifier on a node (`palisade agent --datapath classifier`): the Mizar-style classifier
 * kept current in the agent's own process, answering lookups. Nothing is installed outside the
 * process, so there is nothing to drift, repair or clean up.
 */
import type { NodeContext, NodeDatapath } from '../types.ts';
import { bitmapTarget } from './target.ts';

export function openClassifierNode(context: NodeContext): NodeDatapath {
  const instance = bitmapTarget.create(context.state, {
    node: context.node,
    options: { allowNodeLocal: context.allowNodeLocal ?? true },
  });
  return {
    name: 'classifier',
    renderer: instance.renderer,
    prepare: () =>
      Promise.resolve(
        'the classifier holds no policy until the first snapshot is rendered (/readyz says not ready)',
      ),
    realize: () => Promise.resolve(),
    counts() {
      const classifier = instance.output();
      return { tables: classifier.tables, rules: classifier.memory.records, sets: 0 };
    },
    verify: () => Promise.resolve([]),
    repair: () => Promise.resolve(),
    cleanup: () => Promise.resolve('the classifier holds nothing outside this process'),
    close: () => Promise.resolve(),
  };
}
