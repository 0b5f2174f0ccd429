/**
 * Pods and workload pod templates become endpoints: labels, namespace, named container ports
 * and, for pods, their addresses. Pods that have finished (Succeeded/Failed) hold no address
 * and take no traffic, so they are left out.
 */
import { formatIp, parseIp, type IpAddress } from '../net/ip.ts';
import type { ContainerPort, Endpoint, WorkloadKind, WorkloadRef } from '../model/types.ts';
import type { DecodeContext } from './decode-context.ts';
import { decodeLabels } from './decode-labels.ts';
import { decodeMetadataName, metadataIdentity } from './decode-metadata.ts';
import { checkPortNumber, decodeProtocol } from './decode-policy.ts';
import {
  cronJobSchema,
  podSchema,
  workloadSchema,
  type RawMetadata,
  type RawOwnerReference,
  type RawPodSpec,
  type RawPodTemplate,
} from './schemas.ts';
import type { DecodedObject, FieldPath } from './types.ts';
import { dnsSubdomainProblem, portNameProblem } from './validate-names.ts';
import { exactArray } from '../util/exact-array.ts';
import { decodeReportingAll } from './prune-mistyped.ts';
import { plainPod } from './decode-shapes.ts';
import type { z } from 'zod';

type EndpointDecode = DecodedObject | 'skipped' | undefined;
const POD_READING = { schema: podSchema };
const WORKLOAD_READING = { schema: workloadSchema };
const CRON_JOB_READING = { schema: cronJobSchema };

export function decodePod(ctx: DecodeContext): EndpointDecode {
  // A well-formed pod is read as it is: the schema would give back an equal copy.
  const plain = plainPod(ctx.raw.value);
  if (plain) return decodeParsedPod(ctx, plain);
  return decodeReportingAll(ctx, ctx.raw.value, POD_READING, (raw) => decodeParsedPod(ctx, raw));
}

function decodeParsedPod(ctx: DecodeContext, raw: z.output<typeof podSchema>): EndpointDecode {
  const { name, namespace } = decodeMetadataName(ctx, raw.metadata, true);
  const phase = raw.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') {
    ctx.report('POD_NOT_RUNNING', `pod ${namespace}/${name} is in phase ${phase} and was left out`, [
      'status',
      'phase',
    ]);
    return 'skipped';
  }
  const labels = decodeLabels(ctx, raw.metadata.labels, ['metadata', 'labels']);
  const ports = decodeContainerPorts(ctx, raw.spec, ['spec']);
  const status = raw.status ?? {};
  const podIpTexts = status.podIPs?.length
    ? status.podIPs.map((e) => e.ip)
    : status.podIP
      ? [status.podIP]
      : [];
  const hostIpTexts = status.hostIPs?.length
    ? status.hostIPs.map((e) => e.ip)
    : status.hostIP
      ? [status.hostIP]
      : [];
  const podIps = decodeIps(
    ctx,
    podIpTexts,
    status.podIPs?.length ? ['status', 'podIPs'] : ['status', 'podIP'],
  );
  const hostIps = decodeIps(
    ctx,
    hostIpTexts,
    status.hostIPs?.length ? ['status', 'hostIPs'] : ['status', 'hostIP'],
  );
  const hostNetwork = raw.spec?.hostNetwork === true;
  const nodeName = raw.spec?.nodeName;
  if (nodeName) {
    const problem = dnsSubdomainProblem(nodeName);
    if (problem)
      ctx.report('NAME_INVALID', `node name "${nodeName}" is invalid: ${problem}`, ['spec', 'nodeName']);
  }
  if (ctx.failed) return undefined;
  const endpoint: Omit<Endpoint, 'id'> = {
    kind: 'Pod',
    namespace,
    name,
    labels,
    // A hostNetwork pod is reached at its node's address.
    ips: hostNetwork && podIps.length === 0 ? hostIps : podIps,
    ports,
    hostNetwork,
    ...(raw.spec?.nodeName ? { node: raw.spec.nodeName } : {}),
    ...serviceAccountOf(raw.spec),
    ...podUid(raw.metadata),
    location: ctx.raw.locator.valueAt(ctx.raw.basePath),
  };
  const owner = controllerOf(raw.metadata.ownerReferences);
  return owner
    ? { kind: 'Endpoint', endpoint, hostIps: hostIps.map(formatIp), owner }
    : { kind: 'Endpoint', endpoint, hostIps: hostIps.map(formatIp) };
}

/**
 * The pod's service account when the spec names one (`serviceAccountName`, or its old alias);
 * none given means Kubernetes' `default`, which the model leaves implicit.
 */
function serviceAccountOf(spec: RawPodSpec | null | undefined): { serviceAccount?: string } {
  const name = spec?.serviceAccountName ?? spec?.serviceAccount;
  return name && name !== 'default' ? { serviceAccount: name } : {};
}

