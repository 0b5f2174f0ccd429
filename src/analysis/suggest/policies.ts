/**
 * The suggested NetworkPolicies, as plain objects ready to print: per namespace in scope a
 * default deny (both directions) and DNS egress to kube-dns, and per unit that was seen talking
 * one policy whose rules are exactly what it was seen doing — peers by their unit's labels and
 * their namespace's name (`kubernetes.io/metadata.name`), addresses outside the cluster as /32
 * (/128) ipBlocks, ports by number and protocol. Peers with the same ports share a rule.
 */
import { NAMESPACE_NAME_LABEL, type Labels, type Protocol } from '../../model/types.ts';
import { compareStrings, makeSelector, selectorMatches } from '../../model/selector.ts';
import type { Endpoint } from '../../model/types.ts';
import type { Observation, ObservedSide, SuggestedPolicy, Unit } from './types.ts';

/** Where DNS is served: kube-dns's conventional namespace and label (CoreDNS keeps them). */
export const DNS_NAMESPACE = 'kube-system';
const DNS_LABELS: Labels = { 'k8s-app': 'kube-dns' };
export const DNS_PORTS: readonly { protocol: Protocol; port: number }[] = [
  { protocol: 'UDP', port: 53 },
  { protocol: 'TCP', port: 53 },
];
const DNS_SELECTOR = makeSelector(DNS_LABELS, []);

/** True for a kube-dns pod: DNS egress reaches it. */
export function isDnsServer(endpoint: Endpoint): boolean {
  return endpoint.namespace === DNS_NAMESPACE && selectorMatches(DNS_SELECTOR, endpoint.labels);
}

function isDnsPort(protocol: Protocol, port: number): boolean {
  return port === 53 && (protocol === 'UDP' || protocol === 'TCP');
}

/** What one unit was seen doing, per direction: peer → `PROTOCOL/port` keys. */
interface UnitTraffic {
  readonly ingress: Map<string, Set<string>>;
  readonly egress: Map<string, Set<string>>;
  flows: number;
  connections: number;
}

interface Traffic {
  readonly perUnit: ReadonlyMap<Unit, UnitTraffic>;
  /** Unit-to-unit ports seen (source id → destination id → port keys): what verification expects. */
  readonly pairs: ReadonlyMap<number, ReadonlyMap<number, ReadonlySet<string>>>;
  /** Observations between two addresses outside the cluster: nothing to write. */
  readonly outside: number;
  /** Units the policies in scope are written for or name as peers. */
  readonly written: ReadonlySet<Unit>;
}

interface TrafficOptions {
  readonly inScope: (namespace: string) => boolean;
  readonly dns: boolean;
  readonly unitOf: ReadonlyMap<Endpoint, Unit>;
}

const portKey = (protocol: Protocol, port: number): string => `${protocol}/${port}`;

