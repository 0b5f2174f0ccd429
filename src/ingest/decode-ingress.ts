/**
 * Ingress (networking.k8s.io/v1) and OpenShift Route (route.openshift.io/v1) objects: what the
 * ingress controller forwards to — each backend's Service and which of its ports. Hosts, paths,
 * TLS and weights choose among backends, not whether the controller may reach one: read as
 * given, never analysed. Unknown fields are errors, as `kubectl --validate=strict` has them; a
 * backend Palisade cannot follow (a `resource` backend, a Route to something else than a
 * Service) is a located warning and left out. Whether the Services exist is build-cluster's
 * question (ingress-backends.ts): it needs the whole input.
 */
import * as z from 'zod';
import type { IngressBackend, IngressPortRef } from '../model/types.ts';
import type { DecodeContext } from './decode-context.ts';
import { decodeMetadataName } from './decode-metadata.ts';
import { decodeReportingAll } from './prune-mistyped.ts';
import { metadataSchema } from './schemas.ts';
import type { DecodedObject, FieldPath } from './types.ts';

export const INGRESS_API_VERSIONS = ['networking.k8s.io/v1'];
export const ROUTE_API_VERSIONS = ['route.openshift.io/v1'];

const object = z.strictObject;

const ingressBackend = object({
  service: object({
    name: z.string(),
    port: object({ name: z.string().nullish(), number: z.number().nullish() }).nullish(),
  }).nullish(),
  resource: z.looseObject({}).nullish(),
});

const ingressSchema = z.looseObject({
  metadata: metadataSchema,
  spec: object({
    ingressClassName: z.string().nullish(),
    defaultBackend: ingressBackend.nullish(),
    tls: z.array(z.looseObject({})).nullish(),
    rules: z
      .array(
        object({
          host: z.string().nullish(),
          http: object({
            paths: z.array(
              object({ path: z.string().nullish(), pathType: z.string().nullish(), backend: ingressBackend }),
            ),
          }).nullish(),
        }),
      )
      .nullish(),
  }).nullish(),
});

const routeTarget = object({ kind: z.string().nullish(), name: z.string(), weight: z.number().nullish() });

const routeSchema = z.looseObject({
  metadata: metadataSchema,
  spec: object({
    host: z.string().nullish(),
    subdomain: z.string().nullish(),
    path: z.string().nullish(),
    to: routeTarget,
    alternateBackends: z.array(routeTarget).nullish(),
    port: object({ targetPort: z.union([z.number(), z.string()]) }).nullish(),
    tls: z.looseObject({}).nullish(),
    wildcardPolicy: z.string().nullish(),
    httpHeaders: z.looseObject({}).nullish(),
  }),
});

const INGRESS_FIELDS = [
  'ingressClassName',
  'defaultBackend',
  'tls',
  'rules',
  'host',
  'http',
  'paths',
  'path',
  'pathType',
  'backend',
  'service',
  'resource',
  'name',
  'port',
  'number',
];
const ROUTE_FIELDS = [
  'host',
  'subdomain',
  'path',
  'to',
  'alternateBackends',
  'port',
  'targetPort',
  'tls',
  'wildcardPolicy',
  'httpHeaders',
  'kind',
  'name',
  'weight',
];

type RawIngressBackend = z.infer<typeof ingressBackend>;

export function decodeIngress(ctx: DecodeContext): DecodedObject | undefined {
  return decodeReportingAll(
    ctx,
    ctx.raw.value,
    { schema: ingressSchema, knownFields: INGRESS_FIELDS },
    (raw) => {
      const { name, namespace } = decodeMetadataName(ctx, raw.metadata, true);
      const backends: IngressBackend[] = [];
      const read = (backend: RawIngressBackend, at: FieldPath): void => {
        const found = ingressBackendOf(ctx, backend, at);
        if (found) backends.push(found);
      };
      if (raw.spec?.defaultBackend) read(raw.spec.defaultBackend, ['spec', 'defaultBackend']);
      (raw.spec?.rules ?? []).forEach((rule, r) =>
        (rule.http?.paths ?? []).forEach((path, p) =>
          read(path.backend, ['spec', 'rules', r, 'http', 'paths', p, 'backend']),
        ),
      );
      if (ctx.failed) return undefined;
      const location = ctx.raw.locator.valueAt(ctx.raw.basePath);
      return { kind: 'Ingress', ingress: { kind: 'Ingress', namespace, name, backends, location } };
    },
  );
}

function ingressBackendOf(
  ctx: DecodeContext,
  backend: RawIngressBackend,
  at: FieldPath,
): IngressBackend | undefined {
  if (backend.resource) {
    ctx.report(
      'INGRESS_BACKEND_NOT_ANALYSED',
      'a resource backend is not a Service: Palisade does not follow it, so the ingress controller reaches nothing through it',
      [...at, 'resource'],
    );
    return undefined;
  }
  const service = backend.service;
  if (!service) {
    ctx.report('SCHEMA_REQUIRED', 'a backend needs a service (or a resource)', at, true);
    return undefined;
  }
  const port = service.port;
  const portAt = [...at, 'service', 'port'];
  if (!port || (port.name == null) === (port.number == null)) {
    ctx.report(
      'SCHEMA_REQUIRED',
      'a backend service port needs exactly one of name and number',
      portAt,
      true,
    );
    return undefined;
  }
  if (port.number != null && (!Number.isInteger(port.number) || port.number < 1 || port.number > 65535)) {
    ctx.report('PORT_OUT_OF_RANGE', `port ${port.number} is not a port number (1-65535)`, [
      ...portAt,
      'number',
    ]);
    return undefined;
  }
  return {
    service: service.name,
    port: { by: 'port', port: port.number ?? (port.name as string) },
    location: ctx.raw.locator.valueAt([...ctx.raw.basePath, ...at]),
  };
}

export function decodeRoute(ctx: DecodeContext): DecodedObject | undefined {
  return decodeReportingAll(ctx, ctx.raw.value, { schema: routeSchema, knownFields: ROUTE_FIELDS }, (raw) => {
    const { name, namespace } = decodeMetadataName(ctx, raw.metadata, true);
    const target = raw.spec.port?.targetPort;
    if (typeof target === 'number' && (!Number.isInteger(target) || target < 1 || target > 65535))
      ctx.report('PORT_OUT_OF_RANGE', `targetPort ${target} is not a port number (1-65535)`, [
        'spec',
        'port',
        'targetPort',
      ]);
    const port: IngressPortRef | undefined =
      target === undefined ? undefined : { by: 'target', port: target };
    const backends: IngressBackend[] = [];
    const targets: [z.infer<typeof routeTarget>, FieldPath][] = [
      [raw.spec.to, ['spec', 'to']],
      ...(raw.spec.alternateBackends ?? []).map((t, i): [z.infer<typeof routeTarget>, FieldPath] => [
        t,
        ['spec', 'alternateBackends', i],
      ]),
    ];
    for (const [to, at] of targets) {
      if ((to.kind ?? 'Service') !== 'Service') {
        ctx.report(
          'INGRESS_BACKEND_NOT_ANALYSED',
          `a Route to a ${to.kind} is not to a Service: Palisade does not follow it`,
          [...at, 'kind'],
        );
        continue;
      }
      backends.push({
        service: to.name,
        ...(port ? { port } : {}),
        location: ctx.raw.locator.valueAt([...ctx.raw.basePath, ...at]),
      });
    }
    if (ctx.failed) return undefined;
    const location = ctx.raw.locator.valueAt(ctx.raw.basePath);
    return { kind: 'Ingress', ingress: { kind: 'Route', namespace, name, backends, location } };
  });
}
