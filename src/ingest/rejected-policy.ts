/**
 * What can still be read of a NetworkPolicy dropped as invalid: its name, the pods it selects and
 * the directions it would isolate. `check` and `explain` say so when such a policy would have
 * selected the endpoint they answer for (issue 19 §1.5): the verdict ignores it — the API server
 * would have refused it — but a user who wrote it expects it to apply.
 */
import type { RejectedPolicy } from '../model/types.ts';
import { DecodeContext } from './decode-context.ts';
import { decodeSelector } from './decode-labels.ts';
import { labelSelectorSchema } from './schemas.ts';
import { conjunctionSelectors, readCalicoSelector } from './calico-selectors.ts';
import { readCiliumSelector } from './cilium-selectors.ts';

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
  const namespace = typeof metadata.namespace === 'string' ? metadata.namespace : ctx.defaultNamespace;
  const spec = isRecord(value.spec) ? value.spec : {};
  const error = ctx.diagnostics.find((d) => d.severity === 'error');
  const engine =
    value.kind === 'CiliumNetworkPolicy'
      ? 'cilium'
      : typeof value.apiVersion === 'string' && value.apiVersion.includes('projectcalico.org/')
        ? 'calico'
        : undefined;
  const selected =
    engine === 'cilium'
      ? ciliumSelected(ctx, spec)
      : engine === 'calico'
        ? calicoSelected(ctx, spec)
        : kubeSelected(ctx, spec);
  return {
    namespace,
    name: metadata.name,
    ...(engine ? { engine } : {}),
    ...selected,
    problem: error ? `${error.path ? `${error.path}: ` : ''}${error.message}` : 'invalid',
    // Where the problem is (the diagnostic's place), else where the object starts.
    location: error
      ? { file: error.file, line: error.line, column: error.column }
      : ctx.raw.locator.valueAt(ctx.raw.basePath),
  };
}

type Selected = Pick<RejectedPolicy, 'podSelector' | 'anyOf' | 'affectsIngress' | 'affectsEgress'>;

/** A list that is there and holds something. */
const listed = (value: unknown): boolean => Array.isArray(value) && value.length > 0;

/** Kubernetes: `podSelector`, and `policyTypes` or their default (Ingress, Egress with egress rules). */
function kubeSelected(ctx: DecodeContext, spec: Record<string, unknown>): Selected {
  const types = Array.isArray(spec.policyTypes) ? spec.policyTypes : undefined;
  return {
    podSelector: lenientSelector(ctx, spec.podSelector),
    affectsIngress: types ? types.includes('Ingress') : true,
    affectsEgress: types ? types.includes('Egress') : listed(spec.egress),
  };
}

/**
 * Calico: `selector` (absent: `all()`; alternatives with `||` as `anyOf`; one with namespace terms
 * might select more than a pod selector says, so it counts as unknown) and `types`, or their
 * default.
 */
function calicoSelected(ctx: DecodeContext, spec: Record<string, unknown>): Selected {
  const types = Array.isArray(spec.types) ? spec.types : undefined;
  const scratch = new DecodeContext(ctx.raw, ctx.objectName, ctx.defaultNamespace);
  const text = typeof spec.selector === 'string' ? spec.selector : undefined;
  const alternatives = readCalicoSelector(scratch, text, ['spec', 'selector'], 'endpoint');
  const podsOnly = alternatives?.every((a) => a.namespace.length === 0) ?? false;
  const selectors = podsOnly ? (alternatives ?? []).map((a) => conjunctionSelectors(a).podSelector) : [];
  return {
    podSelector: selectors.length === 1 ? selectors[0] : undefined,
    ...(selectors.length > 1 ? { anyOf: selectors } : {}),
    // Calico's default: Ingress when it has ingress rules or no egress ones, Egress with egress rules.
    affectsIngress: types ? types.includes('Ingress') : listed(spec.ingress) || !listed(spec.egress),
    affectsEgress: types ? types.includes('Egress') : listed(spec.egress),
  };
}

/**
 * Cilium: each of `spec` and `specs` — its `endpointSelector`'s pod labels (one selector for them
 * all, else unknown), and the directions it has rules for or a default deny in.
 */
function ciliumSelected(ctx: DecodeContext, spec: Record<string, unknown>): Selected {
  const value = ctx.raw.value as Record<string, unknown>;
  const specs = [
    ...(isRecord(value.spec) ? [{ rule: spec, path: ['spec'] }] : []),
    ...(Array.isArray(value.specs) ? value.specs : []).flatMap((rule, i) =>
      isRecord(rule) ? [{ rule, path: ['specs', i] }] : [],
    ),
  ];
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
  const defaultDeny = (rule: Record<string, unknown>, direction: string): boolean =>
    isRecord(rule.enableDefaultDeny) && rule.enableDefaultDeny[direction] === true;
  return {
    podSelector: one ? first : undefined,
    affectsIngress: specs.some(
      ({ rule }) => listed(rule.ingress) || listed(rule.ingressDeny) || defaultDeny(rule, 'ingress'),
    ),
    affectsEgress: specs.some(
      ({ rule }) => listed(rule.egress) || listed(rule.egressDeny) || defaultDeny(rule, 'egress'),
    ),
  };
}

/** The pod selector when it is valid on its own (absent means all pods); otherwise undefined. */
function lenientSelector(ctx: DecodeContext, raw: unknown): RejectedPolicy['podSelector'] {
  const parsed = labelSelectorSchema.nullish().safeParse(raw);
  if (!parsed.success) return undefined;
  // A scratch context: the selector's problems, if any, were reported with the policy's.
  const scratch = new DecodeContext(ctx.raw, ctx.objectName, ctx.defaultNamespace);
  const selector = decodeSelector(scratch, parsed.data, ['spec', 'podSelector']);
  return scratch.failed ? undefined : selector;
}
