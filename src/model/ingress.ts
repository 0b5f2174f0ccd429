/**
 * Which ports of a Service an Ingress or Route backend forwards to. An Ingress names the Service
 * port by number or name. A Route's `port.targetPort` names the Service port by its name, or by
 * the number its target port has (OpenShift's router picks the endpoint port that way); a Route
 * without `port` forwards to every port of the Service.
 */
import type { IngressPortRef, Service, ServicePort } from './types.ts';

export function ingressServicePorts(service: Service, ref: IngressPortRef | undefined): ServicePort[] {
  if (!ref) return [...service.ports];
  const { port } = ref;
  if (ref.by === 'port')
    return service.ports.filter((p) => (typeof port === 'number' ? p.port === port : p.name === port));
  if (typeof port === 'string') {
    const byName = service.ports.filter((p) => p.name === port);
    // Else the name of the backends' container port the Service targets.
    return byName.length > 0 ? byName : service.ports.filter((p) => p.targetPort === port);
  }
  return service.ports.filter((p) => p.targetPort === port);
}

/** `port 8080`, `port "http"`, `targetPort 8080`: how a message names a backend's port. */
export function ingressPortText(ref: IngressPortRef): string {
  const value = typeof ref.port === 'number' ? `${ref.port}` : `"${ref.port}"`;
  return `${ref.by === 'port' ? 'port' : 'targetPort'} ${value}`;
}
