/**
 * What can still be read of a network policy dropped as invalid: its name, the pods it selects and
 * the directions it would isolate. `check` and `explain` say so when such a policy would have
 * selected the endpoint they answer for (issue 19 §1.5): the verdict ignores it — the API server
 * would have refused it — but a user who wrote it expects it to apply. Namespaced policies
 * (Kubernetes', Calico's, Cilium's) by their pod selector; cluster-scoped ones (Calico's
 * GlobalNetworkPolicy, Cilium's clusterwide policy, AdminNetworkPolicy and its kin) by their
 * subjects, namespaces and pods.
 */
import type { LabelSelector } from '../model/selector.ts';
import type {
  ClusterPolicyKind,
  ClusterSubject,
  RejectedClusterPolicy,
  RejectedNamespacedPolicy,
  RejectedPolicy,
} from '../model/types.ts';
import { DecodeContext } from './decode-context.ts';
import { decodeSelector } from './decode-labels.ts';
import { labelSelectorSchema } from './schemas.ts';
import { bothConjunctions, conjunctionSelectors, readCalicoSelector } from './calico-selectors.ts';
import { readCiliumSelector } from './cilium-selectors.ts';
import { calicoSubjects } from './decode-calico.ts';
import type { FieldPath } from './types.ts';

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The rejected policy as far as the raw object says, read leniently (its problems were already
 * reported); undefined when it has no usable name. A Kubernetes, Calico or Cilium
 * NetworkPolicy, each read with its own selector and directions.
 */
export function rejectedPolicy(ctx: DecodeContext): RejectedPolicy | undefined {
  const value = ctx.raw.value;
  if (!isRecord(value)) return undefined;
  const metadata = isRecord(value.metadata) ? value.metadata : {};
  if (typeof metadata.name !== 'string' || metadata.name === '') return undefined;
  const spec = isRecord(value.spec) ? value.spec : {};
  const error = ctx.diagnostics.find((d) => d.severity === 'error');
  const common = {
    name: metadata.name,
    problem: error ? `${error.path ? `${error.path}: ` : ''}${error.message}` : 'invalid',
    // Where the problem is (the diagnostic's place), else where the object starts.
    location: error
      ? { file: error.file, line: error.line, column: error.column }
      : ctx.raw.locator.valueAt(ctx.raw.basePath),
  };
  const clusterKind = typeof value.kind === 'string' ? CLUSTER_KINDS[value.kind] : undefined;
  if (clusterKind) return { scope: 'cluster', ...common, ...clusterSelected(ctx, clusterKind, spec) };
  const engine =
    value.kind === 'CiliumNetworkPolicy'
      ? 'cilium'
      : typeof value.apiVersion === 'string' && value.apiVersion.includes('projectcalico.org/')
        ? 'calico'
        : undefined;
  const selected =
    engine === 'cilium'
      ? ciliumSelected(ctx)
      : engine === 'calico'
        ? calicoSelected(ctx, spec)
        : kubeSelected(ctx, spec);
  return {
    scope: 'namespace',
    namespace: typeof metadata.namespace === 'string' ? metadata.namespace : ctx.defaultNamespace,
    ...common,
    ...(engine ? { engine } : {}),
    ...selected,
  };
}

/** What a namespaced policy selects, and its directions. */
type PodsSelected = Pick<
  RejectedNamespacedPolicy,
  'podSelector' | 'anyOf' | 'affectsIngress' | 'affectsEgress'
>;
/** The directions a policy would have isolated. */
type Directions = Pick<RejectedPolicy, 'affectsIngress' | 'affectsEgress'>;
/** What a cluster-scoped policy selects, and its directions. */
type SubjectsSelected = Pick<
  RejectedClusterPolicy,
  'clusterKind' | 'subjects' | 'affectsIngress' | 'affectsEgress'
>;

/** The cluster-scoped kinds, by the manifest's kind (the decoder checked each one's group). */
const CLUSTER_KINDS: Partial<Record<string, ClusterPolicyKind>> = {
  GlobalNetworkPolicy: 'CalicoGlobalNetworkPolicy',
  CiliumClusterwideNetworkPolicy: 'CiliumClusterwideNetworkPolicy',
  AdminNetworkPolicy: 'AdminNetworkPolicy',
  BaselineAdminNetworkPolicy: 'BaselineAdminNetworkPolicy',
  ClusterNetworkPolicy: 'ClusterNetworkPolicy',
};

/**
 * A cluster-scoped policy: its subjects (undefined when they cannot be read) and directions, each
 * kind as its own decoder reads them.
 */
