/**
 * Labels Calico and Cilium give a pod for its service account (see ingest/identity-labels.ts,
 * which adds them when a policy reads them).
 */
export const CALICO_SERVICE_ACCOUNT_LABEL = 'projectcalico.org/serviceaccount';
export const CALICO_SERVICE_ACCOUNT_PREFIX = 'pcsa.';
export const CILIUM_SERVICE_ACCOUNT_LABEL = 'io.cilium.k8s.policy.serviceaccount';
