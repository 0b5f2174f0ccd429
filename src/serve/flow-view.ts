/**
 * What serve's flow views show: observed flow records with their deciding rules in `check`'s
 * words, the `/api/check` question each one is (so a click explains it the way an arrow of the
 * graph is explained), and where serve's own answer — the reference evaluator over the input
 * serve reads — names another rule than the agent did for a side the agent judged: said on the
 * flow, not hidden (the manifests read may not be what the agents enforce). The graph's marks
 * come from here too: which arrows carried observed traffic, and which observed flows were denied.
 */
import type { Endpoint } from '../model/types.ts';
import { formatIp } from '../net/ip.ts';
import { groupEndpoints } from '../analysis/index.ts';
import {
  decidingRule,
  decidingRuleText,
  matchesFlow,
  stagedView,
  type DecidingRule,
  type FlowEndpoint,
  type FlowFilter,
  type FlowRecord,
} from '../flows/index.ts';
import type { ConnectivityGraph } from '../analysis/index.ts';
import type { PortQuery } from '../analysis/types.ts';
import type { FlowJudgement, ObservedOnGraph } from './api-types.ts';
import { RequestError, type Snapshot } from './snapshot.ts';

/** A record as `/api/flows` answers it: the record itself, and what serve makes of it. */
type ServedRecord = FlowRecord & FlowJudgement;

type Judgement = Pick<FlowJudgement, 'check' | 'disagreement'>;

/** Per snapshot: its pods by name, and each flow's judgement (records repeat the same question). */
const judgements = new WeakMap<Snapshot, { pods: Map<string, Endpoint>; byFlow: Map<string, Judgement> }>();

function cacheOf(snapshot: Snapshot): { pods: Map<string, Endpoint>; byFlow: Map<string, Judgement> } {
  let cache = judgements.get(snapshot);
  if (!cache) {
    const pods = new Map<string, Endpoint>();
    for (const endpoint of snapshot.input.cluster.endpoints)
      if (endpoint.kind === 'Pod') pods.set(endpoint.id, endpoint);
    cache = { pods, byFlow: new Map() };
    judgements.set(snapshot, cache);
  }
  return cache;
}

const sameRule = (a: DecidingRule, b: DecidingRule | undefined): boolean =>
  b !== undefined &&
  a.tier === b.tier &&
  a.outcome === b.outcome &&
  a.policy === b.policy &&
  a.rule === b.rule;

/** Serve's `check` of the flow's connection, compared side by side with what the agent named. */
function judge(snapshot: Snapshot, record: FlowRecord): Judgement {
  const cache = cacheOf(snapshot);
  const decided = record.decidedBy.map(decidingRuleText).join(';');
  const key = `${record.src.pod ?? ''} ${record.src.ip} ${record.dst.pod ?? ''} ${record.dst.ip} ${record.protocol}/${record.port} ${decided}`;
  const known = cache.byFlow.get(key);
  if (known) return known;
  const notes: string[] = [];
  const name = (endpoint: FlowEndpoint): string => {
    if (endpoint.pod === undefined || cache.pods.has(endpoint.pod)) return endpoint.pod ?? endpoint.ip;
    notes.push(`serve's input has no pod ${endpoint.pod} (judged by its address ${endpoint.ip})`);
    return endpoint.ip;
  };
  const check = {
    from: name(record.src),
    to: name(record.dst),
    port: String(record.port),
    protocol: record.protocol,
  };
  let judgement: Judgement;
  try {
    const result = snapshot.check(check.from, check.to, check.port, check.protocol);
    // A record that names no rule (a hand-written file) is held to its verdict alone.
    const verdict = result.verdict.allowed ? 'allowed' : 'denied';
    if (record.decidedBy.length === 0 && record.verdict !== verdict)
      notes.push(`the record says ${record.verdict}; serve's input: ${verdict}`);
    for (const agents of record.decidedBy) {
      const ours = decidingRule(result.verdict[agents.direction]);
      if (!sameRule(agents, ours))
        notes.push(
          `the agent: ${decidingRuleText(agents)} — serve's input: ${ours ? decidingRuleText(ours) : `${agents.direction}: no rule decides it`}`,
        );
    }
    judgement = { check, ...(notes.length ? { disagreement: notes.join('; ') } : {}) };
  } catch (error) {
    if (!(error instanceof RequestError)) throw error;
    notes.push(`serve cannot judge it: ${error.message}`);
    judgement = { check: null, disagreement: notes.join('; ') };
  }
  cache.byFlow.set(key, judgement);
  return judgement;
}

