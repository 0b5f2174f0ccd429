/**
 * Cilium's endpoint selectors: Kubernetes label selectors over a Cilium identity's labels, whose
 * keys may carry a source (`k8s:app`, `any:app`) and name more than the pod's own labels
 * (docs.cilium.io, security/policy/kubernetes, "Namespaces" and "ServiceAccounts"):
 *
 * - `io.kubernetes.pod.namespace` is the pod's namespace; without it, a CiliumNetworkPolicy's
 *   `fromEndpoints`/`toEndpoints` select in the policy's own namespace and a clusterwide policy's
 *   in every namespace (Cilium adds the match, pkg/k8s/apis/cilium.io/utils getEndpointSelector);
 * - `io.cilium.k8s.namespace.labels.<label>` is a label of the pod's namespace (clusterwide
 *   policies only: a CiliumNetworkPolicy ignores it);
 * - `io.cilium.k8s.policy.serviceaccount` is the pod's service account;
 * - `reserved:<entity>` names an entity (`reserved:host`), as `fromEntities` does.
 */
import { makeSelector, type LabelSelector, type SelectorOperator } from '../model/selector.ts';
import { NAMESPACE_NAME_LABEL } from '../model/types.ts';
import type { DecodeContext } from './decode-context.ts';
import { checkedOperator } from './decode-labels.ts';
import type { RawLabelSelector } from './schemas.ts';
import type { FieldPath } from './types.ts';
import { labelKeyProblem, labelValueProblem } from './validate-names.ts';

const CILIUM_NAMESPACE_LABEL = 'io.kubernetes.pod.namespace';
const CILIUM_NAMESPACE_LABELS_PREFIX = 'io.cilium.k8s.namespace.labels.';
const CILIUM_CLUSTER_LABEL = 'io.cilium.k8s.policy.cluster';
const SOURCES = ['k8s:', 'any:', 'container:', 'unspec:'];

type Requirement = { key: string; operator: SelectorOperator; values: readonly string[] };

/** A selector read: what it asks of the namespace and of the pod, and any reserved entity it names. */
export interface CiliumSelector {
  readonly namespace: LabelSelector;
  readonly pod: LabelSelector;
  /** True when it says which namespace (or namespace labels) it selects in. */
  readonly scoped: boolean;
  /** `reserved:host` and the like: the entities it names (then it selects no pod). */
  readonly entities: readonly string[];
}

/** Which policy the selector is in: clusterwide ones may read namespace labels. */
interface SelectorSite {
  readonly clusterwide: boolean;
}

/**
 * Selectors read without a diagnostic, by their labels: a policy set repeats a few selectors
 * thousands of times (every policy of an app names its peers alike), and reading one — each key
 * and value checked, two canonical selectors made — was a sixth of reading a Cilium policy.
 * Only `matchLabels` selectors are kept, and only valid ones: what reading one reports is then
 * nothing, whichever object it is in. Bounded; cleared when full.
 */
const readSelectors = new Map<string, CiliumSelector>();
const READ_SELECTORS_LIMIT = 10_000;

/** Reads a selector; undefined when invalid (reported). */
export function readCiliumSelector(
  ctx: DecodeContext,
  raw: RawLabelSelector | null | undefined,
  path: FieldPath,
  site: SelectorSite,
): CiliumSelector | undefined {
  const key = labelsKey(raw, site);
  const known = key !== undefined ? readSelectors.get(key) : undefined;
  if (known) return known;
  const read = readSelector(ctx, raw, path, site);
  if (read && key !== undefined && read.warned === false) {
    if (readSelectors.size >= READ_SELECTORS_LIMIT) readSelectors.clear();
    readSelectors.set(key, read.selector);
  }
  return read?.selector;
}

/** The cache's key for a selector of `matchLabels` only (its JSON: unambiguous); undefined for any other. */
function labelsKey(raw: RawLabelSelector | null | undefined, site: SelectorSite): string | undefined {
  if ((raw?.matchExpressions?.length ?? 0) > 0) return undefined;
  return `${site.clusterwide ? 'c' : 'n'}${JSON.stringify(raw?.matchLabels ?? {})}`;
}

function readSelector(
  ctx: DecodeContext,
  raw: RawLabelSelector | null | undefined,
  path: FieldPath,
  site: SelectorSite,
): { selector: CiliumSelector; warned: boolean } | undefined {
  const before = ctx.diagnostics.length;
  const namespace: Requirement[] = [];
  const pod: Requirement[] = [];
  const entities: string[] = [];
  let scoped = false;
  const place = (
    rawKey: string,
    operator: SelectorOperator,
    values: readonly string[],
    at: FieldPath,
    atKey: boolean,
  ): void => {
    if (rawKey.startsWith('reserved:')) {
      entities.push(rawKey.slice('reserved:'.length));
      return;
    }
    const source = SOURCES.find((s) => rawKey.startsWith(s));
    const key = source ? rawKey.slice(source.length) : rawKey;
    const problem = labelKeyProblem(key);
    if (problem) {
      ctx.report('LABEL_KEY_INVALID', `selector key "${rawKey}" is invalid: ${problem}`, at, atKey);
      return;
    }
    values.forEach((value) => {
      const valueProblem = labelValueProblem(value);
      if (valueProblem)
        ctx.report('LABEL_VALUE_INVALID', `selector value "${value}" is invalid: ${valueProblem}`, at);
    });
    if (key === CILIUM_NAMESPACE_LABEL) {
      scoped = true;
      namespace.push({ key: NAMESPACE_NAME_LABEL, operator, values });
    } else if (key.startsWith(CILIUM_NAMESPACE_LABELS_PREFIX)) {
      if (!site.clusterwide) {
        ctx.report(
          'SELECTOR_KEY_IGNORED',
          `"${rawKey}" is ignored in a CiliumNetworkPolicy (only clusterwide policies select by namespace labels), as Cilium ignores it`,
          at,
          atKey,
        );
        return;
      }
      scoped = true;
      namespace.push({ key: key.slice(CILIUM_NAMESPACE_LABELS_PREFIX.length), operator, values });
    } else if (key === CILIUM_CLUSTER_LABEL) {
      ctx.report(
        'SELECTOR_KEY_IGNORED',
        `"${rawKey}" (the cluster of a cluster mesh) is ignored: every pod of the input is taken to be in the local cluster`,
        at,
        atKey,
      );
    } else pod.push({ key, operator, values });
  };
  for (const [key, value] of Object.entries(raw?.matchLabels ?? {}))
    place(key, 'In', [value], [...path, 'matchLabels', key], true);
  (raw?.matchExpressions ?? []).forEach((expression, index) => {
    const at = [...path, 'matchExpressions', index];
    const operator = checkedOperator(ctx, expression, at);
    if (!operator) return;
    const values = expression.values ?? [];
    place(expression.key, operator, values, [...at, 'key'], false);
  });
  if (ctx.errorSince(before)) return undefined;
  return {
    selector: { namespace: makeSelector({}, namespace), pod: makeSelector({}, pod), scoped, entities },
    warned: ctx.diagnostics.length > before,
  };
}
