/**
 * Services whose connections reach nothing: a selector that matches no pod or workload of the
 * input (a Service without a selector keeps its endpoints by hand, which Palisade does not read,
 * so it is not judged), and a named targetPort that the pods behind the Service do not declare.
 * Templates count as backends when no pod does (services.ts: a workload with no running pod in
 * the input still backs its Service); a numeric targetPort needs no declaration and is never a
 * finding.
 */
import { namedPortOf } from '../../semantics/index.ts';
import { serviceBackends, serviceLabel } from '../services.ts';
import type { LintCheck } from './context.ts';
import type { Finding } from './types.ts';

export const serviceChecks: LintCheck = {
  codes: ['SERVICE_SELECTS_NOTHING', 'SERVICE_TARGET_PORT_MISSING'],
  run(context) {
    const findings: Finding[] = [];
    for (const service of context.cluster.services ?? []) {
      if (!service.selector) continue;
      const object = `Service ${service.namespace}/${service.name}`;
      const backends = serviceBackends(context.cluster, service);
      if (backends.length === 0) {
        const labels = Object.entries(service.selector)
          .map(([k, v]) => `${k}=${v}`)
          .join(',');
        findings.push(
          context.finding(
            'SERVICE_SELECTS_NOTHING',
            `${serviceLabel(service)} selects no pod or workload in namespace ${service.namespace} (selector ${labels})`,
            context.where(object, ['spec', 'selector'], service.location),
          ),
        );
        continue;
      }
      service.ports.forEach((port, i) => {
        if (typeof port.targetPort !== 'string') return;
        const name = port.targetPort;
        const lacking = backends.filter((e) => namedPortOf(e, name, port.protocol) === undefined);
        if (lacking.length === 0) return;
        const who =
          lacking.length === backends.length
            ? 'none of the pods behind it declares'
            : `${lacking
                .slice(0, 3)
                .map((e) => e.id)
                .join(
                  ', ',
                )}${lacking.length > 3 ? ` and ${lacking.length - 3} more` : ''} of the pods behind it ${lacking.length === 1 ? 'does' : 'do'} not declare`;
        findings.push(
          context.finding(
            'SERVICE_TARGET_PORT_MISSING',
            `${serviceLabel(service)} port ${port.port}/${port.protocol} targets "${name}", which ${who} a ${port.protocol} container port of that name`,
            context.where(object, ['spec', 'ports', i, 'targetPort'], service.location),
          ),
        );
      });
    }
    return findings;
  },
};
