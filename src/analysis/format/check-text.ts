/**
 * `check` for people: the verdict, then each side's decision and, when denied, why each rule of
 * the isolating policies did not match.
 */
import { describeStep } from '../../semantics/index.ts';
import type { SideVerdict, Verdict } from '../../semantics/types.ts';
import type { CheckResult } from '../types.ts';
import { droppedPolicyText } from '../dropped-policies.ts';
import type { Style } from './style.ts';

export function formatCheckText(result: CheckResult, style: Style): string {
  const { verdict } = result;
  const port = result.portName ? `${result.portName} (${result.port})` : String(result.port);
  const head = `${result.from} → ${result.to} ${result.protocol}/${port}: ${verdict.allowed ? style.ok('ALLOWED') : style.bad('DENIED')}`;
  const lines = [head];
  // Next to the verdict: a policy the user wrote that would have applied, but is not in force.
  for (const dropped of result.droppedPolicies ?? [])
    lines.push(style.warn(`  warning: ${droppedPolicyText(dropped)}`));
  lines.push(...verdictLines(verdict, style));
  for (const other of verdict.otherFamilies) {
    lines.push(
      `  over IPv${other.family}: ${other.allowed ? 'allowed' : 'denied'}`,
      ...verdictLines(other, style).map((l) => `  ${l}`),
    );
  }
  for (const note of verdict.notes) lines.push(style.dim(`  note: ${note}`));
  const pods = result.podPairs;
  if (pods && pods.allowed > 0 && pods.allowed < pods.total) {
    const denied = pods.judged.filter((p) => !p.allowed).map((p) => `${p.from} → ${p.to}`);
    lines.push(
      style.dim(
        `  note: allowed for ${pods.allowed} of ${pods.total} pod pairs; denied for ${denied.join(', ')}${pods.judged.some((p) => !p.allowed && p.pairs > 1) ? ' and pods like them' : ''}`,
      ),
    );
  }
  return lines.join('\n') + '\n';
}

function verdictLines(verdict: Verdict, style: Style): string[] {
  return [...sideLines(verdict.egress, style), ...sideLines(verdict.ingress, style)];
}

function sideLines(side: SideVerdict, style: Style): string[] {
  const mark = side.allowed ? style.ok('allow') : style.bad('deny ');
  const label = side.direction === 'egress' ? 'egress ' : 'ingress';
  const lines = [`  ${label} ${mark}  ${side.reason}`];
  // The tier walk, when a cluster policy took part (without one it only restates the reason).
  if (side.walk.some((step) => step.tier !== 'NetworkPolicy' && step.policies.length > 0))
    lines.push(style.dim(`           ${side.walk.map(describeStep).join(' → ')}`));
  if (!side.allowed)
    for (const miss of side.misses)
      lines.push(
        style.dim(
          `           - ${miss.policy}${miss.rule >= 0 ? ` ${side.direction}[${miss.rule}]` : ''}: ${miss.reason}`,
        ),
      );
  return lines;
}
