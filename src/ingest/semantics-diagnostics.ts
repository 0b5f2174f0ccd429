/**
 * Diagnostics that depend on the semantics the input is read with: what the other semantics
 * would have used and this one ignores (the proposal's DefaultDeny annotation under v1; egress
 * under the proposal).
 */
import { makeDiagnostic, type Diagnostic } from '../model/diagnostics.ts';
import { LEGACY_ISOLATION_ANNOTATION, type Cluster, type Semantics } from '../model/types.ts';

export function semanticsDiagnostics(cluster: Cluster, semantics: Semantics): Diagnostic[] {
  const result: Diagnostic[] = [];
  if (semantics === 'v1') {
    for (const ns of cluster.namespaces.values()) {
      if (!ns.legacyIngressIsolation) continue;
      result.push(
        makeDiagnostic(
          'LEGACY_ANNOTATION_IGNORED',
          `namespace ${ns.name} sets ${LEGACY_ISOLATION_ANNOTATION} (DefaultDeny), which v1 semantics ignore; use --semantics v1beta1-proposal, or 'palisade convert --to v1' to turn it into a default-deny policy`,
          { ...(ns.location ?? { file: '<input>' }), object: `Namespace ${ns.name}` },
        ),
      );
    }
    return result;
  }
  for (const policy of cluster.policies) {
    if (!policy.affectsEgress) continue;
    // Egress rules, or only `policyTypes: [Egress]` (which isolates under v1 and means nothing here).
    const what = policy.egress.length > 0 ? 'has egress rules' : 'declares policyTypes Egress';
    result.push(
      makeDiagnostic(
        'LEGACY_EGRESS_IGNORED',
        `NetworkPolicy ${policy.namespace}/${policy.name} ${what}, which the v1beta1 proposal does not have; ignored`,
        {
          ...(policy.location ?? { file: '<input>' }),
          object: `NetworkPolicy ${policy.namespace}/${policy.name}`,
        },
      ),
    );
  }
  return result;
}