/** The text search of the flow view: names, addresses, nodes, rules, `TCP/5432`. */
function matchesText(flow: ServedRecord, text: string): boolean {
  const haystack = [
    flow.src.pod,
    flow.src.ip,
    flow.dst.pod,
    flow.dst.ip,
    flow.node,
    `${flow.protocol}/${flow.port}`,
    flow.verdict,
    flow.decidedText,
    flow.stagedText,
    flow.disagreement,
    flow.mismatch,
  ]
    .filter((s): s is string => s !== undefined)
    .join('\n')
    .toLowerCase();
  return haystack.includes(text);
}

/**
 * The flows that `filter` and the text `search` select, each served with serve's judgement.
 * `filter.staged`: what the staged policies would break or open, judged over every record of a
 * connection as `palisade flows --staged` judges it (the other filters select among those).
 * Denied first, then the most connections.
 */
export function servedFlows(
  snapshot: Snapshot,
  records: readonly FlowRecord[],
  filter: FlowFilter,
  search: string,
): ServedRecord[] {
  const { staged, ...rest } = filter;
  const chosen = (staged ? stagedView(records) : records).filter((r) => matchesFlow(r, rest));
  const text = search.trim().toLowerCase();
  const served = chosen
    .map((record): ServedRecord => {
      const judgement = judge(snapshot, record);
      return {
        ...record,
        decidedText: record.decidedBy.length
          ? record.decidedBy.map(decidingRuleText).join('; ')
          : 'the record names no rule',
        ...(record.staged ? { stagedText: record.staged.decidedBy.map(decidingRuleText).join('; ') } : {}),
        ...judgement,
      };
    })
    .filter((flow) => text === '' || matchesText(flow, text));
  return served.sort(
    (a, b) => (a.verdict === b.verdict ? 0 : a.verdict === 'denied' ? -1 : 1) || b.count - a.count,
  );
}

/**
 * The observed flows on a graph: each pair of drawn nodes the records connect, by the node their
 * pods are drawn in (a workload, or its namespace when the graph is by namespace); only records on
 * the graph's port when it has a numeric one.
 */
export function observedOnGraph(
  snapshot: Snapshot,
  graph: ConnectivityGraph,
  records: readonly FlowRecord[],
  query: PortQuery | undefined,
): ObservedOnGraph {
  const cluster = snapshot.input.cluster;
  const { pods } = cacheOf(snapshot);
  const ids = new Set(graph.nodes.map((n) => n.id));
  const workloadOf = new Map<Endpoint, string>();
  for (const group of groupEndpoints(cluster.endpoints, 'workload'))
    for (const member of group.members) workloadOf.set(member, group.label);
  const byIp = new Map<string, Endpoint>();
  for (const endpoint of cluster.endpoints) for (const ip of endpoint.ips) byIp.set(formatIp(ip), endpoint);
  const nodeOf = (end: FlowEndpoint): string | undefined => {
    const endpoint = (end.pod !== undefined ? pods.get(end.pod) : undefined) ?? byIp.get(end.ip);
    if (!endpoint) return undefined;
    const workload = `ep:${workloadOf.get(endpoint) ?? ''}`;
    if (ids.has(workload)) return workload;
    const namespace = `ns:${endpoint.namespace}`;
    return ids.has(namespace) ? namespace : undefined;
  };
  const edges = new Map<string, number>();
  graph.edges.forEach((e, i) => edges.set(`${e.from}\u0000${e.to}`, i));
  const pairs = new Map<string, { from: string; to: string; allowed: number; denied: number }>();
  let unplaced = 0;
  for (const record of records) {
    if (
      query &&
      (record.protocol !== query.protocol || (typeof query.port === 'number' && record.port !== query.port))
    )
      continue;
    const from = nodeOf(record.src);
    const to = nodeOf(record.dst);
    if (from === undefined || to === undefined) {
      unplaced++;
      continue;
    }
    const key = `${from}\u0000${to}`;
    let pair = pairs.get(key);
    if (!pair) pairs.set(key, (pair = { from, to, allowed: 0, denied: 0 }));
    if (record.verdict === 'allowed') pair.allowed += record.count;
    else pair.denied += record.count;
  }
  return {
    pairs: [...pairs.entries()].map(([key, pair]) => {
      const edge = edges.get(key);
      return edge === undefined ? pair : { ...pair, edge };
    }),
    unplaced,
  };
}
