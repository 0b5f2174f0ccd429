/**
 * Labels Calico and Cilium give a pod for its service account (see ingest/identity-labels.ts,
 * which adds them when a policy reads them). Outputs that print a pod's labels leave these out:
 * they are not in the pod's manifest.
 */
import type { Labels } from './basics.ts';

export const CALICO_SERVICE_ACCOUNT_LABEL = 'projectcalico.org/serviceaccount';
export const CALICO_SERVICE_ACCOUNT_PREFIX = 'pcsa.';
export const CILIUM_SERVICE_ACCOUNT_LABEL = 'io.cilium.k8s.policy.serviceaccount';

export function isIdentityLabel(key: string): boolean {
  return (
    key === CALICO_SERVICE_ACCOUNT_LABEL ||
    key === CILIUM_SERVICE_ACCOUNT_LABEL ||
    key.startsWith(CALICO_SERVICE_ACCOUNT_PREFIX)
  );
}

/** The labels as the pod's manifest has them. */
export function ownLabels(labels: Labels): Labels {
  let own: Record<string, string> | undefined;
  for (const key in labels) {
    if (!isIdentityLabel(key)) continue;
    own ??= { ...labels };
    delete own[key];
  }
  return own ?? labels;
}
