/**
 * `check` for people: the verdict, then each side's decision and, when denied, why each rule of
 * the isolating policies did not match.
 */
import { describeStep, formatPortSet, isNoPorts } from '../../semantics/index.ts';
import { portSetJson } from './ports-json.ts';
import type { PortsCheckResult } from '../check.ts';
import type { SideVerdict, Verdict } from '../../semantics/types.ts';
import type { CheckResult, ServiceTarget } from '../types.ts';
import { droppedPolicyText } from '../dropped-policies.ts';
import type { Style } from './style.ts';

export function formatCheckText(result: CheckResult, style: Style): string {
  const { verdict } = result;
  const port = result.portName ? `${result.portName} (${result.port})` : String(result.port);
  const families = [verdict, ...verdict.otherFamilies].sort((a, b) => (a.family ?? 0) - (b.family ?? 0));
  const head = `${result.from} → ${result.to} ${result.protocol}/${port}: ${headWord(result, families, style)}`;
  if (result.self)
    return (
      [
        `${result.from} → ${result.to} ${result.protocol}/${port}: ${style.ok('ALLOWED')} (a pod to itself)`,
        `  a connection from a pod to its own address never leaves the pod's network namespace, so no CNI filters it and no policy applies (Kubernetes' e2e suite leaves it out too)`,
      ].join('\n') + '\n'
    );
  const lines = [head];
  // Next to the verdict: a policy the user wrote that would have applied, but is not in force.
  for (const dropped of result.droppedPolicies ?? [])
    lines.push(style.warn(`  warning: ${droppedPolicyText(dropped)}`));
  if (families.length === 1) lines.push(...verdictLines(verdict, style));
  else lines.push(...familyBlocks(families, style));
  for (const note of verdict.notes) lines.push(style.dim(`  note: ${note}`));
  if (result.service) lines.push(style.dim(`  ${serviceText(result.service)}`));
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

/** `shop/api[Service] port web 80/TCP → targetPort http: shop/api-1 (8080), shop/api-2 (no port http)`. */
function serviceText(service: ServiceTarget): string {
  const name = service.portName ? `${service.portName} ` : '';
  const behind = service.backends
    .slice(0, 6)
    .map((b) =>
      b.port === undefined
        ? `${b.pod} (no port ${String(service.targetPort)})`
        : typeof service.targetPort === 'string'
          ? `${b.pod} (${b.port})`
          : b.pod,
    );
  const more = service.backends.length > 6 ? ` and ${service.backends.length - 6} more` : '';
  return `${service.service} port ${name}${service.port}/${service.protocol} → targetPort ${String(service.targetPort)} on ${behind.join(', ')}${more}`;
}

/**
 * ALLOWED or DENIED — for a dual-stack pair whose families disagree, each family's (issue 19
 * §1.3: allowed over IPv4 only is not "denied"; `allowed` in JSON still needs every family).
 */
function headWord(result: CheckResult, families: readonly Verdict[], style: Style): string {
  const { verdict } = result;
  const word = (allowed: boolean): string => (allowed ? style.ok('ALLOWED') : style.bad('DENIED'));
  // An address given as an IP fixed the family: say which, so a dual-stack reader is not misled.
  if (result.family !== undefined) return `${word(verdict.allowed)} over IPv${result.family}`;
  if (families.every((f) => f.allowed === verdict.allowed)) return word(verdict.allowed);
  return families.map((f) => `${word(f.allowed)} over IPv${f.family}`).join(', ');
}

/** One explanation block per address family, labelled; families explained alike share one. */
function familyBlocks(families: readonly Verdict[], style: Style): string[] {
  const blocks: { families: string[]; allowed: boolean; lines: string[] }[] = [];
  for (const f of families) {
    const lines = verdictLines(f, style).map((l) => `  ${l}`);
    const same = blocks.find((b) => b.allowed === f.allowed && b.lines.join('\n') === lines.join('\n'));
    if (same) same.families.push(`IPv${f.family}`);
    else blocks.push({ families: [`IPv${f.family}`], allowed: f.allowed, lines });
  }
  return blocks.flatMap((b) => [
    `  over ${b.families.join(' and ')}: ${b.allowed ? 'allowed' : 'denied'}`,
    ...b.lines,
  ]);
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
          `           - ${miss.policy}${miss.label !== undefined ? ` ${miss.label}` : miss.rule >= 0 ? ` ${side.direction}[${miss.rule}]` : ''}: ${miss.reason}`,
        ),
      );
  return lines;
}

/** `check` without `--port`: the ports allowed, and for a Service each of its ports. */
export function formatPortsCheckText(result: PortsCheckResult, style: Style): string {
  const ports = isNoPorts(result.ports)
    ? style.bad('no port allowed')
    : style.ok(formatPortSet(result.ports));
  const partial = result.partialPorts
    ? `; ${formatPortSet(result.partialPorts)} for some pod pairs only`
    : '';
  const lines = [
    `${result.from} → ${result.to}: ${ports}${partial}${result.self ? ' (a pod to itself)' : ''}`,
  ];
  for (const p of result.servicePorts ?? [])
    lines.push(
      `  port ${p.name ? `${p.name} ` : ''}${p.port}/${p.protocol} → targetPort ${String(p.targetPort)}: ${
        p.allowed ? style.ok('allowed') : style.bad('denied')
      }`,
    );
  return lines.join('\n') + '\n';
}

/** The same as data: port sets as `{ "TCP": [[80, 80]] }`. */
export function portsCheckJson(result: PortsCheckResult): unknown {
  return {
    from: result.from,
    to: result.to,
    allowed: !isNoPorts(result.ports),
    ports: portSetJson(result.ports),
    ...(result.partialPorts ? { partialPorts: portSetJson(result.partialPorts) } : {}),
    ...(result.servicePorts ? { servicePorts: result.servicePorts } : {}),
    ...(result.self ? { self: true } : {}),
  };
}
