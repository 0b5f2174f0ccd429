/**
 * Two running pods with the same IP: the API server never assigns one, but manifests written by
 * hand, copied from two clusters, or dumped while a pod was being replaced can hold them. Traffic
 * to that address cannot be told apart, so `check --to IP` and the datapaths' address maps would
 * each have to pick one pod; say so instead of picking silently. hostNetwork pods share their
 * node's address by design and are left out.
 */
import { formatIp } from '../net/ip.ts';
import { makeDiagnostic, type Diagnostic } from '../model/diagnostics.ts';
import type { Endpoint } from '../model/types.ts';

/** One warning per address that two or more pods hold, at the second pod (then the third…). */
export function sharedPodAddresses(endpoints: readonly Endpoint[]): Diagnostic[] {
  const holders = [new Map<bigint, Endpoint>(), new Map<bigint, Endpoint>()];
  const diagnostics: Diagnostic[] = [];
  for (const endpoint of endpoints) {
    if (endpoint.hostNetwork) continue;
    for (const ip of endpoint.ips) {
      const byValue = holders[ip.family === 4 ? 0 : 1] as Map<bigint, Endpoint>;
      const first = byValue.get(ip.value);
      if (!first) {
        byValue.set(ip.value, endpoint);
        continue;
      }
      if (first === endpoint) continue;
      const where = first.location ? ` (at ${first.location.file}:${first.location.line})` : '';
      diagnostics.push(
        makeDiagnostic(
          'POD_IP_SHARED',
          `${formatIp(ip)} is the address of ${first.id}${where} and of ${endpoint.id}; traffic to it cannot be told apart (name the pod rather than the address)`,
          { ...(endpoint.location ?? { file: '<input>' }), object: `Pod ${endpoint.id}` },
        ),
      );
    }
  }
  return diagnostics;
}
