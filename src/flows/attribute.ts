/**
 * Names what decided a connection the kernel judged: the kernel says what happened (allowed or
 * dropped, and by which side), the reference evaluator — over the state the node realized, the
 * same evaluator `check` asks — says which policy, rule and tier that was. Both answer the same
 * question, so they are compared on every event: where they differ (an update in flight, or a
 * bug) the record says so in `mismatch`, and its verdict stays the kernel's.
 *
 * Only the sides the reporting node judged are named: a connection between pods of two nodes is
 * judged for egress on the source's node and for ingress on the destination's. While policies are
 * staged, the same sides are evaluated once more over the cluster with them applied, and the
 * record says what that would change (`staged`).
 */
import { formatIp, parseIp, type IpAddress } from '../net/ip.ts';
import type { Cluster, Endpoint } from '../model/types.ts';
import { evaluate, indexCluster, type ClusterIndex } from '../semantics/index.ts';
import type { Address, EvaluateOptions, SideVerdict } from '../semantics/types.ts';
import { decidingRule } from './deciding-rule.ts';
import { AddressClasses } from './address-classes.ts';
import { PortClasses } from './port-classes.ts';
import { stagedChange, withStagedApplied } from './staged.ts';
import type { FlowEndpoint, FlowRecord, VerdictEvent } from './types.ts';

/** A cluster prepared for attributing many events: indexed once, addresses looked up in a map. */
export interface AttributionContext {
  readonly index: ClusterIndex;
  /** The cluster with its staged policies applied, when any are staged (`staged.ts`). */
  readonly staged?: ClusterIndex;
  /** Canonical address text → the one pod holding it (addresses shared by pods are left out). */
  readonly pods: ReadonlyMap<string, Endpoint>;
  /** Canonical address text → node name. */
  readonly nodes: ReadonlyMap<string, string>;
  readonly namespaceLabels: ReadonlyMap<string, Readonly<Record<string, string>>>;
  /** The reporting node: only its own pods' sides are named (undefined: every side). */
  readonly node?: string;
  readonly options: EvaluateOptions;
  /**
   * What the evaluator said per connection (`judgementKey`) over this context's cluster: a busy
   * node repeats the same few thousand connections, and one evaluation costs 0.1–1 ms on a large
   * cluster — 40,000 events a second would take more than a core. Bounded (MEMO_LIMIT); a new
   * context (the realized state changed) starts empty. Keyed by the port's class (`PortClasses`)
   * and an outside address's (`AddressClasses`), so a scan names a handful of connections, not
   * every one.
   */
  readonly memo: Map<string, Judgement>;
  /** The ports and the outside addresses the cluster's policies (enforced and staged) cannot tell apart. */
  readonly portClasses: PortClasses;
  readonly addressClasses: AddressClasses;
}

/** Everything of a record that depends on the connection and the cluster, not on time or count. */
type Judgement = Pick<FlowRecord, 'src' | 'dst' | 'decidedBy' | 'staged' | 'mismatch'>;

/** Most judgements kept per context (each about a kilobyte: ~10 MB at most). */
const MEMO_LIMIT = 10_000;

export function attributionContext(
  cluster: Cluster,
  node: string | undefined,
  options: EvaluateOptions = {},
): AttributionContext {
  const pods = new Map<string, Endpoint>();
  const shared = new Set<string>();
  for (const endpoint of cluster.endpoints) {
    if (endpoint.hostNetwork || endpoint.kind !== 'Pod') continue;
    for (const ip of endpoint.ips) {
      const text = formatIp(ip);
      if (pods.has(text)) shared.add(text);
      else pods.set(text, endpoint);
    }
  }
  for (const text of shared) pods.delete(text);
  const nodes = new Map<string, string>();
  for (const info of cluster.nodes.values())
    for (const ip of info.addresses) nodes.set(formatIp(ip), info.name);
  const namespaceLabels = new Map<string, Readonly<Record<string, string>>>();
  for (const [name, ns] of cluster.namespaces) namespaceLabels.set(name, ns.labels);
  const staged = withStagedApplied(cluster);
  return {
    index: indexCluster(cluster),
    ...(staged ? { staged: indexCluster(staged) } : {}),
    pods,
    nodes,
    namespaceLabels,
    ...(node !== undefined ? { node } : {}),
    options,
    memo: new Map(),
    portClasses: PortClasses.of(cluster),
    addressClasses: AddressClasses.of(cluster),
  };
}

/**
 * The records a batch of events stands for: events of one connection (source, destination,
 * protocol, port and verdict — source ports differ) become one record, counted, first and last
 * seen, each connection judged once per context. What a busy node's feed hands on (from the
 * realizer's thread, into the flow table) grows with its distinct connections, not its events,
 * and an event costs a key and a map lookup (about a microsecond).
 */
