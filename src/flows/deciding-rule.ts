/**
 * The rule that decided one side of a connection, in a flow record's words: the step of the
 * reference evaluator's walk `check` prints. Shared by attribution and the staged evaluation.
 */
import { AFTER_EVERY_TIER, type SideVerdict, type TierStep } from '../semantics/types.ts';
import type { DecidingRule } from './types.ts';

/**
 * The step of a side's walk that decided it, in the record's words: the tier that allowed or
 * denied, or NetworkPolicy's "not isolated" when no tier did (the default allowed).
 */
export function decidingRule(side: SideVerdict): DecidingRule | undefined {
  const decided: TierStep | undefined =
    side.walk.find((s) => s.outcome === 'allow' || s.outcome === 'deny') ?? undefined;
  const step =
    decided && decided.tier !== AFTER_EVERY_TIER
      ? decided
      : side.walk.find((s) => s.outcome === 'not-isolated');
  if (!step || step.outcome === 'pass') return undefined;
  // Isolated and no rule allowed it: no one policy decided; the ones that isolate are named.
  const isolated = step.tier === 'NetworkPolicy' && step.outcome === 'deny' && step.policy === undefined;
  return {
    direction: side.direction,
    tier: step.tier,
    outcome: step.outcome,
    ...(step.policy !== undefined ? { policy: step.policy } : {}),
    ...(isolated ? { isolatedBy: step.policies } : {}),
    ...(step.rule !== undefined ? { rule: step.rule } : {}),
    ...(step.ruleName !== undefined ? { ruleName: step.ruleName } : {}),
  };
}
