/**
 * `explain --by class`: one explanation per class of endpoints no policy tells apart. Such
 * endpoints are selected by the same policies, matched by the same rules' peers, declare the same
 * named ports and are in the same namespace (equivalence.ts; the selectors of policies dropped as
 * invalid are read too, since explain names those): their explanations are equal but for the
 * fields naming the endpoint itself. So each class is explained once, through its first member,
 * and `memberExplanation` gives back any member's explanation exactly — at scale the cost and
 * the output follow the classes, not the endpoints.
 */
import type { Cluster, Endpoint, LabelSelector, Semantics } from '../model/types.ts';
import { classRows, type ClassRow } from './class-view.ts';
import { endpointClasses } from './equivalence.ts';
import {
  endpointIdentity,
  explainer,
  type DirectionExplanation,
  type EndpointExplanation,
} from './explain.ts';

/** A class explained: its explanation, as its first member's, with that member's name replaced by the class's. */
export interface ClassExplanation {
  readonly row: ClassRow;
  readonly ingress: DirectionExplanation;
  readonly egress: DirectionExplanation;
}

export interface ClassExplanations {
  /** In the order printed (by namespace, then label), numbered `c1`, `c2`… as matrix numbers them. */
  readonly classes: readonly ClassExplanation[];
  /** Members of all classes. */
  readonly endpoints: number;
}

/** The classes of `endpoints`, as explain splits them (policies dropped as invalid included). */
export function explainClassesOf(
  cluster: Cluster,
  endpoints: readonly Endpoint[],
): ReturnType<typeof endpointClasses> {
  // Namespaces need nothing: the namespace is part of a class's signature.
  const dropped = (cluster.rejectedPolicies ?? []).flatMap((p): (LabelSelector | undefined)[] =>
    p.scope === 'cluster'
      ? (p.subjects ?? []).map((s) => s.podSelector)
      : p.anyOf
        ? [...p.anyOf]
        : [p.podSelector],
  );
  return endpointClasses(cluster, endpoints, true, dropped);
}

export function explainClasses(
  cluster: Cluster,
  endpoints: readonly Endpoint[],
  semantics: Semantics = 'v1',
  /** Called every thousand classes with (explained, total), for progress display. */
  onProgress?: (done: number, total: number) => void,
): ClassExplanations {
  const { classOf, representatives } = explainClassesOf(cluster, endpoints);
  const { rows } = classRows(endpoints, classOf, representatives.length);
  const explain = explainer(cluster, semantics);
  const classes = rows.map((row, i): ClassExplanation => {
    if (onProgress && i % 1000 === 0) onProgress(i, rows.length);
    const first = row.members[0] as Endpoint;
    const explained = explain(first);
    return {
      row,
      ingress: renamed(explained.ingress, first.id, row.label),
      egress: renamed(explained.egress, first.id, row.label),
    };
  });
  return { classes, endpoints: endpoints.length };
}

/** A member's explanation, as `explainEndpoints` gives it, from its class's. */
export function memberExplanation(explained: ClassExplanation, member: Endpoint): EndpointExplanation {
  return {
    ...endpointIdentity(member),
    ingress: renamed(explained.ingress, explained.row.label, member.id),
    egress: renamed(explained.egress, explained.row.label, member.id),
  };
}

/**
 * The explanation with the explained endpoint's name `from` replaced by `to` where it names
 * itself: an ingress rule that allows nothing since the endpoint declares no such named port
 * (`shop/api declares no TCP port named http`), and the dropped policies that would have selected it.
 */
function renamed(direction: DirectionExplanation, from: string, to: string): DirectionExplanation {
  const self = `${from} declares no `;
  const rules = direction.rules.map((rule) =>
    rule.allowsNothing?.startsWith(self)
      ? { ...rule, allowsNothing: `${to} declares no ${rule.allowsNothing.slice(self.length)}` }
      : rule,
  );
  const dropped = direction.dropped?.map((d) => (d.endpoint === from ? { ...d, endpoint: to } : d));
  return { ...direction, rules, ...(dropped ? { dropped } : {}) };
}