function clusterSelected(
  ctx: DecodeContext,
  clusterKind: ClusterPolicyKind,
  spec: Record<string, unknown>,
): SubjectsSelected {
  if (clusterKind === 'CalicoGlobalNetworkPolicy') {
    return { clusterKind, subjects: calicoGlobalSubjects(ctx, spec), ...calicoDirections(spec) };
  }
  if (clusterKind === 'CiliumClusterwideNetworkPolicy') {
    return { clusterKind, subjects: ciliumClusterSubjects(ctx), ...ciliumDirections(ctx) };
  }
  // AdminNetworkPolicy and its kin: a rule list is a direction.
  return {
    clusterKind,
    subjects: adminSubjects(ctx, spec.subject),
    affectsIngress: listed(spec.ingress),
    affectsEgress: listed(spec.egress),
  };
}

/** A GlobalNetworkPolicy's `selector`, `namespaceSelector` and `serviceAccountSelector` together. */
function calicoGlobalSubjects(
  ctx: DecodeContext,
  spec: Record<string, unknown>,
): ClusterSubject[] | undefined {
  // Host endpoints only (the decoder leaves such a policy out): it selects no pod.
  if (spec.doNotTrack === true || spec.preDNAT === true) return [];
  const scratch = new DecodeContext(ctx.raw, ctx.objectName, ctx.defaultNamespace);
  const selector = readSelectorField(scratch, spec, 'selector', 'endpoint');
  const namespaces = readSelectorField(scratch, spec, 'namespaceSelector', 'namespace');
  const accounts = readSelectorField(scratch, spec, 'serviceAccountSelector', 'serviceAccount');
  if (!selector || !namespaces || !accounts) return undefined;
  const subjects = calicoSubjects(scratch, [selector, namespaces, accounts]);
  return subjects && [subjects.subject, ...(subjects.moreSubjects ?? [])];
}

/** Each of a clusterwide policy's `spec` and `specs`: its `endpointSelector`'s namespaces and pods. */
function ciliumClusterSubjects(ctx: DecodeContext): ClusterSubject[] | undefined {
  const subjects: ClusterSubject[] = [];
  for (const { rule, path } of ciliumSpecs(ctx)) {
    // A host policy (`nodeSelector`) selects nodes, no pod; one with neither selector is unknown.
    if (rule.nodeSelector != null) continue;
    if (rule.endpointSelector == null) return undefined;
    const scratch = new DecodeContext(ctx.raw, ctx.objectName, ctx.defaultNamespace);
    const parsed = labelSelectorSchema.safeParse(rule.endpointSelector);
    const selector = parsed.success
      ? readCiliumSelector(scratch, parsed.data, [...path, 'endpointSelector'], { clusterwide: true })
      : undefined;
    if (!selector || scratch.failed) return undefined;
    // One naming reserved entities (the host) selects no pod.
    if (selector.entities.length === 0)
      subjects.push({
        namespaceSelector: selector.namespace,
        ...(selector.pod.key !== '' ? { podSelector: selector.pod } : {}),
      });
  }
  return subjects;
}

/** An AdminNetworkPolicy's `subject`: exactly one of `namespaces` and `pods`. */
function adminSubjects(ctx: DecodeContext, raw: unknown): ClusterSubject[] | undefined {
  if (!isRecord(raw) || (raw.namespaces == null) === (raw.pods == null)) return undefined;
  const at: FieldPath = ['spec', 'subject'];
  if (raw.namespaces != null) {
    const namespaceSelector = lenientSelector(ctx, raw.namespaces, [...at, 'namespaces']);
    return namespaceSelector && [{ namespaceSelector }];
  }
  const pods = isRecord(raw.pods) ? raw.pods : {};
  const namespaceSelector = lenientSelector(ctx, pods.namespaceSelector, [
    ...at,
    'pods',
    'namespaceSelector',
  ]);
  const podSelector = lenientSelector(ctx, pods.podSelector, [...at, 'pods', 'podSelector']);
  return namespaceSelector && podSelector ? [{ namespaceSelector, podSelector }] : undefined;
}

/** A list that is there and holds something. */
const listed = (value: unknown): boolean => Array.isArray(value) && value.length > 0;

/** Kubernetes: `podSelector`, and `policyTypes` or their default (Ingress, Egress with egress rules). */
function kubeSelected(ctx: DecodeContext, spec: Record<string, unknown>): PodsSelected {
  const types = Array.isArray(spec.policyTypes) ? spec.policyTypes : undefined;
  return {
    podSelector: lenientSelector(ctx, spec.podSelector),
    affectsIngress: types ? types.includes('Ingress') : true,
    affectsEgress: types ? types.includes('Egress') : listed(spec.egress),
  };
}

/**
 * Calico: `selector` and `serviceAccountSelector` (absent: `all()`; alternatives with `||` as
 * `anyOf`; one with namespace terms might select more than a pod selector says, so it counts as
 * unknown) and `types`, or their default.
 */
