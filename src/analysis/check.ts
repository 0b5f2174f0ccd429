/**
 * `check`: the verdict for one connection between two resolved addresses. When a side names a
 * workload with several pods, every pod pair is judged — once per pair of equivalence classes,
 * since pods no policy can tell apart get the same answer — and the connection counts as allowed
 * only when every pod pair is; the explanation shown is a denied pair's when there is one.
 */
import type { Cluster, Endpoint, Protocol } from '../model/types.ts';
import {
  ALL_PORTS,
  allowedPorts,
  EMPTY_PORTS,
  evaluate,
  indexCluster,
  intersectPorts,
  isNoPorts,
  portSetHas,
  resolveNamedPort,
  unionPorts,
  type PortSet,
} from '../semantics/index.ts';
import { subtractPorts } from '../model/port-set.ts';
import { targetOn } from './services.ts';
import type { Address, EvaluateOptions, Verdict } from '../semantics/types.ts';
import { endpointClasses } from './equivalence.ts';
import { addressText, type Resolution } from './resolve-address.ts';
import { droppedPoliciesFor } from './dropped-policies.ts';
import type { CheckResult, PodPairVerdict } from './types.ts';

type Resolved = Extract<Resolution, { ok: true }>;

export interface CheckRequest {
  readonly from: Resolved;
  readonly to: Resolved;
  readonly protocol: Protocol;
  /** The destination port; for a named port, the number it has on the first destination. */
  readonly port: number;
  /** The port as the user gave it, when it was a name (resolved again for each destination pod). */
  readonly portName?: string;
}

export function checkConnection(
  cluster: Cluster,
  request: CheckRequest,
  options: EvaluateOptions,
): CheckResult {
  const index = indexCluster(cluster);
  const { from, to, protocol, portName } = request;
  const sources = sideAddresses(from);
  const destinations = sideAddresses(to);
  // An address given as an IP fixes the family (the CLI refuses two of different families).
  const family = from.family ?? to.family;
  const inFamily = family !== undefined ? { family } : {};
  const judge = (src: Address, dst: Address): Verdict | undefined => {
    if (isSelf(src, dst)) return undefined;
    const port = portName && dst !== to.address ? resolveNamedPort(dst, portName, protocol) : request.port;
    return port === undefined
      ? undefined
      : evaluate(index, { src, dst, protocol, port, ...inFamily }, options);
  };
  const asGiven = (): Verdict =>
    evaluate(
      index,
      { src: from.address, dst: to.address, protocol, port: request.port, ...inFamily },
      options,
    );
  const endpointsOf = (addresses: readonly Address[]): Endpoint[] =>
    addresses.flatMap((a) => (a.kind === 'endpoint' ? [a.endpoint] : []));
  const dropped = [
    ...droppedPoliciesFor(cluster, endpointsOf(sources), 'egress'),
    ...droppedPoliciesFor(cluster, endpointsOf(destinations), 'ingress'),
  ];
  const base = {
    from: from.workload?.label ?? addressText(from.address),
    to: to.workload?.label ?? addressText(to.address),
    protocol,
    port: request.port,
    ...(portName ? { portName } : {}),
    // Named in the answer only where it matters: a dual-stack endpoint judged over one family.
    ...(family !== undefined && [...sources, ...destinations].some(dualStack) ? { family } : {}),
    ...(dropped.length ? { droppedPolicies: dropped } : {}),
  };
  if (sources.length === 1 && destinations.length === 1) {
    const verdict = asGiven();
    return isSelf(from.address, to.address)
      ? { ...base, self: true, verdict: { ...verdict, allowed: true } }
      : { ...base, verdict };
  }

  const weighted = representatives(cluster, sources, destinations);
  const pairs: PodPairVerdict[] = [];
  let shown: Verdict | undefined;
  for (const { src, dst, count } of weighted) {
    const verdict = judge(src, dst);
    // A pod's pair with itself never leaves it: allowed whatever policy says.
    const allowed = isSelf(src, dst) || (verdict?.allowed ?? false);
    pairs.push({ from: addressText(src), to: addressText(dst), allowed, pairs: count });
    if (verdict && (!shown || (shown.allowed && !allowed))) shown = verdict;
  }
  const verdict = shown ?? asGiven();
  const allowedPairs = pairs.filter((p) => p.allowed).reduce((n, p) => n + p.pairs, 0);
  const total = pairs.reduce((n, p) => n + p.pairs, 0);
  return {
    ...base,
    verdict: allowedPairs === total ? verdict : { ...verdict, allowed: false },
    podPairs: { allowed: allowedPairs, total, judged: pairs },
  };
}