export function decodeWorkload(ctx: DecodeContext, kind: WorkloadKind): EndpointDecode {
  // The pod template: `spec.template`, or `spec.jobTemplate.spec.template` for a CronJob.
  if (kind === 'CronJob') {
    return decodeReportingAll(ctx, ctx.raw.value, CRON_JOB_READING, (raw) =>
      decodeTemplate(ctx, kind, raw.metadata, raw.spec?.jobTemplate?.spec?.template, [
        'spec',
        'jobTemplate',
        'spec',
        'template',
      ]),
    );
  }
  return decodeReportingAll(ctx, ctx.raw.value, WORKLOAD_READING, (raw) =>
    decodeTemplate(ctx, kind, raw.metadata, raw.spec?.template, ['spec', 'template']),
  );
}

function decodeTemplate(
  ctx: DecodeContext,
  kind: WorkloadKind,
  metadata: RawMetadata,
  template: RawPodTemplate | null | undefined,
  templatePath: FieldPath,
): EndpointDecode {
  const { name, namespace } = decodeMetadataName(ctx, metadata, true);
  const labels = decodeLabels(ctx, template?.metadata?.labels, [...templatePath, 'metadata', 'labels']);
  const ports = decodeContainerPorts(ctx, template?.spec, [...templatePath, 'spec']);
  if (ctx.failed) return undefined;
  const endpoint: Omit<Endpoint, 'id'> = {
    kind,
    namespace,
    name,
    labels,
    ips: [],
    ports,
    hostNetwork: template?.spec?.hostNetwork === true,
    workload: { kind, name },
    ...serviceAccountOf(template?.spec),
    location: ctx.raw.locator.valueAt(ctx.raw.basePath),
  };
  const owner = controllerOf(metadata.ownerReferences);
  return owner
    ? { kind: 'Endpoint', endpoint, hostIps: [], owner }
    : { kind: 'Endpoint', endpoint, hostIps: [] };
}

/**
 * The owner reference that manages the object: the one marked `controller: true`, or a lone
 * reference that does not say (hand-written manifests). A Node owns static pods' mirrors, which
 * belong to no workload; a reference without kind or name cannot be followed.
 */
export function controllerOf(
  references: readonly Pick<RawOwnerReference, 'kind' | 'name' | 'controller'>[] | null | undefined,
): WorkloadRef | undefined {
  if (!references?.length) return undefined;
  const controller =
    references.find((r) => r.controller === true) ??
    (references.length === 1 && references[0]?.controller == null ? references[0] : undefined);
  if (!controller?.kind || !controller.name || controller.kind === 'Node') return undefined;
  return { kind: controller.kind, name: controller.name };
}

function decodeContainerPorts(
  ctx: DecodeContext,
  spec: RawPodSpec | null | undefined,
  path: FieldPath,
): ContainerPort[] {
  const ports: ContainerPort[] = [];
  const groups: [string, RawPodSpec['containers']][] = [
    ['containers', spec?.containers],
    // Sidecars (init containers that keep running) serve ports too.
    ['initContainers', spec?.initContainers?.filter((c) => c.restartPolicy === 'Always')],
  ];
  for (const [field, containers] of groups) {
    (containers ?? []).forEach((container, c) => {
      (container.ports ?? []).forEach((port, p) => {
        const at = [...path, field, c, 'ports', p];
        checkPortNumber(ctx, port.containerPort, [...at, 'containerPort']);
        const protocol = decodeProtocol(ctx, port.protocol, [...at, 'protocol']);
        if (port.name) {
          const problem = portNameProblem(port.name);
          if (problem)
            ctx.report('PORT_NAME_INVALID', `port name "${port.name}" is invalid: ${problem}`, [
              ...at,
              'name',
            ]);
        }
        if (protocol)
          // Two literal shapes, not a spread: a spread gives every port object its own hidden
          // class, and the compiler reads these ports for every candidate pod of every group.
          ports.push(
            port.name
              ? { name: port.name, port: port.containerPort, protocol }
              : { port: port.containerPort, protocol },
          );
      });
    });
  }
  return exactArray(ports);
}

function decodeIps(ctx: DecodeContext, texts: readonly string[], path: FieldPath): IpAddress[] {
  const result: IpAddress[] = [];
  texts.forEach((text, index) => {
    const parsed = parseIp(text);
    const at =
      path[path.length - 1] === 'podIPs' || path[path.length - 1] === 'hostIPs'
        ? [...path, index, 'ip']
        : path;
    if (!parsed.ok) {
      ctx.report('IP_INVALID', parsed.problems.map((p) => p.message).join('; '), at);
      return;
    }
    if (!result.some((ip) => ip.family === parsed.value.family && ip.value === parsed.value.value))
      result.push(parsed.value);
  });
  return exactArray(result);
}

/** A pod's `metadata.uid` (its generation, which moves with its spec, is not kept). */
function podUid(metadata: object): { uid?: string } {
  const { uid } = metadataIdentity(metadata);
  return uid !== undefined ? { uid } : {};
}
