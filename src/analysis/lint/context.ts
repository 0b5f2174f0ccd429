/**
 * What every lint check shares: the cluster with its indexes (built once), memoized selections,
 * and one way to make a located finding.
 */
import { clusterPolicyObjectName, policySubjects } from '../../model/cluster-policy.ts';
import { selectorMatches } from '../../model/selector.ts';
import { subjectSelects } from '../../model/cluster-policy.ts';
import type {
  Cluster,
  ClusterPolicy,
  ClusterRule,
  Endpoint,
  NetworkPolicy,
  PolicyRule,
  Semantics,
  SourceLocation,
} from '../../model/types.ts';
import { indexCluster, selectingPolicies, type ClusterIndex } from '../../semantics/index.ts';
import { EndpointIndex } from '../endpoint-index.ts';
import { groupEndpoints } from '../workload-view.ts';
import { catalogueEntry, type LintCode } from './catalogue.ts';
import { fieldLocation } from './locate.ts';
import type { Finding, FindingLocation, LintGrouping, ObjectLocator, RelatedLocation } from './types.ts';

export type Direction = 'ingress' | 'egress';
export const DIRECTIONS: readonly Direction[] = ['ingress', 'egress'];

export class LintContext {
  readonly endpoints: EndpointIndex;
  readonly evaluation: ClusterIndex;
  private readonly selections = new Map<NetworkPolicy, readonly Endpoint[]>();
  private readonly subjectMemo = new Map<ClusterPolicy, readonly Endpoint[]>();
  private readonly policiesMemo: Record<Direction, Map<Endpoint, readonly NetworkPolicy[]>> = {
    ingress: new Map(),
    egress: new Map(),
  };
  private readonly portsKeys = new Map<Endpoint, string>();
  private readonly familyKeys = new Map<Endpoint, string>();
  private ids: Map<NetworkPolicy, number> | undefined;
  /** Set by a check that said its findings per class: the rows they stand for, and the classes. */
  groupedByClass: { findings: number; classes: number } | undefined;

  constructor(
    readonly cluster: Cluster,
    readonly locator: ObjectLocator,
    readonly semantics: Semantics,
    readonly grouping: LintGrouping = 'workload',
  ) {
    this.endpoints = new EndpointIndex(cluster);
    this.evaluation = indexCluster(cluster);
  }

  /** True when the input has pods or workloads to check selectors against. */
  get hasEndpoints(): boolean {
    return this.cluster.endpoints.length > 0;
  }

  /** The endpoints a NetworkPolicy's podSelector selects (host-networked ones never). */
  selection(policy: NetworkPolicy): readonly Endpoint[] {
    let found = this.selections.get(policy);
    if (!found)
      this.selections.set(
        policy,
        (found = this.endpoints.podsMatching(policy.namespace, policy.podSelector)),
      );
    return found;
  }

  /** The endpoints a cluster policy's subject selects. */
  subjects(policy: ClusterPolicy): readonly Endpoint[] {
    let found = this.subjectMemo.get(policy);
    if (!found) {
      const all = new Set<Endpoint>();
      // Every subject of a Calico selector with `||`.
      for (const subject of policySubjects(policy))
        for (const ns of this.endpoints.namespacesMatching(subject.namespaceSelector))
          for (const e of this.endpoints.podsMatching(ns.name, subject.podSelector))
            if (subjectSelects(subject, ns.labels, e)) all.add(e);
      found = [...all];
      this.subjectMemo.set(policy, found);
    }
    return found;
  }

  /** NetworkPolicies selecting the endpoint for a direction, as the evaluator sees them. */
  policiesFor(endpoint: Endpoint, direction: Direction): readonly NetworkPolicy[] {
    const memo = this.policiesMemo[direction];
    let found = memo.get(endpoint);
    if (!found)
      memo.set(endpoint, (found = selectingPolicies(this.evaluation, endpoint, direction, this.semantics)));
    return found;
  }

  /** A small number per NetworkPolicy, for memo keys. */
  policyId(policy: NetworkPolicy): number {
    this.ids ??= new Map(this.cluster.policies.map((p, i) => [p, i]));
    return this.ids.get(policy) ?? -1;
  }

