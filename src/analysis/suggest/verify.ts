/**
 * Verification of a suggestion with the reference evaluator's answers: the suggested objects are
 * decoded as any input is (so what is checked is what is printed), put in place of the input's
 * policies, and the matrix of the cluster's pods (by equivalence class, as `matrix` computes it)
 * is compared with what was observed at the suggestion's granularity — for every pod pair with
 * an end in scope, the ports its units were seen using, plus DNS to kube-dns. Both ways: every
 * pair of classes the suggestion lets connect must have been expected, with the same ports, and
 * every expected pair must connect. Cost: the matrix, plus the observed unit pairs.
 */
import { loadFromObjects } from '../../ingest/index.ts';
import type { Cluster, Endpoint } from '../../model/types.ts';
import {
  ALL_PORTS,
  EMPTY_PORTS,
  formatPortSet,
  intersectPorts,
  isNoPorts,
  portSetHas,
  portSetOf,
  subtractPorts,
  unionPorts,
  type PortSet,
} from '../../model/port-set.ts';
import { connectionFamilies } from '../../semantics/index.ts';
import { computeMatrix } from '../matrix.ts';
import { DNS_NAMESPACE, DNS_PORTS, isDnsServer } from './policies.ts';
import type { Mismatch, ObservedSide, Prohibition, SuggestedPolicy, Unit, Verification } from './types.ts';

interface VerifyInput {
  readonly cluster: Cluster;
  readonly policies: readonly SuggestedPolicy[];
  readonly units: readonly Unit[];
  readonly unitOf: ReadonlyMap<Endpoint, Unit>;
  readonly pairs: ReadonlyMap<number, ReadonlyMap<number, ReadonlySet<string>>>;
  readonly inScope: (namespace: string) => boolean;
  readonly dns: boolean;
  readonly prohibitions: readonly Prohibition[];
}

/** At most this many mismatches are listed (a wrong suggestion would otherwise list pod pairs by the million). */
const MISMATCHES_LISTED = 50;

