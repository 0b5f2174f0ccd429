/**
 * Dispatches a raw object to the decoder for its kind. Kinds Palisade does not analyse are
 * skipped with an info diagnostic, never an error: real manifest trees are full of Services,
 * ConfigMaps and CRDs.
 */
import { makeDiagnostic, type Diagnostic } from '../model/diagnostics.ts';
import { WORKLOAD_KINDS, type RejectedPolicy, type WorkloadKind } from '../model/types.ts';
import { DecodeContext, reportUnknownMetadata } from './decode-context.ts';
import { decodePod, decodeWorkload } from './decode-endpoint.ts';
import { decodeNamespace } from './decode-namespace.ts';
import { decodeNetworkPolicy } from './decode-policy.ts';
import { rejectedPolicy } from './rejected-policy.ts';
import { CLUSTER_SCOPED, objectIdentity } from './object-identity.ts';
import { decodeClusterPolicy } from './decode-cluster-policy.ts';
import { decodeNode } from './decode-node.ts';
import { CALICO_API_VERSIONS, decodeCalico } from './decode-calico.ts';
import { decodeCilium } from './decode-cilium.ts';
import { policyFacts } from '../model/cluster-policy-facts.ts';
import { decodeServiceAccount } from './decode-service-account.ts';
import { decodeService } from './decode-service.ts';
import { decodeIngress, decodeRoute, INGRESS_API_VERSIONS, ROUTE_API_VERSIONS } from './decode-ingress.ts';
import { otherEnginePolicy } from './other-engines.ts';
import { STAGEABLE_KINDS, withStagedMark } from './decode-staged.ts';
import type { DecodedObject, RawObject } from './types.ts';

/** apiVersions under which each workload kind has been served. */
const WORKLOAD_API_VERSIONS: Record<WorkloadKind, readonly string[]> = {
  Deployment: ['apps/v1', 'apps/v1beta1', 'apps/v1beta2', 'extensions/v1beta1'],
  StatefulSet: ['apps/v1', 'apps/v1beta1', 'apps/v1beta2'],
  DaemonSet: ['apps/v1', 'apps/v1beta2', 'extensions/v1beta1'],
  ReplicaSet: ['apps/v1', 'apps/v1beta2', 'extensions/v1beta1'],
  ReplicationController: ['v1'],
  Job: ['batch/v1'],
  CronJob: ['batch/v1', 'batch/v1beta1', 'batch/v2alpha1'],
};

const isCalico = (apiVersion: string): boolean =>
  (CALICO_API_VERSIONS as readonly string[]).includes(apiVersion);

export interface DecodeOutcome {
  readonly object?: DecodedObject;
  /** `Kind ns/name`, for duplicate detection. Absent when the object could not be identified. */
  readonly identity?: string;
  readonly diagnostics: readonly Diagnostic[];
  /** A network policy dropped as invalid, as far as it can be read (for check and explain). */
  readonly rejected?: RejectedPolicy;
}

/** How objects are read: the namespace of those that name none (default `default`). */
export interface DecodeOptions {
  readonly defaultNamespace?: string;
}

