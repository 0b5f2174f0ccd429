/**
 * A policy as explanations name it → the object name `/api/object` takes: `ns/name` is
 * Kubernetes' NetworkPolicy; the short names of the other kinds (model/cluster-policy.ts
 * `clusterPolicyLabel`) are `anp/x`, `banp/x`, `cnp/x`, `gnp/x`, `profile/x` and `ccnp/x` for
 * cluster-scoped kinds, `calico/ns/x` and `cilium/ns/x` for namespaced ones (so a NetworkPolicy
 * in a namespace called `cilium` stays one) — a Cilium policy of several specs with `[i]` after
 * its name.
 */
const CLUSTER_SCOPED: Readonly<Record<string, string>> = {
  anp: 'AdminNetworkPolicy',
  banp: 'BaselineAdminNetworkPolicy',
  cnp: 'ClusterNetworkPolicy',
  gnp: 'GlobalNetworkPolicy.projectcalico.org',
  profile: 'Profile.projectcalico.org',
  ccnp: 'CiliumClusterwideNetworkPolicy',
};
const NAMESPACED: Readonly<Record<string, string>> = {
  calico: 'NetworkPolicy.projectcalico.org',
  cilium: 'CiliumNetworkPolicy',
};

/**
 * Every object a policy's name can be, the likelier first: `gnp/x` is a GlobalNetworkPolicy `x`,
 * or a NetworkPolicy `x` in a namespace called `gnp` (explanations name both alike), which the
 * page asks for when the input has no such GlobalNetworkPolicy.
 */
export function policyObjects(name: string): string[] {
  const parts = name.split('/');
  const [prefix = '', ...rest] = parts;
  const kind = name.includes(' ')
    ? undefined
    : rest.length === 1
      ? CLUSTER_SCOPED[prefix]
      : rest.length === 2
        ? NAMESPACED[prefix]
        : undefined;
  if (kind === undefined) return [`NetworkPolicy ${name}`];
  const mapped = `${kind} ${rest.join('/').replace(/\[\d+\]$/, '')}`;
  return rest.length === 1 ? [mapped, `NetworkPolicy ${name}`] : [mapped];
}
