/**
 * Services as policy sees them. NetworkPolicy (and every engine Palisade reads) never names a
 * Service: a connection to one is a connection to one of its backends — the pods its selector
 * matches in its namespace — on the target port of the Service port asked for (a number, or a
 * container port's name, resolved on each backend). So a question about a Service is a question
 * about its backends, each on its own target port.
 */
import {
  type Cluster,
  type Endpoint,
  type Protocol,
  type Service,
  type ServicePort,
} from '../model/types.ts';
import { resolveNamedPort } from '../semantics/index.ts';
import type { CheckResult, ServiceTarget } from './types.ts';

/**
 * The pods behind a Service: those its selector matches in its namespace — or, when the input
 * has none of them, the workload templates it matches, which stand for their pods (manifests
 * from a repository hold Deployments, not pods), as they do in matrix and check.
 */
export function serviceBackends(cluster: Pick<Cluster, 'endpoints'>, service: Service): Endpoint[] {
  const selector = service.selector;
  if (!selector) return [];
  const matching = cluster.endpoints.filter(
    (e) =>
      e.namespace === service.namespace &&
      Object.entries(selector).every(([key, value]) => e.labels[key] === value),
  );
  const pods = matching.filter((e) => e.kind === 'Pod');
  return pods.length > 0 ? pods : matching;
}

/** `ns/name[Service]`: how rows and answers name a Service. */
export function serviceLabel(service: Pick<Service, 'namespace' | 'name'>): string {
  return `${service.namespace}/${service.name}[Service]`;
}

/** The Service a text names (`ns/name[Service]`, `ns/Service/name`, `svc/ns/name`), or undefined. */
export function findService(cluster: Cluster, text: string): Service | undefined | string {
  const match =
    /^([^/]+)\/([^/[]+)\[[Ss]ervice\]$/.exec(text) ??
    /^([^/]+)\/[Ss]ervice\/([^/]+)$/.exec(text) ??
    /^svc\/([^/]+)\/([^/]+)$/.exec(text);
  if (!match) return undefined;
  const [, namespace, name] = match as unknown as [string, string, string];
  const found = (cluster.services ?? []).find((s) => s.namespace === namespace && s.name === name);
  if (found) return found;
  const near = (cluster.services ?? [])
    .filter((s) => s.name === name || s.namespace === namespace)
    .map(serviceLabel);
  return `no Service ${namespace}/${name} in the input${near.length ? ` (did you mean ${near.slice(0, 5).join(', ')}?)` : ''}`;
}

/**
 * The Service port a `--port` names: its number or its name, of the protocol asked for (any,
 * when the Service has one port of that number or name). A message when none or several match.
 */
export function servicePort(
  service: Service,
  port: number | string,
  protocol: Protocol | undefined,
): ServicePort | string {
  const matches = service.ports.filter(
    (p) =>
      (typeof port === 'number' ? p.port === port : p.name === port) &&
      (!protocol || p.protocol === protocol),
  );
  if (matches.length === 1) return matches[0] as ServicePort;
  const ports = service.ports.map((p) => `${p.name ? `${p.name} ` : ''}${p.port}/${p.protocol}`).join(', ');
  if (matches.length > 1)
    return `${serviceLabel(service)} has ${port} on ${matches.map((p) => p.protocol).join(' and ')}: give the protocol (${port}/${matches[0]?.protocol ?? 'TCP'})`;
  return `${serviceLabel(service)} has no port ${port}${protocol ? `/${protocol}` : ''}; its ports: ${ports || 'none'}`;
}

/** Where a backend listens for a Service port: the target number, or the named port's number on it. */
export function targetOn(port: ServicePort, backend: Endpoint): number | undefined {
  if (typeof port.targetPort === 'number') return port.targetPort;
  return resolveNamedPort({ kind: 'endpoint', endpoint: backend }, port.targetPort, port.protocol);
}

/**
 * What `check --to <Service> --port P` asks of the backends: the Service port P (of the query's
 * protocol when it named one), the number it leads to on the first backend that has it and, for
 * a named target port, the name resolved again on each backend. A message when P is not a port
 * of the Service, or no backend has its named target port.
 */
export function serviceTarget(
  service: Service,
  backends: readonly Endpoint[],
  query: { readonly port: number | string; readonly protocol: Protocol },
  protocolGiven: boolean,
):
  | {
      readonly protocol: Protocol;
      readonly port: number;
      readonly portName?: string;
      readonly target: ServiceTarget;
    }
  | string {
  const port = servicePort(service, query.port, protocolGiven ? query.protocol : undefined);
  if (typeof port === 'string') return port;
  const targets = backends.map((backend) => ({ pod: backend.id, port: targetOn(port, backend) }));
  const first = targets.find((t) => t.port !== undefined)?.port;
  if (first === undefined)
    return `no pod behind ${serviceLabel(service)} has a ${port.protocol} container port named "${String(port.targetPort)}" (the targetPort of its port ${port.port})`;
  return {
    protocol: port.protocol,
    port: first,
    ...(typeof port.targetPort === 'string' ? { portName: port.targetPort } : {}),
    target: {
      service: serviceLabel(service),
      port: port.port,
      ...(port.name ? { portName: port.name } : {}),
      protocol: port.protocol,
      targetPort: port.targetPort,
      backends: targets.map((t) => (t.port === undefined ? { pod: t.pod } : t)),
    },
  };
}

/** A check's answer for a Service: its port, not a backend's, in the head; where it leads apart. */
export function withService(result: CheckResult, target: ServiceTarget): CheckResult {
  const { portName: _name, ...rest } = result;
  return { ...rest, port: target.port, service: target };
}