/** A pod to itself (its own address): the packets stay in its network namespace. */
const isSelf = (src: Address, dst: Address): boolean =>
  src.kind === 'endpoint' && dst.kind === 'endpoint' && src.endpoint === dst.endpoint;

const dualStack = (a: Address): boolean =>
  a.kind === 'endpoint' && new Set(a.endpoint.ips.map((ip) => ip.family)).size > 1;

function sideAddresses(side: Resolved): Address[] {
  return side.workload
    ? side.workload.members.map((endpoint) => ({ kind: 'endpoint', endpoint }))
    : [side.address];
}

/** One source and destination per pair of equivalence classes, with how many pod pairs it stands for. */
function representatives(
  cluster: Cluster,
  sources: readonly Address[],
  destinations: readonly Address[],
): { src: Address; dst: Address; count: number }[] {
  const endpoints = [...sources, ...destinations]
    .filter((a): a is Extract<Address, { kind: 'endpoint' }> => a.kind === 'endpoint')
    .map((a) => a.endpoint);
  const { classOf } = endpointClasses(cluster, endpoints);
  const classByEndpoint = new Map<Endpoint, number>(endpoints.map((e, i) => [e, classOf[i] as number]));
  const classKey = (a: Address): string =>
    a.kind === 'endpoint' ? `c${classByEndpoint.get(a.endpoint)}` : `ip${addressText(a)}`;
  const byPair = new Map<string, { src: Address; dst: Address; count: number }>();
  for (const src of sources)
    for (const dst of destinations) {
      const key = `${classKey(src)}>${classKey(dst)}`;
      const known = byPair.get(key);
      if (known) known.count++;
      else byPair.set(key, { src, dst, count: 1 });
    }
  return [...byPair.values()];
}

/** `check` without `--port`: the ports allowed, as the matrix lists them. */
export interface PortsCheckResult {
  readonly from: string;
  readonly to: string;
  /** Allowed for every pod pair (a pod to itself: everything). */
  readonly ports: PortSet;
  /** Allowed for some pod pairs only (beyond `ports`), when the sides name workloads. */
  readonly partialPorts?: PortSet;
  /** A pod to itself: every port, whatever policy says (its packets never leave it). */
  readonly self?: true;
  /** `--to` named a Service: each of its ports, and whether every backend allows it on its target port. */
  readonly servicePorts?: readonly {
    readonly port: number;
    readonly name?: string;
    readonly protocol: Protocol;
    readonly targetPort: number | string;
    readonly allowed: boolean;
  }[];
}

export function checkPorts(
  cluster: Cluster,
  request: Pick<CheckRequest, 'from' | 'to'>,
  options: EvaluateOptions,
): PortsCheckResult {
  const index = indexCluster(cluster);
  const { from, to } = request;
  const sources = sideAddresses(from);
  const destinations = sideAddresses(to);
  let every = ALL_PORTS;
  let some = EMPTY_PORTS;
  for (const src of sources)
    for (const dst of destinations) {
      const ports = isSelf(src, dst) ? ALL_PORTS : allowedPorts(index, src, dst, options);
      every = intersectPorts(every, ports);
      some = unionPorts(some, ports);
    }
  const partial = subtractPorts(some, every);
  const service = to.service;
  const servicePorts = service?.ports.map((port) => {
    const allowed = sources.every((src) =>
      destinations.every((dst) => {
        if (dst.kind !== 'endpoint') return false;
        const target = targetOn(port, dst.endpoint);
        return (
          target !== undefined &&
          portSetHas(
            isSelf(src, dst) ? ALL_PORTS : allowedPorts(index, src, dst, options),
            port.protocol,
            target,
          )
        );
      }),
    );
    return {
      port: port.port,
      ...(port.name ? { name: port.name } : {}),
      protocol: port.protocol,
      targetPort: port.targetPort,
      allowed,
    };
  });
  return {
    from: from.workload?.label ?? addressText(from.address),
    to: to.workload?.label ?? addressText(to.address),
    ports: every,
    ...(isNoPorts(partial) ? {} : { partialPorts: partial }),
    ...(servicePorts ? { servicePorts } : {}),
    ...(sources.every((src) => destinations.every((dst) => isSelf(src, dst))) ? { self: true as const } : {}),
  };
}
