/**
 * `explain` for people: one block per endpoint with what it lets in and out.
 */
import type { EndpointExplanation, DirectionExplanation } from '../explain.ts';
import type { Style } from './style.ts';
import { droppedPolicyText } from '../dropped-policies.ts';
import type { EndpointList } from '../rule-peers.ts';

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
  const admin = d.tiers.filter((t) => t.tier === 'Admin');
  const baseline = d.tiers.filter((t) => t.tier === 'Baseline');
  const lines = [`  ${name}: ${summary}`];
  for (const dropped of d.dropped ?? []) lines.push(style.warn(`    warning: ${droppedPolicyText(dropped)}`));
  // Evaluation order: Admin rules first, then NetworkPolicy, then (when not isolated) Baseline.
  // Lines are pushed one by one: an endpoint can be subject to 100,000 Admin rules, too many
  // arguments for one push.
  if (admin.length) lines.push(`    Admin tier, before NetworkPolicy:`);
  for (const t of admin) lines.push(tierLine(name, t, style));
  // Under a tier heading, NetworkPolicy's rules need their own, or they read as the tier's.
  if (d.rules.length > 0 && (admin.length > 0 || baseline.length > 0)) lines.push(`    NetworkPolicy:`);
  for (const rule of d.rules) {
    lines.push(
      `    - ${rule.description} ${style.dim(`(${rule.policy} ${name}[${rule.rule}]; ${listPeers(rule.peers)})`)}` +
        (rule.allowsNothing ? style.warn(` — allows nothing: ${rule.allowsNothing}`) : ''),
    );
  }
  if (baseline.length)
    lines.push(
      `    Baseline tier, ${d.isolated ? 'not reached: NetworkPolicy decides' : 'since no NetworkPolicy isolates it'}:`,
    );
  for (const t of baseline) lines.push(tierLine(name, t, style));
  return lines;
}

function tierLine(name: string, t: DirectionExplanation['tiers'][number], style: Style): string {
  const rule = `${t.policy} ${name}[${t.rule}]${t.name ? ` "${t.name}"` : ''}`;
  return `    - ${t.description} ${style.dim(`(${rule}; ${listPeers(t.peers)})`)}`;
}

function listPeers(peers: EndpointList): string {
  return peers.length === 0
    ? 'matches no endpoint in the input'
    : `matches ${peers.first(MAX_LISTED_PEERS).join(', ')}${peers.length > MAX_LISTED_PEERS ? ` and ${peers.length - MAX_LISTED_PEERS} more` : ''}`;
}
