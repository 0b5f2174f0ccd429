/**
 * Calico's tiers as the cluster holds them: the Tier objects of the input, and a tier each Calico
 * policy names that no Tier object defines — which Calico would refuse (the tier must exist);
 * Palisade warns and assumes it, with no order (after every other tier, as felix sorts a tier it
 * does not know) and Calico's default action, Deny. And the warning that an input holds both
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

/** The tiers by name (built-in ones included), or undefined when no Calico policy nor Tier is in the input. */
export function tiersOf(
  policies: readonly ClusterPolicy[],
  defined: ReadonlyMap<string, TierSpec>,
  diagnostics: Diagnostic[],
): Map<string, TierSpec> | undefined {
  const calico = policies.filter((p) => policyEngine(p.kind) === 'calico');
  if (calico.length === 0 && defined.size === 0) return undefined;
  const tiers = new Map<string, TierSpec>(BUILT_IN_TIERS.map((t) => [t.name, t]));
  for (const [name, tier] of defined) tiers.set(name, tier);
  for (const policy of calico) {
    if (tiers.has(policy.tier) || policy.tier === PROFILES_TIER) continue;
    tiers.set(policy.tier, { name: policy.tier, order: Infinity, defaultAction: 'deny' });
    diagnostics.push(
      makeDiagnostic(
        'TIER_UNDEFINED',
        `tier "${policy.tier}" of ${clusterPolicyLabel(policy)} is not defined in the input; assumed to exist with no order (after every other tier) and default action Deny`,
        { ...(policy.location ?? { file: '<input>' }), object: clusterPolicyLabel(policy) },
      ),
    );
  }
  return tiers;
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