export function decodeObject(raw: RawObject, options: DecodeOptions = {}): DecodeOutcome {
  const defaultNamespace = options.defaultNamespace ?? 'default';
  const value = raw.value as Record<string, unknown>;
  const { kind, apiVersion } = value;
  const metadata = (value.metadata ?? {}) as Record<string, unknown>;
  const name = typeof metadata.name === 'string' ? metadata.name : '?';
  const namespace = typeof metadata.namespace === 'string' ? metadata.namespace : undefined;
  // Calico's NetworkPolicy is another object than Kubernetes' of the same name: its diagnostics
  // say so, as lint, diff and the page's links name it.
  const calico = typeof apiVersion === 'string' && isCalico(apiVersion);
  const kindName = typeof kind === 'string' ? (calico ? `${kind}.projectcalico.org` : kind) : 'object';
  const objectName = `${kindName} ${typeof kind === 'string' && CLUSTER_SCOPED.has(kind) ? '' : `${namespace ?? defaultNamespace}/`}${name}`;
  const ctx = new DecodeContext(raw, objectName, defaultNamespace);
  if (typeof kind !== 'string' || typeof apiVersion !== 'string') {
    for (const field of ['apiVersion', 'kind'] as const) {
      if (typeof value[field] !== 'string') {
        ctx.report(
          value[field] === undefined ? 'SCHEMA_REQUIRED' : 'SCHEMA_TYPE',
          `every object needs a string "${field}"`,
          [field],
          value[field] === undefined,
        );
      }
    }
    return { diagnostics: ctx.diagnostics };
  }
  const identity = objectName;
  // Another engine's kind of a name Palisade reads (Antrea's NetworkPolicy) is that engine's.
  const known = otherEnginePolicy(apiVersion, kind, true)
    ? 'unknown-kind'
    : decodeKnownKind(ctx, kind, apiVersion);
  const decoded =
    known && known !== 'unknown-kind' && STAGEABLE_KINDS.has(kind) && !isCalico(apiVersion)
      ? withStagedMark(ctx, value.metadata, known)
      : known;
  const unknownMetadata = decoded !== 'unknown-kind' && reportMetadataFields(ctx, kind);
  if (decoded === 'unknown-kind') {
    const where = raw.locator.valueAt(raw.basePath);
    const engine = otherEnginePolicy(apiVersion, kind);
    // Named as objectIdentity names it (`NetworkPolicy.crd.antrea.io`, as diff names Calico's):
    // Antrea's NetworkPolicy must not read as a Kubernetes one in the answers' note.
    if (engine)
      return {
        diagnostics: [
          makeDiagnostic(
            'POLICY_KIND_NOT_EVALUATED',
            `${apiVersion} ${kind} is ${engine}; Palisade does not evaluate it, so answers do not include it`,
            { ...where, object: objectIdentity(value) ?? objectName },
          ),
        ],
      };
    const diagnostic = makeDiagnostic('KIND_SKIPPED', `${apiVersion} ${kind} is not analysed; skipped`, {
      ...where,
      object: objectName,
    });
    return { diagnostics: [diagnostic] };
  }
  // Two literals rather than a spread, which builds each result the slow way.
  if (decoded && !unknownMetadata) return { object: decoded, identity, diagnostics: ctx.diagnostics };
  const rejected = POLICY_KINDS.has(kind) && ctx.failed ? rejectedPolicy(ctx) : undefined;
  return rejected
    ? { identity, diagnostics: ctx.diagnostics, rejected }
    : { identity, diagnostics: ctx.diagnostics };
}

/** The kinds whose invalid objects are kept as rejected policies (rejected-policy.ts). */
const POLICY_KINDS = new Set([
  'NetworkPolicy',
  'CiliumNetworkPolicy',
  'GlobalNetworkPolicy',
  'CiliumClusterwideNetworkPolicy',
  'AdminNetworkPolicy',
  'BaselineAdminNetworkPolicy',
  'ClusterNetworkPolicy',
]);

