/**
 * `explain` for people: one block per endpoint with what it lets in and out.
 */
import type { EndpointExplanation, DirectionExplanation } from '../explain.ts';
import type { Style } from './style.ts';

const MAX_LISTED_PEERS = 6;

export function formatExplainText(explanations: readonly EndpointExplanation[], style: Style): string {
  return explanations.map((e) => formatOne(e, style)).join('\n');
}

function formatOne(e: EndpointExplanation, style: Style): string {
  const ips = e.ips.length ? e.ips.join(', ') : 'no IP';
  const lines = [
    `${style.bold(e.endpoint)} ${style.dim(`(${e.kind}; ${ips}${e.labels ? `; ${e.labels}` : ''})`)}`,
    ...direction('ingress', e.ingress, style),
    ...direction('egress', e.egress, style),
  ];
  return lines.join('\n') + '\n';
}

function direction(name: string, d: DirectionExplanation, style: Style): string[] {
  const summary = d.isolated ? style.warn(d.summary) : d.summary;
  const lines = [`  ${name}: ${summary}`];
  for (const rule of d.rules) {
    const peers =
      rule.peers.length === 0
        ? 'matches no endpoint in the input'
        : `matches ${rule.peers.slice(0, MAX_LISTED_PEERS).join(', ')}${rule.peers.length > MAX_LISTED_PEERS ? ` and ${rule.peers.length - MAX_LISTED_PEERS} more` : ''}`;
    lines.push(`    - ${rule.description} ${style.dim(`(${rule.policy} ${name}[${rule.rule}]; ${peers})`)}`);
  }
  return lines;
}