/** Gathers the observations per unit and direction. */
export function gatherTraffic(observations: readonly Observation[], options: TrafficOptions): Traffic {
  const perUnit = new Map<Unit, UnitTraffic>();
  const pairs = new Map<number, Map<number, Set<string>>>();
  const written = new Set<Unit>();
  let outside = 0;
  const trafficOf = (unit: Unit): UnitTraffic => {
    let t = perUnit.get(unit);
    if (!t) {
      t = { ingress: new Map(), egress: new Map(), flows: 0, connections: 0 };
      perUnit.set(unit, t);
    }
    return t;
  };
  const unitOfSide = (side: ObservedSide): Unit | undefined =>
    side.kind === 'endpoint' ? options.unitOf.get(side.endpoint) : undefined;
  const peerKeyOf = (side: ObservedSide, unit: Unit | undefined): string =>
    unit ? `unit:${unit.id}` : `ip:${side.kind === 'ip' ? side.text : ''}`;
  const add = (map: Map<string, Set<string>>, peer: string, key: string): void => {
    const set = map.get(peer);
    if (set) set.add(key);
    else map.set(peer, new Set([key]));
  };
  for (const o of observations) {
    // A pod to itself: the packets stay in its network namespace, no policy applies (check says so too).
    if (o.src.kind === 'endpoint' && o.dst.kind === 'endpoint' && o.src.endpoint === o.dst.endpoint) continue;
    const srcUnit = unitOfSide(o.src);
    const dstUnit = unitOfSide(o.dst);
    if (!srcUnit && !dstUnit) {
      outside++;
      continue;
    }
    const key = portKey(o.protocol, o.port);
    const toDns =
      options.dns &&
      o.dst.kind === 'endpoint' &&
      isDnsServer(o.dst.endpoint) &&
      isDnsPort(o.protocol, o.port);
    for (const [unit, direction, peer, peerUnit] of [
      [srcUnit, 'egress', o.dst, dstUnit],
      [dstUnit, 'ingress', o.src, srcUnit],
    ] as const) {
      if (!unit) continue;
      const t = trafficOf(unit);
      // A unit talking to itself counts the flow once.
      if (direction === 'egress' || unit !== srcUnit) {
        t.flows++;
        t.connections += o.count;
      }
      // DNS to kube-dns is allowed namespace-wide already (allow-dns, dns-from-cluster).
      if (toDns && (direction === 'egress' || options.inScope(DNS_NAMESPACE))) continue;
      if (!options.inScope(unit.namespace)) continue;
      add(t[direction], peerKeyOf(peer, peerUnit), key);
      written.add(unit);
      if (peerUnit) written.add(peerUnit);
    }
    if (srcUnit && dstUnit) {
      let row = pairs.get(srcUnit.id);
      if (!row) pairs.set(srcUnit.id, (row = new Map<number, Set<string>>()));
      const set = row.get(dstUnit.id);
      if (set) set.add(key);
      else row.set(dstUnit.id, new Set([key]));
    }
  }
  return { perUnit, pairs, outside, written };
}

/** The policies for the namespaces in scope. */
export function buildPolicies(
  units: readonly Unit[],
  traffic: Traffic,
  namespaces: readonly string[],
  options: { readonly dns: boolean; readonly dnsServers: boolean },
): SuggestedPolicy[] {
  const byId = new Map(units.map((u) => [u.id, u]));
  const out: SuggestedPolicy[] = [];
  for (const namespace of namespaces) {
    const used = new Set<string>();
    const name = (wanted: string): string => {
      let n = wanted.slice(0, 240);
      for (let i = 2; used.has(n); i++) n = `${wanted.slice(0, 240)}-${i}`;
      used.add(n);
      return n;
    };
    out.push({
      comment: `${namespace}: nothing in or out but what follows`,
      object: policy(namespace, name('default-deny'), {}, ['Ingress', 'Egress'], undefined, undefined),
    });
    if (options.dns) {
      out.push({
        comment: `${namespace}: every pod may ask kube-dns (${DNS_NAMESPACE}, k8s-app=kube-dns)`,
        object: policy(namespace, name('allow-dns'), {}, ['Egress'], undefined, [
          { to: [peerTo(namespace, DNS_NAMESPACE, DNS_LABELS)], ports: portsOf(DNS_PORTS) },
        ]),
      });
      if (namespace === DNS_NAMESPACE && options.dnsServers) {
        out.push({
          comment: 'kube-dns answers every pod of the cluster',
          object: policy(
            namespace,
            name('dns-from-cluster'),
            DNS_LABELS,
            ['Ingress'],
            [{ from: [{ namespaceSelector: {} }], ports: portsOf(DNS_PORTS) }],
          ),
        });
      }
    }
    const seen = units.filter((u) => u.namespace === namespace && traffic.perUnit.has(u));
    for (const unit of seen.sort((a, b) => compareStrings(a.name, b.name))) {
      const t = traffic.perUnit.get(unit) as UnitTraffic;
      const ingress = rules(t.ingress, namespace, byId, 'from');
      const egress = rules(t.egress, namespace, byId, 'to');
      if (!ingress.length && !egress.length) continue;
      const types = [...(ingress.length ? ['Ingress'] : []), ...(egress.length ? ['Egress'] : [])];
      out.push({
        comment: `${unit.workloads.join(', ')}: ${t.flows} flow${t.flows === 1 ? '' : 's'}, ${t.connections} connection${t.connections === 1 ? '' : 's'}`,
        object: policy(
          namespace,
          name(unit.name),
          unit.selector,
          types,
          ingress.length ? ingress : undefined,
          egress.length ? egress : undefined,
        ),
      });
    }
  }
  return out;
}

