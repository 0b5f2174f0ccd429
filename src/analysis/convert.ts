/**
 * `convert --to v1`: rewrites input written for the v1beta1 proposal (namespace DefaultDeny
 * annotation, ingress-only policies, empty lists matching nothing) into v1 objects with the same
 * behaviour under v1 semantics:
 * - a DefaultDeny namespace loses its annotation and gains a default-deny-ingress policy;
 * - a policy in a namespace without DefaultDeny had no effect, and would isolate pods under v1,
 *   so it is left out (with a warning naming it);
 * - other policies become networking.k8s.io/v1 with `policyTypes: [Ingress]`, no egress, and
 *   without rules whose `from: []` or `ports: []` matched nothing.
 * Everything else passes through unchanged.
 *
 * Input written for v1 (`inputSemantics` `v1`) is already what `--to v1` asks for: it passes
 * through unchanged, but for legacy `extensions/v1beta1` NetworkPolicy objects, which are
 * rewritten to `networking.k8s.io/v1` (the same object under v1 semantics). Which semantics the
 * input was written for is the user's `--semantics`, or else `inferInputSemantics`.
 */
import { makeDiagnostic, type Diagnostic, type DiagnosticCode } from '../model/diagnostics.ts';
import { LEGACY_ISOLATION_ANNOTATION, type Cluster, type Semantics } from '../model/types.ts';
import type { RawObject } from '../ingest/types.ts';

export const DEFAULT_DENY_POLICY_NAME = 'legacy-default-deny-ingress';

export interface ConvertResult {
  readonly objects: readonly unknown[];
  readonly notes: readonly Diagnostic[];
}

type Json = Record<string, unknown>;

/**
 * What input written without saying is: the v1beta1 proposal's when it uses what only the
 * proposal has (an `extensions/v1beta1` NetworkPolicy, a namespace DefaultDeny annotation),
 * v1 otherwise.
 */
export function inferInputSemantics(rawObjects: readonly RawObject[]): Semantics {
  for (const raw of rawObjects) {
    const value = raw.value as Json;
    if (value.kind === 'NetworkPolicy' && value.apiVersion === 'extensions/v1beta1')
      return 'v1beta1-proposal';
    if (value.kind !== 'Namespace') continue;
    const annotations = ((value.metadata as Json | undefined)?.annotations ?? {}) as Json;
    if (typeof annotations[LEGACY_ISOLATION_ANNOTATION] === 'string') return 'v1beta1-proposal';
  }
  return 'v1';
}

export function convertToV1(
  rawObjects: readonly RawObject[],
  cluster: Cluster,
  inputSemantics: Semantics = 'v1beta1-proposal',
): ConvertResult {
  if (inputSemantics === 'v1') return passThroughV1(rawObjects);
  const objects: unknown[] = [];
  const notes: Diagnostic[] = [];
  const note = (raw: RawObject, code: DiagnosticCode, message: string, object: string): void => {
    notes.push(makeDiagnostic(code, message, { ...raw.locator.valueAt(raw.basePath), object }));
  };
  for (const raw of rawObjects) {
    const value = raw.value as Json;
    const metadata = (value.metadata ?? {}) as Json;
    const name = String(metadata.name);
    if (value.kind === 'Namespace' && cluster.namespaces.has(name)) {
      const annotations = { ...((metadata.annotations ?? {}) as Json) };
      delete annotations[LEGACY_ISOLATION_ANNOTATION];
      const { annotations: _dropped, ...rest } = metadata;
      objects.push({ ...value, metadata: Object.keys(annotations).length ? { ...rest, annotations } : rest });
      if (cluster.namespaces.get(name)?.legacyIngressIsolation === 'DefaultDeny') {
        objects.push(defaultDenyPolicy(name));
        note(
          raw,
          'CONVERT_DEFAULT_DENY',
          `DefaultDeny on namespace ${name} became NetworkPolicy ${name}/${DEFAULT_DENY_POLICY_NAME}`,
          `Namespace ${name}`,
        );
      }
      continue;
    }
    if (value.kind === 'NetworkPolicy') {
      const namespace = typeof metadata.namespace === 'string' ? metadata.namespace : 'default';
      const decoded = cluster.policies.find((p) => p.namespace === namespace && p.name === name);
      if (!decoded) {
        objects.push(value); // invalid input: reported by ingest, passed through untouched
        continue;
      }
      const id = `NetworkPolicy ${namespace}/${name}`;
      if (cluster.namespaces.get(namespace)?.legacyIngressIsolation !== 'DefaultDeny') {
        note(
          raw,
          'CONVERT_POLICY_DROPPED',
          `${namespace}/${name} had no effect (namespace ${namespace} has no DefaultDeny) and would isolate pods under v1; left out`,
          id,
        );
        continue;
      }
      objects.push(
        convertPolicy(value, metadata, (index) =>
          note(
            raw,
            'CONVERT_RULE_DROPPED',
            `${namespace}/${name} ingress[${index}] has an empty list and matched nothing; left out`,
            id,
          ),
        ),
      );
      continue;
    }
    objects.push(value);
  }
  return { objects, notes };
}

function convertPolicy(value: Json, metadata: Json, dropped: (index: number) => void): Json {
  const spec = (value.spec ?? {}) as Json;
  const rules = (Array.isArray(spec.ingress) ? spec.ingress : []) as Json[];
  const kept = rules.filter((rule, index) => {
    const empty = (field: string): boolean =>
      Array.isArray(rule[field]) && (rule[field] as unknown[]).length === 0;
    if (empty('from') || empty('ports')) {
      dropped(index);
      return false;
    }
    return true;
  });
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata,
    spec: { podSelector: spec.podSelector ?? {}, policyTypes: ['Ingress'], ingress: kept },
  };
}

/** v1 input: unchanged, legacy NetworkPolicy objects under their v1 apiVersion. */
function passThroughV1(rawObjects: readonly RawObject[]): ConvertResult {
  const objects = rawObjects.map((raw) => {
    const value = raw.value as Json;
    return value.kind === 'NetworkPolicy' && value.apiVersion === 'extensions/v1beta1'
      ? { ...value, apiVersion: 'networking.k8s.io/v1' }
      : value;
  });
  return { objects, notes: [] };
}

function defaultDenyPolicy(namespace: string): Json {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: DEFAULT_DENY_POLICY_NAME, namespace },
    spec: { podSelector: {}, policyTypes: ['Ingress'] },
  };
}
