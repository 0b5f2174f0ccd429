/**
 * Ingress and Route backends checked against the input's Services, once the whole input is read:
 * a backend naming a Service the input does not have, or a port that Service does not have, is a
 * located warning (the controller is then taken to reach nothing through it, as it would not).
 */
import { makeDiagnostic, type Diagnostic } from '../model/diagnostics.ts';
import { ingressPortText, ingressServicePorts } from '../model/ingress.ts';
import type { IngressRoute, Service } from '../model/types.ts';

export function ingressBackendProblems(
  ingresses: readonly IngressRoute[],
  services: readonly Service[],
): Diagnostic[] {
  const byKey = new Map(services.map((s) => [`${s.namespace}/${s.name}`, s]));
  const problems: Diagnostic[] = [];
  for (const ingress of ingresses)
    for (const backend of ingress.backends) {
      const where = {
        ...(backend.location ?? ingress.location ?? { file: '<input>' }),
        object: `${ingress.kind} ${ingress.namespace}/${ingress.name}`,
      };
      const service = byKey.get(`${ingress.namespace}/${backend.service}`);
      if (!service) {
        problems.push(
          makeDiagnostic(
            'INGRESS_SERVICE_UNKNOWN',
            `no Service ${ingress.namespace}/${backend.service} in the input; the ingress controller reaches nothing through this backend`,
            where,
          ),
        );
        continue;
      }
      if (backend.port && ingressServicePorts(service, backend.port).length === 0) {
        const ports = service.ports.map((p) => `${p.name ? `${p.name} ` : ''}${p.port}→${p.targetPort}`);
        problems.push(
          makeDiagnostic(
            'INGRESS_SERVICE_UNKNOWN',
            `Service ${service.namespace}/${service.name} has no ${ingressPortText(backend.port)} (its ports: ${ports.join(', ') || 'none'}); the ingress controller reaches nothing through this backend`,
            where,
          ),
        );
      }
    }
  return problems;
}
