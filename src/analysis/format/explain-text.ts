/**
 * `explain` for people: one block per endpoint with what it lets in and out.
 */
import type { EndpointExplanation, DirectionExplanation } from '../explain.ts';
import type { Style } from './style.ts';
import { droppedPolicyText } from '../dropped-policies.ts';
import {
  ADMIN_TIER,
  BASELINE_TIER,
  DEFAULT_TIER,
  NETWORK_POLICY_ORDER,
  PROFILES_TIER,
} from '../../model/cluster-policy.ts';
import type { EndpointList } from '../rule-peers.ts';

const MAX_LISTED_PEERS = 6;

export function formatExplainText(explanations: readonly EndpointExplanation[], style: Style): string {
  return explanations.map((e) => formatOne(e, style)).join('\n');
}

function formatOne(e: EndpointExplanation, style: Style): string {
  const ips = e.ips.length ? e.ips.join(', ') : 'no IP';
  const lines = [
    `${style.bold(e.endpoint)} ${style.dim(`(${e.kind}; ${ips}${e.labels ? `; ${e.labels}` : ''})`)}`,
    ...directionLines('ingress', e.ingress, style),
    ...directionLines('egress', e.egress, style),
  ];
  return lines.join('\n') + '\n';
}

/** One direction's lines: its summary, then its rules in evaluation order (also `explain --by class`'s). */
export function directionLines(name: string, d: DirectionExplanation, style: Style): string[] {
  const summary = d.isolated ? style.warn(d.summary) : d.summary;
  const lines = [`  ${name}: ${summary}`];
  for (const dropped of d.dropped ?? []) lines.push(style.warn(`    warning: ${droppedPolicyText(dropped)}`));
  // Evaluation order: the tiers before NetworkPolicy's (Admin, Calico's), the default tier's
  // Calico and Cilium rules with NetworkPolicy among them, then (when not isolated) Baseline and
  // the tiers after. Lines are pushed one by one: an endpoint can be subject to 100,000 Admin
  // rules, too many arguments for one push.
  const before: TierRule[] = [];
  const inDefault: TierRule[] = [];
  const after: TierRule[] = [];
  for (const t of d.tiers) {
    if (t.tier === DEFAULT_TIER) inDefault.push(t);
    else if (t.tier === BASELINE_TIER || t.tier === PROFILES_TIER || t.after) after.push(t);
    else before.push(t);
  }
  const ends = new Set(d.tierEnds ?? []);
  const tierBlocks = (rules: readonly TierRule[], place: 'before' | 'after'): void => {
    let current: string | undefined;
    rules.forEach((t, i) => {
      if (t.tier !== current) {
        current = t.tier;
        lines.push(`    ${heading(t.tier, place, d.isolated)}:`);
      }
      lines.push(tierLine(name, t, style));
      if (rules[i + 1]?.tier !== t.tier && ends.has(t.tier))
        lines.push(`    - ${style.warn('deny everything else')} ${style.dim(`(the end of tier ${t.tier})`)}`);
    });
  };
  tierBlocks(before, 'before');
  // Calico's default-tier policies of an order below 1000 and Cilium's rules come before
  // NetworkPolicy's (order 1000); Calico's of a higher order after, and those without an order
  // last (Calico's rule; explanations name Calico's policies `calico/…` and `gnp/…`).
  const isLate = (t: TierRule): boolean =>
    t.order !== undefined ? t.order > NETWORK_POLICY_ORDER : /^(calico|gnp)\//.test(t.policy);
  const early = inDefault.filter((t) => !isLate(t));
  const late = inDefault.filter(isLate);
  // NetworkPolicy's order is Calico's notion: with Cilium's rules alone it says nothing.
  const ordered = early.some((t) => t.order !== undefined);
  // Cilium's rules alone are in no tier of Calico's: named as Cilium's, deny rules first.
  const place = ordered || late.length > 0 ? 'default tier' : 'Cilium';
  if (early.length > 0)
    lines.push(
      `    ${d.rules.length > 0 || late.length > 0 ? `${place}, before NetworkPolicy${ordered ? ' (order 1000)' : ''}` : place}:`,
    );
  for (const t of early) lines.push(tierLine(name, t, style));
  // Under a tier heading, NetworkPolicy's rules need their own, or they read as the tier's.
  if (d.rules.length > 0 && d.tiers.length > 0) lines.push(`    NetworkPolicy:`);
  for (const rule of d.rules) {
    lines.push(
      `    - ${rule.description} ${style.dim(`(${rule.policy} ${name}[${rule.rule}]; ${listPeers(rule.peers)})`)}` +
        (rule.allowsNothing ? style.warn(` — allows nothing: ${rule.allowsNothing}`) : ''),
    );
  }
  if (late.length > 0) lines.push(`    default tier, after NetworkPolicy:`);
  for (const t of late) lines.push(tierLine(name, t, style));
  tierBlocks(after, 'after');
  return lines;
}

type TierRule = DirectionExplanation['tiers'][number];

function heading(tier: string, place: 'before' | 'after', isolated: boolean): string {
  if (tier === ADMIN_TIER) return 'Admin tier, before NetworkPolicy';
  if (tier === BASELINE_TIER)
    return `Baseline tier, ${isolated ? 'not reached: NetworkPolicy decides' : 'since no NetworkPolicy isolates it'}`;
  if (tier === PROFILES_TIER)
    return `profiles, ${isolated ? 'not reached: the default tier decides' : 'last'}`;
  // Calico's tiers come before or after its default tier, where NetworkPolicy sits with or without any.
  return `tier ${tier}, ${place} the default tier`;
}

function tierLine(name: string, t: TierRule, style: Style): string {
  const order = t.order !== undefined ? `, order ${t.order}` : '';
  const rule = `${t.policy} ${t.label ?? `${name}[${t.rule}]`}${t.name ? ` "${t.name}"` : ''}${order}`;
  return `    - ${t.description} ${style.dim(`(${rule}; ${listPeers(t.peers)})`)}`;
}

function listPeers(peers: EndpointList): string {
  return peers.length === 0
    ? 'matches no endpoint in the input'
    : `matches ${peers.first(MAX_LISTED_PEERS).join(', ')}${peers.length > MAX_LISTED_PEERS ? ` and ${peers.length - MAX_LISTED_PEERS} more` : ''}`;
}