function decodeKnownKind(
  ctx: DecodeContext,
  kind: string,
  apiVersion: string,
): DecodedObject | undefined | 'unknown-kind' {
  switch (kind) {
    case 'Namespace':
    case 'Pod': {
      if (apiVersion !== 'v1') return unknownVersion(ctx, kind, apiVersion, ['v1']);
      if (kind === 'Pod') {
        const pod = decodePod(ctx);
        return pod === 'skipped' ? undefined : pod;
      }
      const namespace = decodeNamespace(ctx);
      return namespace ? { kind: 'Namespace', namespace } : undefined;
    }
    case 'NetworkPolicy': {
      if (isCalico(apiVersion)) return withFacts(decodeCalico(ctx, kind, apiVersion));
      const policy = decodeNetworkPolicy(ctx);
      return policy ? { kind: 'NetworkPolicy', policy } : undefined;
    }
    case 'GlobalNetworkPolicy':
    case 'Tier':
    case 'Profile':
      if (!isCalico(apiVersion)) break;
      return withFacts(decodeCalico(ctx, kind, apiVersion));
    case 'CiliumNetworkPolicy':
    case 'CiliumClusterwideNetworkPolicy': {
      const policies = decodeCilium(ctx, kind, apiVersion);
      return policies ? withFacts({ kind: 'ClusterPolicies', policies }) : undefined;
    }
    case 'ServiceAccount': {
      if (apiVersion !== 'v1') return unknownVersion(ctx, kind, apiVersion, ['v1']);
      return decodeServiceAccount(ctx);
    }
    case 'Service': {
      if (apiVersion !== 'v1') return unknownVersion(ctx, kind, apiVersion, ['v1']);
      return decodeService(ctx);
    }
    case 'Ingress': {
      // The beta versions (served until Kubernetes 1.22) are skipped with an info, as before.
      if (!INGRESS_API_VERSIONS.includes(apiVersion)) return 'unknown-kind';
      return decodeIngress(ctx);
    }
    case 'Route': {
      // Only OpenShift's: another group's Route (none is served today) is another kind.
      if (!ROUTE_API_VERSIONS.includes(apiVersion)) return 'unknown-kind';
      return decodeRoute(ctx);
    }
    case 'AdminNetworkPolicy':
    case 'BaselineAdminNetworkPolicy':
    case 'ClusterNetworkPolicy': {
      const policy = decodeClusterPolicy(ctx, kind, apiVersion);
      return policy ? withFacts({ kind: 'ClusterPolicy', policy }) : undefined;
    }
    case 'Node': {
      if (apiVersion !== 'v1') return unknownVersion(ctx, kind, apiVersion, ['v1']);
      const node = decodeNode(ctx);
      return node ? { kind: 'Node', node } : undefined;
    }
  }
  const workload = WORKLOAD_KINDS.find((k) => k === kind);
  if (!workload) return 'unknown-kind';
  const versions = WORKLOAD_API_VERSIONS[workload];
  if (!versions.includes(apiVersion)) return unknownVersion(ctx, kind, apiVersion, versions);
  const result = decodeWorkload(ctx, workload);
  return result === 'skipped' ? undefined : result;
}

/** Unknown fields in the object's metadata and in its pod template's; true when there were some. */
function reportMetadataFields(ctx: DecodeContext, kind: string): boolean {
  const paths: (readonly string[])[] = [['metadata']];
  if (kind === 'CronJob') paths.push(['spec', 'jobTemplate', 'spec', 'template', 'metadata']);
  else if (WORKLOAD_KINDS.some((k) => k === kind)) paths.push(['spec', 'template', 'metadata']);
  let found = false;
  for (const path of paths) found = reportUnknownMetadata(ctx, path) || found;
  return found;
}

function unknownVersion(
  ctx: DecodeContext,
  kind: string,
  apiVersion: string,
  known: readonly string[],
): undefined {
  ctx.report('API_VERSION_UNKNOWN', `${kind} apiVersion "${apiVersion}" is not one of ${known.join(', ')}`, [
    'apiVersion',
  ]);
  return undefined;
}

/**
 * A decoded cluster policy with its facts read (model/cluster-policy-facts.ts): now, while its
 * objects are in the cache, rather than first thing in the compile, where reading them cost three
 * times the work.
 */
function withFacts<T extends DecodedObject | undefined>(decoded: T): T {
  if (decoded?.kind === 'ClusterPolicy') policyFacts(decoded.policy);
  else if (decoded?.kind === 'ClusterPolicies') for (const policy of decoded.policies) policyFacts(policy);
  return decoded;
}