export function attributeEvents(context: AttributionContext, events: readonly VerdictEvent[]): FlowRecord[] {
  const groups = new Map<
    string,
    { event: VerdictEvent; count: number; sampled: boolean; first: number; last: number }
  >();
  for (const event of events) {
    const key = judgementKey(event);
    const weight = event.weight ?? 1;
    const sampled = event.sampled === true;
    const first = event.firstAt ?? event.at;
    const group = groups.get(key);
    if (!group) groups.set(key, { event, count: weight, sampled, first, last: event.at });
    else {
      group.count += weight;
      if (sampled) group.sampled = true;
      if (first < group.first) group.first = first;
      if (event.at > group.last) group.last = event.at;
    }
  }
  return [...groups].map(([key, group]) =>
    record(context, judgement(context, group.event, key), group.event, {
      count: group.count,
      sampled: group.sampled,
      firstSeen: isoTime(group.first),
      lastSeen: isoTime(group.last),
    }),
  );
}

/**
 * What makes two events one judgement: the connection, the kernel's verdict and the side that
 * dropped it. The addresses are written with their lengths: a reader's are canonical addresses,
 * but an event from elsewhere may hold any text, and `a|b` then `c` must not meet `a` then `b|c`.
 */
function judgementKey(event: VerdictEvent): string {
  return `${event.src.length}:${event.src}|${event.dst.length}:${event.dst}|${event.protocol}|${event.port}|${event.verdict}|${event.deniedBy ?? ''}`;
}

/** The record one event stands for (count: its weight), named by the context's evaluator. */
export function attributeEvent(context: AttributionContext, event: VerdictEvent): FlowRecord {
  const key = judgementKey(event);
  return record(context, judgement(context, event, key), event, {
    count: event.weight ?? 1,
    sampled: event.sampled === true,
    firstSeen: isoTime(event.firstAt ?? event.at),
    lastSeen: isoTime(event.at),
  });
}

/**
 * The context's judgement of the event's connection, made the first time it is asked for the
 * port's class and the outside addresses' classes. A judgement that disagrees with the kernel
 * quotes the port and addresses in its reasons, so it is kept for its own connection only (a
 * class either disagrees for every connection of it or for none). An address named by its class
 * is written into the record from the event, not from the judgement.
 */
function judgement(context: AttributionContext, event: VerdictEvent, key: string): Judgement {
  const src = classedAddress(context, event.src);
  const dst = classedAddress(context, event.dst);
  // An address that does not parse is named by nothing (no evaluation): not worth a memo entry.
  if (!src || !dst) return judge(context, event);
  const classKey = `${src.key}|${dst.key}|${event.protocol}|#${context.portClasses.classOf(event.port)}|${event.verdict}|${event.deniedBy ?? ''}`;
  let found = context.memo.get(classKey) ?? context.memo.get(key);
  if (!found) {
    found = judge(context, event);
    if (context.memo.size >= MEMO_LIMIT) context.memo.clear();
    context.memo.set(found.mismatch === undefined ? classKey : key, found);
  }
  if (src.outside === undefined && dst.outside === undefined) return found;
  return {
    ...found,
    ...(src.outside !== undefined ? { src: { ip: src.outside } } : {}),
    ...(dst.outside !== undefined ? { dst: { ip: dst.outside } } : {}),
  };
}

/**
 * How the memo knows an address: a pod's or node's by its text (`=`), an address outside the
 * cluster by its class (`#`: `AddressClasses`) — with its canonical text, which the record shows;
 * undefined when it does not parse. The marks keep the kinds of key apart (and apart from
 * `judgementKey`'s, which start with a length).
 */
function classedAddress(
  context: AttributionContext,
  text: string,
): { key: string; outside?: string } | undefined {
  if (context.pods.has(text) || context.nodes.has(text)) return { key: `=${text}` };
  const parsed = parseIp(text);
  if (!parsed.ok) return undefined;
  const canonical = formatIp(parsed.value);
  const addressClass = context.addressClasses.classOf(parsed.value, canonical);
  return addressClass === undefined ? { key: `=${text}` } : { key: `#${addressClass}`, outside: canonical };
}

function record(
  context: AttributionContext,
  judged: Judgement,
  event: VerdictEvent,
  seen: { count: number; sampled: boolean; firstSeen: string; lastSeen: string },
): FlowRecord {
  return {
    src: judged.src,
    dst: judged.dst,
    protocol: event.protocol,
    port: event.port,
    verdict: event.verdict,
    count: seen.count,
    ...(seen.sampled ? { sampled: true } : {}),
    firstSeen: seen.firstSeen,
    lastSeen: seen.lastSeen,
    ...(context.node !== undefined ? { node: context.node } : {}),
    decidedBy: judged.decidedBy,
    ...(judged.staged ? { staged: judged.staged } : {}),
    ...(judged.mismatch ? { mismatch: judged.mismatch } : {}),
  };
}

