/**
 * Labels Calico and Cilium give a pod for its service account (see ingest/identity-labels.ts,
 * which adds them when a policy reads them).
 */
import type { LabelSelector } from './types.ts';

export const CALICO_SERVICE_ACCOUNT_LABEL = 'projectcalico.org/serviceaccount';
export const CALICO_SERVICE_ACCOUNT_PREFIX = 'pcsa.';
export const CILIUM_SERVICE_ACCOUNT_LABEL = 'io.cilium.k8s.policy.serviceaccount';

/** `identityLabelsRead`'s bits: a selector reads Calico's, Cilium's service-account labels. */
export const READS_CALICO_ACCOUNT = 1;
export const READS_CILIUM_ACCOUNT = 2;

/** Which engines' service-account labels a selector reads (`READS_…` bits). */
export function identityLabelsRead(selector: LabelSelector | undefined): number {
  let read = 0;
  for (const r of selector?.requirements ?? []) {
    if (r.key === CALICO_SERVICE_ACCOUNT_LABEL || r.key.startsWith(CALICO_SERVICE_ACCOUNT_PREFIX))
      read |= READS_CALICO_ACCOUNT;
    if (r.key === CILIUM_SERVICE_ACCOUNT_LABEL) read |= READS_CILIUM_ACCOUNT;
  }
  return read;
}
