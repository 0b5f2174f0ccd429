/**
 * The staged mark (`palisade.dev/staged`) on a policy of a standard kind: a staged policy is
 * decoded and checked like any other, then wrapped (`{kind: 'Staged'}`) so that whatever
 * assembles the enforced cluster — `buildCluster`, the agent's mirror — cannot take it for an
 * enforced one by accident: the type system makes each of them decide.
 */
import { STAGED_ANNOTATION } from '../model/types.ts';
import type { DecodeContext } from './decode-context.ts';
import type { DecodedObject } from './types.ts';

/** Kinds the mark applies to (Kubernetes' NetworkPolicy, not Calico's of the same name). */
export const STAGEABLE_KINDS: ReadonlySet<string> = new Set([
  'NetworkPolicy',
  'AdminNetworkPolicy',
  'BaselineAdminNetworkPolicy',
  'ClusterNetworkPolicy',
]);

/**
 * The object, wrapped when its metadata marks it staged. `"true"` stages it and `"false"` does
 * not; any other value stages it too, with a warning: the mark says "do not enforce this yet",
 * and a misspelt `"yes"` enforcing a candidate is the surprise to avoid.
 */
export function withStagedMark(ctx: DecodeContext, metadata: unknown, decoded: DecodedObject): DecodedObject {
  if (decoded.kind !== 'NetworkPolicy' && decoded.kind !== 'ClusterPolicy') return decoded;
  const annotations = (metadata as { annotations?: unknown } | undefined)?.annotations;
  if (annotations === null || typeof annotations !== 'object') return decoded;
  const value = (annotations as Record<string, unknown>)[STAGED_ANNOTATION];
  if (value === undefined || value === 'false') return decoded;
  const path = ['metadata', 'annotations', STAGED_ANNOTATION];
  if (value !== 'true')
    ctx.report(
      'STAGED_VALUE_INVALID',
      `annotation ${STAGED_ANNOTATION} is ${JSON.stringify(value)}, not "true" or "false"; the policy is taken as staged`,
      path,
    );
  ctx.report(
    'POLICY_STAGED',
    `staged (${STAGED_ANNOTATION}): not enforced, and left out of answers about the cluster; the agent evaluates it against flows (palisade flows --staged)`,
    path,
  );
  return { kind: 'Staged', object: decoded };
}
