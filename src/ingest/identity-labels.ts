/**
 * The labels Calico and Cilium give a pod beyond its own, for its service account: Calico's
 * `projectcalico.org/serviceaccount` (its name) and `pcsa.<label>` (the account's labels, from a
 * ServiceAccount object), Cilium's `io.cilium.k8s.policy.serviceaccount`. Their selectors read
 * them like any label, and so do every later layer's indexes — so a pod carries them as labels,
 * but only when some policy of that engine reads them: an input without such selectors keeps its
 * pods exactly as written (and output never shows these labels: model/identity-labels.ts).
 */
import { policySubjects, type ClusterPolicy } from '../model/cluster-policy.ts';
import {
  CALICO_SERVICE_ACCOUNT_LABEL,
  CALICO_SERVICE_ACCOUNT_PREFIX,
  CILIUM_SERVICE_ACCOUNT_LABEL,
} from '../model/identity-labels.ts';
import type { Endpoint, Labels, LabelSelector } from '../model/types.ts';

/** A ServiceAccount's labels, by `namespace/name`. */
type ServiceAccountLabels = ReadonlyMap<string, Labels>;

export function withIdentityLabels<E extends Pick<Endpoint, 'namespace' | 'labels' | 'serviceAccount'>>(
  endpoints: readonly E[],
  policies: readonly ClusterPolicy[],
  accounts: ServiceAccountLabels,
): E[] | undefined {
  const read = readKeys(policies);
  if (!read.calico && !read.cilium) return undefined;
  return endpoints.map((endpoint) => {
    const account = endpoint.serviceAccount ?? 'default';
    const labels: Record<string, string> = { ...endpoint.labels };
    if (read.calico) {
      labels[CALICO_SERVICE_ACCOUNT_LABEL] = account;
      for (const [key, value] of Object.entries(accounts.get(`${endpoint.namespace}/${account}`) ?? {}))
        labels[`${CALICO_SERVICE_ACCOUNT_PREFIX}${key}`] = value;
    }
    if (read.cilium) labels[CILIUM_SERVICE_ACCOUNT_LABEL] = account;
    return { ...endpoint, labels };
  });
}

/** Which engines' service-account labels any selector reads. */
function readKeys(policies: readonly ClusterPolicy[]): { calico: boolean; cilium: boolean } {
  const found = { calico: false, cilium: false };
  const visit = (selector: LabelSelector | undefined): void => {
    for (const r of selector?.requirements ?? []) {
      if (r.key === CALICO_SERVICE_ACCOUNT_LABEL || r.key.startsWith(CALICO_SERVICE_ACCOUNT_PREFIX))
        found.calico = true;
      if (r.key === CILIUM_SERVICE_ACCOUNT_LABEL) found.cilium = true;
    }
  };
  for (const policy of policies) {
    for (const subject of policySubjects(policy)) visit(subject.podSelector);
    for (const rule of [...policy.ingress, ...policy.egress])
      for (const peer of rule.peers) if (peer.type === 'pods') visit(peer.podSelector);
  }
  return found;
}
