/**
 * Staged policy (audit mode): what the enforced policy set would decide with the staged
 * policies applied — the answer to "what breaks if I apply this?" on real traffic.
 *
 * The staged set is the enforced set plus every staged policy. A Kubernetes object has one name,
 * so a staged policy never stands beside an enforced one of the same kind, namespace and name:
 * to stage a change to an enforced policy, stage the new version under another name (the two
 * then apply together, as they would once both were enforced). Enforcing a staged policy is
 * removing its mark (`palisade.dev/staged`): the set then enforced is exactly the staged set.
 */
import { sortByPrecedence } from '../model/precedence.ts';
import { policyKey, type Cluster } from '../model/types.ts';
import type { SideVerdict, Verdict } from '../semantics/types.ts';
import { decidingRule } from './deciding-rule.ts';
import type { DecidingRule, FlowRecord, FlowVerdict } from './types.ts';

/** The cluster as it would be with its staged policies enforced (undefined: none are staged). */
export function withStagedApplied(cluster: Cluster): Cluster | undefined {
  const staged = cluster.staged;
  if (!staged || staged.policies.length + staged.clusterPolicies.length === 0) return undefined;
  const policies = [...cluster.policies, ...staged.policies].sort((a, b) =>
    policyKey(a) < policyKey(b) ? -1 : policyKey(a) > policyKey(b) ? 1 : 0,
  );
  const clusterPolicies = sortByPrecedence([...cluster.clusterPolicies, ...staged.clusterPolicies]);
  const { staged: _staged, ...enforced } = cluster;
  return { ...enforced, policies, clusterPolicies };
}

/**
 * What the staged set changes for one connection, on the sides this node judged (`local`): its
 * verdict and the staged rules that decide it — the denying sides' when it would be denied, every
 * side's when it would be newly allowed — or undefined when the verdict stays. Compared with the
 * enforced set's verdict from the same evaluator, not with the kernel's, so a kernel that
 * disagrees with the evaluator (a `mismatch`) is not mistaken for the staged set's doing.
 */
export function stagedChange(
  enforced: Verdict,
  staged: Verdict,
  local: (side: SideVerdict) => boolean,
): FlowRecord['staged'] {
  const sidesOf = (verdict: Verdict): SideVerdict[] =>
    [verdict.egress, verdict.ingress].filter((side) => side.walk.length > 0 && local(side));
  const before = sidesOf(enforced).every((side) => side.allowed);
  const stagedSides = sidesOf(staged);
  const after = stagedSides.every((side) => side.allowed);
  if (before === after) return undefined;
  const verdict: FlowVerdict = after ? 'allowed' : 'denied';
  const deciding = after ? stagedSides : stagedSides.filter((side) => !side.allowed);
  const decidedBy = deciding.flatMap((side): DecidingRule[] => {
    const rule = decidingRule(side);
    return rule ? [rule] : [];
  });
  return { verdict, decidedBy };
}