/**
 * ISO text of a time (`Date#toISOString`'s, to the millisecond). The events of a read are within
 * a second or so of each other — nftables' share the read's time, eBPF's counts carry the kernel's
 * times of each kind's first and last connection — so the text up to the second is kept and only
 * the milliseconds are written (a Date and its formatting per record were a tenth of a busy
 * reader's time).
 */
let secondAt = NaN;
let secondText = '';
function isoTime(at: number): string {
  const ms = Math.floor(at);
  const second = ms - (((ms % 1000) + 1000) % 1000);
  if (second !== secondAt) {
    secondAt = second;
    secondText = new Date(second).toISOString().slice(0, -4);
  }
  return `${secondText}${String(ms - second).padStart(3, '0')}Z`;
}

/** The evaluator's judgement of one event's connection (attributeEvent memoizes it). */
function judge(context: AttributionContext, event: VerdictEvent): Judgement {
  const src = resolve(context, event.src);
  const dst = resolve(context, event.dst);
  const base = { src: src.endpoint, dst: dst.endpoint };
  if (!src.address || !dst.address || src.family !== dst.family) return { ...base, decidedBy: [] };
  const connection = {
    src: src.address,
    dst: dst.address,
    protocol: event.protocol,
    port: event.port,
    family: src.family,
  };
  const verdict = evaluate(context.index, connection, context.options);
  const local = (endpoint: Address): boolean =>
    context.node === undefined || (endpoint.kind === 'endpoint' && endpoint.endpoint.node === context.node);
  const localSide = (side: SideVerdict): boolean =>
    local(side.direction === 'egress' ? connection.src : connection.dst);
  // One more evaluation per event, only while policies are staged.
  const staged = context.staged
    ? stagedChange(verdict, evaluate(context.staged, connection, context.options), localSide)
    : undefined;
  // Only the sides this node judged: a pod's egress on its node, a pod's ingress on its node.
  const sides = [
    ...(verdict.egress.walk.length > 0 && local(src.address) ? [verdict.egress] : []),
    ...(verdict.ingress.walk.length > 0 && local(dst.address) ? [verdict.ingress] : []),
  ];
  // A packet the kernel dropped on egress never met the ingress side's policy here: not named.
  const named = sides.filter((side) => !(side.direction === 'ingress' && event.deniedBy === 'egress'));
  const decidedBy = named.flatMap((side) => {
    const rule = decidingRule(side);
    return rule ? [rule] : [];
  });
  const mismatch = compare(event, sides);
  return { ...base, decidedBy, ...(staged ? { staged } : {}), ...(mismatch ? { mismatch } : {}) };
}

/** What differs between the kernel's judgement and the evaluator's on the sides judged here. */
function compare(event: VerdictEvent, sides: readonly SideVerdict[]): string | undefined {
  const denying = sides.find((s) => !s.allowed);
  if (event.verdict === 'allowed' && denying)
    return `the kernel allowed it; the reference evaluator denies it on ${denying.direction} (${denying.reason})`;
  if (event.verdict === 'denied') {
    if (!denying)
      return `the kernel dropped it${event.deniedBy ? ` on ${event.deniedBy}` : ''}; the reference evaluator allows it`;
    if (event.deniedBy !== undefined && !sides.some((s) => !s.allowed && s.direction === event.deniedBy))
      return `the kernel dropped it on ${event.deniedBy}; the reference evaluator denies it on ${denying.direction}`;
  }
  return undefined;
}

interface Resolved {
  readonly endpoint: FlowEndpoint;
  readonly address?: Address;
  readonly family?: 4 | 6;
}

function resolve(context: AttributionContext, text: string): Resolved {
  const parsed = parseIp(text);
  if (!parsed.ok) return { endpoint: { ip: text } };
  const ip: IpAddress = parsed.value;
  const canonical = formatIp(ip);
  const pod = context.pods.get(canonical);
  if (pod) {
    const nsLabels = context.namespaceLabels.get(pod.namespace);
    return {
      endpoint: {
        ip: canonical,
        pod: pod.id,
        labels: pod.labels,
        ...(nsLabels ? { namespaceLabels: nsLabels } : {}),
      },
      address: { kind: 'endpoint', endpoint: pod },
      family: ip.family,
    };
  }
  const node = context.nodes.get(canonical);
  return {
    endpoint: { ip: canonical },
    address: { kind: 'ip', ip, ...(node !== undefined ? { node } : {}) },
    family: ip.family,
  };
}
