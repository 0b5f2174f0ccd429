/**
 * Calico's tiers: each policy takes its Tier object's order and default action (stamped on it,
 * so that both paths read tiers from the policies alone). A tier a Calico policy names that no
 * Tier object defines — which Calico would refuse (the tier must exist) — is reported and
 * assumed with no order (after every other tier, as felix sorts a tier it does not know) and
 * Calico's default action, Deny. And the warning that an input holds both
 * Calico's and Cilium's policy, which no cluster enforces together.
 */
import { makeDiagnostic, type Diagnostic } from '../model/diagnostics.ts';
import {
  BUILT_IN_TIERS,
  clusterPolicyLabel,
  PROFILES_TIER,
  policyEngine,
  type ClusterPolicy,
  type TierSpec,
} from '../model/cluster-policy.ts';
import { shareFacts } from '../model/cluster-policy-facts.ts';

/**
 * The policies with their tier's order and default action stamped on (Calico policies in a tier
 * a Tier object defines), reporting the tiers nothing defines.
 */
export function withTiers(
  policies: readonly ClusterPolicy[],
  defined: ReadonlyMap<string, TierSpec>,
  diagnostics: Diagnostic[],
): ClusterPolicy[] {
  const known = new Set<string>([...BUILT_IN_TIERS.map((t) => t.name), PROFILES_TIER, ...defined.keys()]);
  const reported = new Set<string>();
  return policies.map((policy) => {
    const tier = defined.get(policy.tier);
    if (tier && !BUILT_IN_TIERS.some((t) => t.name === policy.tier)) {
      const stamped = { ...policy, tierSpec: tier };
      // A new object with the original's rules: the facts the decoder read for those.
      shareFacts(policy, stamped);
      return stamped;
    }
    if (known.has(policy.tier) || policyEngine(policy.kind) !== 'calico' || reported.has(policy.tier))
      return policy;
    reported.add(policy.tier);
    diagnostics.push(
      makeDiagnostic(
        'TIER_UNDEFINED',
        `tier "${policy.tier}" of ${clusterPolicyLabel(policy)} is not defined in the input; assumed to exist with no order (after every other tier) and default action Deny`,
        { ...(policy.location ?? { file: '<input>' }), object: clusterPolicyLabel(policy) },
      ),
    );
    return policy;
  });
}

/** A warning when the input holds both Calico's and Cilium's policy. */
export function enginesMixed(policies: readonly ClusterPolicy[]): Diagnostic[] {
  const calico = policies.find((p) => policyEngine(p.kind) === 'calico');
  const cilium = policies.find((p) => policyEngine(p.kind) === 'cilium');
  if (!calico || !cilium) return [];
  return [
    makeDiagnostic(
      'POLICY_ENGINES_MIXED',
      `the input holds Calico policy (${clusterPolicyLabel(calico)}) and Cilium policy (${clusterPolicyLabel(cilium)}); a cluster enforces one of them — Palisade evaluates both, Cilium's rules where Calico's default tier holds NetworkPolicy`,
      { ...(cilium.location ?? { file: '<input>' }), object: clusterPolicyLabel(cilium) },
    ),
  ];
}
