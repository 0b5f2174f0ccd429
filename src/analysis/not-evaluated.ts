/**
 * What the input holds that an answer does not include (another engine's policy, Calico's or
 * Cilium's rules Palisade cannot analyse), for the answer itself to say — the CLI's commands and
 * serve's API alike. Never silent: the warnings name each object, and the answer says it is
 * incomplete.
 */
import type { Cluster } from '../model/types.ts';

/** The objects left out and a sentence saying so; undefined when nothing is. */
export function notEvaluated(cluster: Cluster): { objects: string[]; note: string } | undefined {
  const unevaluated = cluster.unevaluated ?? [];
  const objects = [...new Set(unevaluated.map((u) => u.object))];
  if (objects.length === 0) return undefined;
  // A policy evaluated but for part of a rule (Cilium's L7 rules, …) is not "left out": its
  // verdicts are in the answer; say which rules are not.
  const whole = new Set(unevaluated.filter((u) => !u.part).map((u) => u.object));
  const parts = objects.filter((object) => !whole.has(object));
  const held = [
    ...(whole.size > 0 ? [`policy this answer does not include (${listed([...whole])})`] : []),
    ...(parts.length > 0 ? [`rules this answer evaluates only in part (of ${listed(parts)})`] : []),
  ];
  return { objects, note: `the input holds ${held.join(', and ')}: see the warnings` };
}

/** At most four names, and how many more. */
function listed(names: readonly string[]): string {
  const more = names.length > 4 ? ` and ${names.length - 4} more` : '';
  return `${names.slice(0, 4).join(', ')}${more}`;
}