function calicoSelected(ctx: DecodeContext, spec: Record<string, unknown>): PodsSelected {
  const scratch = new DecodeContext(ctx.raw, ctx.objectName, ctx.defaultNamespace);
  const pods = readSelectorField(scratch, spec, 'selector', 'endpoint');
  // Service accounts are pod labels here (`placeAtoms`): both selectors together, as the decoder
  // reads them.
  const accounts = readSelectorField(scratch, spec, 'serviceAccountSelector', 'serviceAccount');
  const alternatives = pods && accounts ? bothConjunctions(pods, accounts) : undefined;
  const podsOnly = alternatives?.every((a) => a.namespace.length === 0) ?? false;
  const selectors = podsOnly ? (alternatives ?? []).map((a) => conjunctionSelectors(a).podSelector) : [];
  return {
    podSelector: selectors.length === 1 ? selectors[0] : undefined,
    ...(selectors.length > 1 ? { anyOf: selectors } : {}),
    ...calicoDirections(spec),
  };
}

/**
 * A Calico selector field's alternatives: `all()` when absent; undefined when it does not parse
 * or is no string (it cannot be read as `all()`).
 */
function readSelectorField(
  scratch: DecodeContext,
  spec: Record<string, unknown>,
  field: 'selector' | 'namespaceSelector' | 'serviceAccountSelector',
  scope: Parameters<typeof readCalicoSelector>[3],
): ReturnType<typeof readCalicoSelector> {
  const value = spec[field];
  if (value != null && typeof value !== 'string') return undefined;
  return readCalicoSelector(scratch, value, ['spec', field], scope);
}

/** Calico's `types`, or their default: Ingress with ingress rules or no egress ones, Egress with egress rules. */
function calicoDirections(spec: Record<string, unknown>): Directions {
  const types = Array.isArray(spec.types) ? spec.types : undefined;
  return {
    affectsIngress: types ? types.includes('Ingress') : listed(spec.ingress) || !listed(spec.egress),
    affectsEgress: types ? types.includes('Egress') : listed(spec.egress),
  };
}

/**
 * Cilium: each of `spec` and `specs` — its `endpointSelector`'s pod labels (one selector for them
 * all, else unknown), and the directions it has rules for or a default deny in.
 */
function ciliumSelected(ctx: DecodeContext): PodsSelected {
  const specs = ciliumSpecs(ctx);
  const selectors = specs.map(({ rule, path }) => {
    const scratch = new DecodeContext(ctx.raw, ctx.objectName, ctx.defaultNamespace);
    const parsed = labelSelectorSchema.nullish().safeParse(rule.endpointSelector);
    const selector = parsed.success
      ? readCiliumSelector(scratch, parsed.data, [...path, 'endpointSelector'], { clusterwide: false })
      : undefined;
    const podOnly = selector && !scratch.failed && selector.entities.length === 0 && !selector.scoped;
    return podOnly ? selector.pod : undefined;
  });
  const [first] = selectors;
  const one = first !== undefined && selectors.every((s) => s?.key === first.key);
  return { podSelector: one ? first : undefined, ...ciliumDirections(ctx) };
}

/** Cilium: the directions any of its rules has rules for, or a default deny in. */
function ciliumDirections(ctx: DecodeContext): Directions {
  const specs = ciliumSpecs(ctx);
  const defaultDeny = (rule: Record<string, unknown>, direction: string): boolean =>
    isRecord(rule.enableDefaultDeny) && rule.enableDefaultDeny[direction] === true;
  return {
    affectsIngress: specs.some(
      ({ rule }) => listed(rule.ingress) || listed(rule.ingressDeny) || defaultDeny(rule, 'ingress'),
    ),
    affectsEgress: specs.some(
      ({ rule }) => listed(rule.egress) || listed(rule.egressDeny) || defaultDeny(rule, 'egress'),
    ),
  };
}

/** A Cilium policy's rules: its `spec` and each of its `specs`, with where each is. */
function ciliumSpecs(ctx: DecodeContext): { rule: Record<string, unknown>; path: FieldPath }[] {
  const value = ctx.raw.value as Record<string, unknown>;
  return [
    ...(isRecord(value.spec) ? [{ rule: value.spec, path: ['spec'] }] : []),
    ...(Array.isArray(value.specs) ? value.specs : []).flatMap((rule: unknown, i) =>
      isRecord(rule) ? [{ rule, path: ['specs', i] }] : [],
    ),
  ];
}

/** A label selector when it is valid on its own (absent means all); otherwise undefined. */
function lenientSelector(
  ctx: DecodeContext,
  raw: unknown,
  path: FieldPath = ['spec', 'podSelector'],
): LabelSelector | undefined {
  const parsed = labelSelectorSchema.nullish().safeParse(raw);
  if (!parsed.success) return undefined;
  // A scratch context: the selector's problems, if any, were reported with the policy's.
  const scratch = new DecodeContext(ctx.raw, ctx.objectName, ctx.defaultNamespace);
  const selector = decodeSelector(scratch, parsed.data, path);
  return scratch.failed ? undefined : selector;
}
