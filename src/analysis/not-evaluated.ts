/**
 * What the input holds that an answer does not include (another engine's policy, Calico's or
 * Cilium's rules Palisade cannot analyse), for the answer itself to say — the CLI's commands and
 * serve's API alike. Never silent: the warnings name each object, and the answer says it is
 * incomplete.
 */
import type { Cluster } from '../model/types.ts';

/** The objects left out and a sentence saying so; undefined when nothing is. */
export function notEvaluated(cluster: Cluster): { objects: string[]; note: string } | undefined {
  const objects = [...new Set((cluster.unevaluated ?? []).map((u) => u.object))];
  if (objects.length === 0) return undefined;
  const shown = objects.slice(0, 4).join(', ');
  const more = objects.length > 4 ? ` and ${objects.length - 4} more` : '';
  return {
    objects,
    note: `the input holds policy this answer does not include (${shown}${more}): see the warnings`,
  };
}