  /** An endpoint's named ports as one string (ingress named ports resolve against the subject). */
  portsKey(endpoint: Endpoint): string {
    let key = this.portsKeys.get(endpoint);
    if (key === undefined) {
      key = endpoint.ports.map((p) => `${p.name ?? ''}/${p.protocol}/${p.port}`).join(',');
      this.portsKeys.set(endpoint, key);
    }
    return key;
  }

  /** An endpoint's address families (`4`, `46`, or `` with no address). */
  familiesKey(endpoint: Endpoint): string {
    let key = this.familyKeys.get(endpoint);
    if (key === undefined) {
      key =
        endpoint.ips.length === 0
          ? ''
          : endpoint.ips.length === 1
            ? String(endpoint.ips[0]?.family)
            : [...new Set(endpoint.ips.map((ip) => ip.family))].sort().join('');
      this.familyKeys.set(endpoint, key);
    }
    return key;
  }

  /** Whether a NetworkPolicy pod selector picks the endpoint (for checks that already hold the endpoint). */
  selects(policy: NetworkPolicy, endpoint: Endpoint): boolean {
    return (
      !endpoint.hostNetwork &&
      endpoint.namespace === policy.namespace &&
      selectorMatches(policy.podSelector, endpoint.labels)
    );
  }

  where(
    object: string,
    path: readonly (string | number)[],
    fallback: SourceLocation | undefined,
  ): FindingLocation {
    return fieldLocation(this.locator, object, path, fallback);
  }

  /** `hint`: a fix for this finding, where the catalogue's (the default) is too general to fit it. */
  finding(
    code: LintCode,
    message: string,
    where: FindingLocation,
    related: readonly RelatedLocation[] = [],
    hint?: string,
  ): Finding {
    const entry = catalogueEntry(code);
    return { code, severity: entry.severity, message, hint: hint ?? entry.hint, ...where, related };
  }
}

export function policyObject(policy: Pick<NetworkPolicy, 'namespace' | 'name'>): string {
  return `NetworkPolicy ${policy.namespace}/${policy.name}`;
}

export function clusterPolicyObject(policy: Pick<ClusterPolicy, 'kind' | 'name' | 'namespace'>): string {
  return clusterPolicyObjectName(policy);
}

/** The field holding a NetworkPolicy rule's peers. */
export function peersField(direction: Direction): 'from' | 'to' {
  return direction === 'ingress' ? 'from' : 'to';
}

/**
 * Endpoints as output names them: a workload's pods as the workload (`ns/name[Kind]`), as the
 * matrix's default view does; `count` is how many rows that is.
 */
export function rowsOf(endpoints: readonly Endpoint[]): { labels: string[]; count: number } {
  const labels = groupEndpoints(endpoints, 'workload').map((g) => g.label);
  return { labels, count: labels.length };
}

/** `a, b and c`, or `a, b, c and 4 more` — lists in messages stay one line. */
export function listSome(items: readonly string[], max = 3, total = items.length): string {
  // `total`: how many there are when `items` holds only the first few of them.
  const shown = Math.min(items.length, max);
  if (total > shown) return `${items.slice(0, shown).join(', ')} and ${total - shown} more`;
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1] ?? ''}`;
}

/** Every NetworkPolicy rule of the cluster, with its policy and direction. */
export function* networkPolicyRules(
  cluster: Cluster,
): Generator<{ policy: NetworkPolicy; direction: Direction; rule: PolicyRule }> {
  for (const policy of cluster.policies)
    for (const direction of DIRECTIONS)
      for (const rule of policy[direction]) yield { policy, direction, rule };
}

/** Every cluster policy rule, with its policy and direction. */
export function* clusterPolicyRules(
  cluster: Cluster,
): Generator<{ policy: ClusterPolicy; direction: Direction; rule: ClusterRule }> {
  for (const policy of cluster.clusterPolicies)
    for (const direction of DIRECTIONS)
      for (const rule of policy[direction]) yield { policy, direction, rule };
}

/** A check: the codes it can report and how it finds them. */
export interface LintCheck {
  readonly codes: readonly LintCode[];
  run(context: LintContext): Finding[];
}