export function verifySuggestion(input: VerifyInput): Verification {
  const started = performance.now();
  const decoded = loadFromObjects(
    input.policies.map((p) => p.object),
    '<suggested>',
  );
  const broken = decoded.diagnostics.filter((d) => d.severity === 'error');
  if (broken.length)
    throw new Error(`suggested policies do not decode: ${broken.map((d) => d.message).join('; ')}`);
  const cluster: Cluster = {
    ...input.cluster,
    policies: decoded.cluster.policies,
    clusterPolicies: [],
    rejectedPolicies: [],
  };
  const endpoints = input.cluster.endpoints.filter((e) => !e.hostNetwork && input.unitOf.has(e));
  const matrix = computeMatrix(cluster, { queries: [], endpoints, engine: 'auto' });
  const answers = matrix.classes as NonNullable<typeof matrix.classes>;
  const { classOf } = answers;

  // What each class stands for: its members' units (a class may hold several units that nothing
  // tells apart, such as workloads never seen talking).
  const classUnits = new Map<number, Set<Unit>>();
  const unitClasses = new Map<Unit, Set<number>>();
  endpoints.forEach((e, i) => {
    const cls = classOf[i] as number;
    const unit = input.unitOf.get(e) as Unit;
    let units = classUnits.get(cls);
    if (!units) classUnits.set(cls, (units = new Set()));
    units.add(unit);
    let classes = unitClasses.get(unit);
    if (!classes) unitClasses.set(unit, (classes = new Set()));
    classes.add(cls);
  });
  const representativeOf = (cls: number): Endpoint => answers.representatives[cls] as Endpoint;

  const observedCache = new Map<string, PortSet>();
  const observed = (from: Unit, to: Unit): PortSet => {
    const key = `${from.id}>${to.id}`;
    let set = observedCache.get(key);
    if (!set) {
      const keys = input.pairs.get(from.id)?.get(to.id);
      set = keys
        ? portSetOf(
            [...keys].map((k) => {
              const [protocol, port] = k.split('/') as ['TCP' | 'UDP' | 'SCTP', string];
              return { protocol, from: Number(port), to: Number(port) };
            }),
          )
        : EMPTY_PORTS;
      observedCache.set(key, set);
    }
    return set;
  };
  const dnsPorts = portSetOf(DNS_PORTS.map((p) => ({ protocol: p.protocol, from: p.port, to: p.port })));
  /** The ports a pod of `from` (class `fromClass`) should reach a pod of `to` (class `toClass`) on; undefined when neither end is in scope. */
  const expected = (from: Unit, to: Unit, fromClass: number, toClass: number): PortSet | undefined => {
    const egressScoped = input.inScope(from.namespace);
    const ingressScoped = input.inScope(to.namespace);
    if (!egressScoped && !ingressScoped) return undefined;
    // Pods of one unit may differ in address family: those sharing none with the peer never connect.
    const families = connectionFamilies(
      { kind: 'endpoint', endpoint: representativeOf(fromClass) },
      { kind: 'endpoint', endpoint: representativeOf(toClass) },
    ).families;
    if (families.length === 0) return EMPTY_PORTS;
    const seen = observed(from, to);
    const dns = input.dns && isDnsServer(representativeOf(toClass));
    const egress = egressScoped ? (dns ? unionPorts(seen, dnsPorts) : seen) : ALL_PORTS;
    const ingress = ingressScoped
      ? dns && input.inScope(DNS_NAMESPACE)
        ? unionPorts(seen, dnsPorts)
        : seen
      : ALL_PORTS;
    return intersectPorts(egress, ingress);
  };

  const mismatches: Mismatch[] = [];
  let mismatchCount = 0;
  const compared = new Set<string>();
  const compare = (a: number, b: number, got: PortSet): void => {
    const pairKey = `${a}>${b}`;
    if (compared.has(pairKey)) return;
    compared.add(pairKey);
    for (const from of classUnits.get(a) ?? [])
      for (const to of classUnits.get(b) ?? []) {
        const want = expected(from, to, a, b);
        if (!want) continue;
        const extra = subtractPorts(got, want);
        const missing = subtractPorts(want, got);
        if (isNoPorts(extra) && isNoPorts(missing)) continue;
        mismatchCount++;
        if (mismatches.length < MISMATCHES_LISTED)
          mismatches.push({
            from: from.workloads.join(', '),
            to: to.workloads.join(', '),
            extra: isNoPorts(extra) ? '' : formatPortSet(extra),
            missing: isNoPorts(missing) ? '' : formatPortSet(missing),
          });
      }
  };
  // Every pair the suggestion lets connect was expected, with its ports…
  for (let a = 0; a < answers.representatives.length; a++)
    answers.forEachReached(a, (b, ports) => compare(a, b, ports));
  // …and every pair expected connects: the units seen talking, and everyone to kube-dns.
  for (const [fromId, row] of input.pairs) {
    const from = input.units[fromId] as Unit;
    for (const toId of row.keys()) {
      const to = input.units[toId] as Unit;
      for (const a of unitClasses.get(from) ?? [])
        for (const b of unitClasses.get(to) ?? []) compare(a, b, answers.ports(a, b));
    }
  }
  if (input.dns) {
    const dnsClasses = [...classUnits.keys()].filter((c) => isDnsServer(representativeOf(c)));
    for (const a of classUnits.keys()) for (const b of dnsClasses) compare(a, b, answers.ports(a, b));
  }

  // Expectations of `allowed: false` stay denied.
  const violated: string[] = [];
  const position = input.prohibitions.length ? new Map(endpoints.map((e, i) => [e, i])) : undefined;
  const classOfSide = (side: ObservedSide): number | undefined => {
    const i = side.kind === 'endpoint' ? position?.get(side.endpoint) : undefined;
    return i === undefined ? undefined : classOf[i];
  };
  for (const p of input.prohibitions) {
    const a = classOfSide(p.src);
    const b = classOfSide(p.dst);
    // Only pod-to-pod prohibitions are decided here; the suggestion never opens anything else.
    if (a === undefined || b === undefined) continue;
    if (portSetHas(answers.ports(a, b), p.protocol, p.port)) {
      const where = p.location ? `${p.location.file}:${p.location.line}:${p.location.column}: ` : '';
      violated.push(`${where}${sideText(p.src)} → ${sideText(p.dst)} ${p.protocol}/${p.port} is allowed`);
    }
  }
  return {
    exact: mismatchCount === 0 && violated.length === 0,
    mismatches,
    violated,
    endpoints: endpoints.length,
    classes: answers.representatives.length,
    millis: performance.now() - started,
  };
}

function sideText(side: ObservedSide): string {
  return side.kind === 'endpoint' ? side.endpoint.id : side.text;
}
