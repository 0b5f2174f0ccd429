/**
 * The labels Calico and Cilium give a pod beyond its own, for its service account: Calico's
 * `projectcalico.org/serviceaccount` (its name) and `pcsa.<label>` (the account's labels, from a
 * ServiceAccount object), Cilium's `io.cilium.k8s.policy.serviceaccount`. Their selectors read
 * them like any label, and so do every later layer's indexes — so a pod carries them as labels,
 * but only when some policy of that engine reads them: an input without such selectors keeps its
 * pods exactly as written (and output never shows these labels: model/identity-labels.ts).
 */
import type { ClusterPolicy } from '../model/cluster-policy.ts';
import {
  CALICO_SERVICE_ACCOUNT_LABEL,
  CALICO_SERVICE_ACCOUNT_PREFIX,
  CILIUM_SERVICE_ACCOUNT_LABEL,
  READS_CALICO_ACCOUNT,
  READS_CILIUM_ACCOUNT,
} from '../model/identity-labels.ts';
import { policyFacts } from '../model/cluster-policy-facts.ts';
import type { Endpoint, Labels } from '../model/types.ts';

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

/**
 * Which engines' service-account labels any selector reads (stops when it has found both): read
 * with each policy's facts, while ingest had its selectors at hand (a pass over 10,000 policies'
 * selectors here was 2 % of reading them).
 */
function readKeys(policies: readonly ClusterPolicy[]): { calico: boolean; cilium: boolean } {
  let found = 0;
  for (const policy of policies) {
    found |= policyFacts(policy).identityLabels;
    if (found === (READS_CALICO_ACCOUNT | READS_CILIUM_ACCOUNT)) break;
  }
  return { calico: (found & READS_CALICO_ACCOUNT) !== 0, cilium: (found & READS_CILIUM_ACCOUNT) !== 0 };
}
