/**
 * Services: what `check --to ns/name[Service]`, `matrix --by service` and lint read — the
 * selector (its backends are the pods it matches in its namespace) and each port's number,
 * protocol, name and target port (a number, or a container port's name resolved per backend).
 * Every other field (type, clusterIP, session affinity, …) is the Service's business, not
 * policy's: read as given, never warned about.
 */
import * as z from 'zod';
import type { Service, ServicePort } from '../model/types.ts';
import type { DecodeContext } from './decode-context.ts';
import { decodeLabels } from './decode-labels.ts';
import { decodeMetadataName } from './decode-metadata.ts';
import { metadataSchema } from './schemas.ts';
import { decodeReportingAll } from './prune-mistyped.ts';
import { portNameProblem } from './validate-names.ts';
import type { DecodedObject } from './types.ts';

const portSchema = z.looseObject({
  name: z.string().nullish(),
  protocol: z.string().nullish(),
  port: z.number(),
  targetPort: z.union([z.number(), z.string()]).nullish(),
});

const serviceSchema = z.looseObject({
  metadata: metadataSchema,
  spec: z
    .looseObject({
      selector: z.record(z.string(), z.string()).nullish(),
      ports: z.array(portSchema).nullish(),
    })
    .nullish(),
});

const READING = {
  schema: serviceSchema,
  knownFields: ['selector', 'ports', 'name', 'protocol', 'port', 'targetPort'],
};

export function decodeService(ctx: DecodeContext): DecodedObject | undefined {
  return decodeReportingAll(ctx, ctx.raw.value, READING, (raw) => {
    const { name, namespace } = decodeMetadataName(ctx, raw.metadata, true);
    const selector =
      raw.spec?.selector !== undefined && raw.spec.selector !== null
        ? decodeLabels(ctx, raw.spec.selector, ['spec', 'selector'])
        : undefined;
    const ports: ServicePort[] = [];
    (raw.spec?.ports ?? []).forEach((port, i) => {
      const at = ['spec', 'ports', i];
      const protocol = port.protocol ?? 'TCP';
      if (protocol !== 'TCP' && protocol !== 'UDP' && protocol !== 'SCTP') {
        ctx.report('PROTOCOL_INVALID', `protocol "${protocol}" is not TCP, UDP or SCTP`, [...at, 'protocol']);
        return;
      }
      if (!Number.isInteger(port.port) || port.port < 1 || port.port > 65535) {
        ctx.report('PORT_OUT_OF_RANGE', `port ${port.port} is not a port number (1-65535)`, [...at, 'port']);
        return;
      }
      const target = port.targetPort ?? port.port;
      if (typeof target === 'number' && (!Number.isInteger(target) || target < 1 || target > 65535)) {
        ctx.report('PORT_OUT_OF_RANGE', `targetPort ${target} is not a port number (1-65535)`, [
          ...at,
          'targetPort',
        ]);
        return;
      }
      if (typeof target === 'string') {
        const problem = portNameProblem(target);
        if (problem) {
          ctx.report('PORT_NAME_INVALID', `targetPort "${target}" ${problem}`, [...at, 'targetPort']);
          return;
        }
      }
      ports.push({
        ...(port.name ? { name: port.name } : {}),
        protocol,
        port: port.port,
        targetPort: target,
      });
    });
    if (ctx.failed) return undefined;
    const service: Service = {
      namespace,
      name,
      ...(selector && Object.keys(selector).length > 0 ? { selector } : {}),
      ports,
      location: ctx.raw.locator.valueAt(ctx.raw.basePath),
    };
    return { kind: 'Service', service };
  });
}
