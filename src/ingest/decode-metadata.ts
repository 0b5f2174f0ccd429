/**
 * Object names and namespaces: validated like the API server does, namespace defaulted for
 * namespaced kinds to `default`, or to the namespace given with `-n` (as kubectl does).
 */
import type { DecodeContext } from './decode-context.ts';
import { dnsLabelProblem, dnsSubdomainProblem } from './validate-names.ts';

export function decodeMetadataName(
  ctx: DecodeContext,
  metadata: { name: string; namespace?: string | null | undefined },
  namespaced: boolean,
): { name: string; namespace: string } {
  const nameProblem = namespaced ? dnsSubdomainProblem(metadata.name) : dnsLabelProblem(metadata.name);
  if (nameProblem)
    ctx.report('NAME_INVALID', `name "${metadata.name}" is invalid: ${nameProblem}`, ['metadata', 'name']);
  const namespace = namespaced ? (metadata.namespace ?? ctx.defaultNamespace) : '';
  if (namespaced) {
    const problem = dnsLabelProblem(namespace);
    if (problem)
      ctx.report('NAME_INVALID', `namespace "${namespace}" is invalid: ${problem}`, [
        'metadata',
        'namespace',
      ]);
  }
  return { name: metadata.name, namespace };
}

/**
 * An object's `metadata.uid` and `metadata.generation`, when it has them (objects read from a
 * cluster do; manifests usually do not). Kuryr tags Neutron's objects with them.
 */
export function metadataIdentity(metadata: object): { uid?: string; generation?: number } {
  const { uid, generation } = metadata as { uid?: unknown; generation?: unknown };
  return {
    ...(typeof uid === 'string' && uid !== '' ? { uid } : {}),
    ...(typeof generation === 'number' && Number.isSafeInteger(generation) ? { generation } : {}),
  };
}
