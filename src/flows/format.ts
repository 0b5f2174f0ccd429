/**
 * Flow records as people read them (`palisade flows -o text`): one line per record — verdict,
 * source → destination, port, count — and what decided each side in `check`'s words
 * (`egress: allowed by ns/policy egress[0]`).
 */
import type { DecidingRule, FlowEndpoint, FlowRecord } from './types.ts';

function endpointText(endpoint: FlowEndpoint): string {
  return endpoint.pod ?? endpoint.ip;
}

/** One side's decision, as `check` names it. */
export function decidingRuleText(rule: DecidingRule): string {
  if (rule.outcome === 'not-isolated') return `${rule.direction}: not isolated`;
  const verb = rule.outcome === 'allow' ? 'allowed' : rule.outcome === 'deny' ? 'denied' : 'no rule matched';
  if (rule.policy === undefined) {
    return rule.outcome === 'deny'
      ? `${rule.direction}: isolated${rule.isolatedBy?.length ? ` by ${rule.isolatedBy.join(', ')}` : ''}, no rule allows it`
      : `${rule.direction}: ${verb} (${rule.tier})`;
  }
  const named = rule.ruleName !== undefined ? ` "${rule.ruleName}"` : '';
  const where = rule.rule !== undefined ? ` ${rule.direction}[${rule.rule}]${named}` : '';
  return `${rule.direction}: ${verb} by ${rule.policy}${where}`;
}

export function flowText(record: FlowRecord): string {
  const head = `${record.verdict.toUpperCase().padEnd(7)} ${endpointText(record.src)} -> ${endpointText(record.dst)} ${record.protocol}/${record.port}`;
  const count = `×${record.count}${record.sampled ? ' (sampled)' : ''}`;
  const decided = record.decidedBy.length
    ? record.decidedBy.map(decidingRuleText).join('; ')
    : 'no policy applies';
  const node = record.node !== undefined ? ` [${record.node}]` : '';
  const staged = record.staged
    ? `  staged: would be ${record.staged.verdict}${record.staged.decidedBy.length ? ` (${record.staged.decidedBy.map(decidingRuleText).join('; ')})` : ''}`
    : '';
  const mismatch = record.mismatch !== undefined ? `  MISMATCH: ${record.mismatch}` : '';
  return `${head} ${count}${node}  ${decided}${staged}${mismatch}`;
}