type Rule = Record<string, unknown>;

function policy(
  namespace: string,
  name: string,
  selector: Labels,
  policyTypes: readonly string[],
  ingress: readonly Rule[] | undefined,
  egress?: readonly Rule[],
): Record<string, unknown> {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name, namespace },
    spec: {
      podSelector: podSelector(selector),
      policyTypes: [...policyTypes],
      ...(ingress ? { ingress: [...ingress] } : {}),
      ...(egress ? { egress: [...egress] } : {}),
    },
  };
}

function podSelector(labels: Labels): Record<string, unknown> {
  return Object.keys(labels).length ? { matchLabels: { ...labels } } : {};
}

/** A peer in `namespace` as seen from a policy in `from`: by pod labels, and by namespace name when it is another. */
function peerTo(from: string, namespace: string, labels: Labels): Record<string, unknown> {
  return from === namespace
    ? { podSelector: podSelector(labels) }
    : {
        namespaceSelector: { matchLabels: { [NAMESPACE_NAME_LABEL]: namespace } },
        podSelector: podSelector(labels),
      };
}

function portsOf(ports: readonly { protocol: Protocol; port: number }[]): Record<string, unknown>[] {
  return ports.map((p) => ({ protocol: p.protocol, port: p.port }));
}

const PROTOCOL_ORDER: Record<string, number> = { TCP: 0, UDP: 1, SCTP: 2 };

/** Peers grouped by the ports they use: one rule per distinct port list, in peer order. */
function rules(
  peers: ReadonlyMap<string, ReadonlySet<string>>,
  namespace: string,
  units: ReadonlyMap<number, Unit>,
  field: 'from' | 'to',
): Rule[] {
  const sortedPorts = (keys: ReadonlySet<string>): { protocol: Protocol; port: number }[] =>
    [...keys]
      .map((k) => {
        const [protocol, port] = k.split('/') as [Protocol, string];
        return { protocol, port: Number(port) };
      })
      .sort(
        (a, b) =>
          (PROTOCOL_ORDER[a.protocol] as number) - (PROTOCOL_ORDER[b.protocol] as number) || a.port - b.port,
      );
  const groups = new Map<
    string,
    { ports: { protocol: Protocol; port: number }[]; peers: { sort: string; peer: Rule }[] }
  >();
  for (const [peerKey, keys] of peers) {
    if (keys.size === 0) continue;
    const ports = sortedPorts(keys);
    const id = ports.map((p) => portKey(p.protocol, p.port)).join(',');
    let group = groups.get(id);
    if (!group) groups.set(id, (group = { ports, peers: [] }));
    group.peers.push(peerObject(peerKey, namespace, units));
  }
  return [...groups.values()]
    .map((g) => {
      g.peers.sort((a, b) => compareStrings(a.sort, b.sort));
      return {
        sort: g.peers[0]?.sort ?? '',
        rule: { [field]: g.peers.map((p) => p.peer), ports: portsOf(g.ports) },
      };
    })
    .sort((a, b) => compareStrings(a.sort, b.sort))
    .map((r) => r.rule);
}

function peerObject(
  peerKey: string,
  namespace: string,
  units: ReadonlyMap<number, Unit>,
): { sort: string; peer: Rule } {
  if (peerKey.startsWith('ip:')) {
    const ip = peerKey.slice(3);
    // Sorted after the pods: addresses outside the cluster come last.
    return { sort: `~${ip}`, peer: { ipBlock: { cidr: `${ip}/${ip.includes(':') ? 128 : 32}` } } };
  }
  const unit = units.get(Number(peerKey.slice(5))) as Unit;
  return {
    sort: `${unit.namespace === namespace ? '' : unit.namespace}/${unit.name}`,
    peer: peerTo(namespace, unit.namespace, unit.selector),
  };
}
