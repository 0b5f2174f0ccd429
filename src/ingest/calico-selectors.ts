/**
 * Calico selectors as the model's selectors. A selector is parsed (calico-selector.ts; a mistake
 * is reported at its column), turned into alternatives of conjunctions, and each requirement is
 * placed where it applies: on the namespace (`projectcalico.org/namespace`, `pcns.<label>`, any
 * label in a namespaceSelector), on the pod (its labels, and the labels Calico gives a pod for its
 * service account: `projectcalico.org/serviceaccount`, `pcsa.<label>`), or decided at once
 * (`projectcalico.org/orchestrator == 'k8s'` holds for every pod). The result is a list of
 * (namespace selector, pod selector) pairs, any of which selects.
 */
import { makeSelector, selectorMatches, type LabelSelector } from '../model/selector.ts';
import { NAMESPACE_NAME_LABEL } from '../model/types.ts';
import { parseCalicoSelector, selectorDnf, MAX_CONJUNCTIONS, type SelectorAtom } from './calico-selector.ts';
import type { DecodeContext } from './decode-context.ts';
import type { FieldPath } from './types.ts';

import { CALICO_SERVICE_ACCOUNT_LABEL, CALICO_SERVICE_ACCOUNT_PREFIX } from '../model/identity-labels.ts';
import { exactArray } from '../util/exact-array.ts';
const CALICO_NAMESPACE_LABEL = 'projectcalico.org/namespace';
const CALICO_NAMESPACE_PREFIX = 'pcns.';
const CALICO_ORCHESTRATOR_LABEL = 'projectcalico.org/orchestrator';
const CALICO_NAME_LABEL = 'projectcalico.org/name';

/** What a selector's labels are read against. */
type SelectorScope = 'endpoint' | 'namespace' | 'serviceAccount';

/** One alternative: requirements on the namespace and on the pod, all of which must hold. */
export interface EndpointConjunction {
  readonly namespace: readonly SelectorAtom[];
  readonly pod: readonly SelectorAtom[];
}

/** Matches everything. */
const ANY_ENDPOINT: readonly EndpointConjunction[] = [{ namespace: [], pod: [] }];

/**
 * A selector's alternatives, or undefined when it does not parse (reported, with the column of
 * the mistake). An absent or empty selector is `all()`.
 */
export function readCalicoSelector(
  ctx: DecodeContext,
  text: string | null | undefined,
  path: FieldPath,
  scope: SelectorScope,
): EndpointConjunction[] | undefined {
  if (text === null || text === undefined) return [...ANY_ENDPOINT];
  // Policies repeat their selectors: one that read well is read once (per scope).
  const key = `${scope}\u0000${text}`;
  const known = readSelectors.get(key);
  if (known) return [...known];
  const parsed = parseCalicoSelector(text);
  if (!parsed.ok) {
    ctx.reportInString(
      'SELECTOR_SYNTAX',
      `selector "${text}" does not parse at column ${parsed.index + 1}: ${parsed.message}`,
      path,
      parsed.index,
    );
    return undefined;
  }
  const dnf = selectorDnf(parsed.expression);
  if (!dnf) {
    ctx.report(
      'SELECTOR_TOO_COMPLEX',
      `selector "${text}" has more than ${MAX_CONJUNCTIONS} alternatives once its || are multiplied out`,
      path,
    );
    return undefined;
  }
  const out: EndpointConjunction[] = [];
  for (const conjunction of dnf) {
    const placed = placeAtoms(conjunction, scope);
    if (placed) out.push(placed);
  }
  if (readSelectors.size >= MAX_REMEMBERED) readSelectors.clear();
  readSelectors.set(key, out);
  return [...out];
}

/** Selectors read without a problem, by scope and text (bounded: cleared when full). */
const readSelectors = new Map<string, readonly EndpointConjunction[]>();
const MAX_REMEMBERED = 10_000;

function placeAtoms(atoms: readonly SelectorAtom[], scope: SelectorScope): EndpointConjunction | undefined {
  const namespace: SelectorAtom[] = [];
  const pod: SelectorAtom[] = [];
  for (const atom of atoms) {
    if (scope === 'namespace') {
      namespace.push(atom.key === CALICO_NAME_LABEL ? { ...atom, key: NAMESPACE_NAME_LABEL } : atom);
    } else if (scope === 'serviceAccount') {
      pod.push({
        ...atom,
        key:
          atom.key === CALICO_NAME_LABEL
            ? CALICO_SERVICE_ACCOUNT_LABEL
            : `${CALICO_SERVICE_ACCOUNT_PREFIX}${atom.key}`,
      });
    } else if (atom.key === CALICO_NAMESPACE_LABEL) {
      namespace.push({ ...atom, key: NAMESPACE_NAME_LABEL });
    } else if (atom.key.startsWith(CALICO_NAMESPACE_PREFIX)) {
      namespace.push({ ...atom, key: atom.key.slice(CALICO_NAMESPACE_PREFIX.length) });
    } else if (atom.key === CALICO_ORCHESTRATOR_LABEL) {
      // Every pod is a Kubernetes workload: decide the requirement now.
      if (!selectorMatches(makeSelector({}, [atom]), { [CALICO_ORCHESTRATOR_LABEL]: 'k8s' }))
        return undefined;
    } else pod.push(atom);
  }
  return { namespace: exactArray(namespace), pod: exactArray(pod) };
}

/** Every alternative of `a` with every alternative of `b` (a conjunction of two selectors). */
export function bothConjunctions(
  a: readonly EndpointConjunction[],
  b: readonly EndpointConjunction[],
): EndpointConjunction[] | undefined {
  if (a.length * b.length > MAX_CONJUNCTIONS) return undefined;
  return a.flatMap((x) =>
    b.map((y) => ({ namespace: [...x.namespace, ...y.namespace], pod: [...x.pod, ...y.pod] })),
  );
}

/** A conjunction as the model's selectors. */
export function conjunctionSelectors(conjunction: EndpointConjunction): {
  namespaceSelector: LabelSelector;
  podSelector: LabelSelector;
} {
  return {
    namespaceSelector: makeSelector({}, conjunction.namespace),
    podSelector: makeSelector({}, conjunction.pod),
  };
}
