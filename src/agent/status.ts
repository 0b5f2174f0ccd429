/**
 * Agents' status in etcd, next to the reflected objects:
 *
 *   <root>/v1/status/nodes/<node>    the agent's StatusRecord, bound to its lease — gone (a few
 *                                    seconds after the lease's TTL) when the agent dies
 *   <root>/v1/status/agents/<node>   its AgentRegistration, without a lease — outlives it, so a
 *                                    reader tells a dead agent (registered, no status, never
 *                                    stopped) from one that stopped on purpose
 *
 * `readStatus` is what `palisade status` and the lab read: every node's record against the
 * store's policy revision (the last change under `k8s/` or of the reflector's resourceVersions,
 * which it records in the transaction of every batch — deletes included).
 */
import type { EtcdStore } from '../etcd/types.ts';
import type { KeyLayout } from '../reflected/index.ts';
import type { AgentRegistration, StatusRecord } from './types.ts';

/** The status keys under one layout's root. */
export class StatusKeys {
  readonly nodes: string;
  readonly agents: string;

  constructor(layout: KeyLayout) {
    this.nodes = `${layout.base}status/nodes/`;
    this.agents = `${layout.base}status/agents/`;
  }

  node(name: string): string {
    return `${this.nodes}${name}`;
  }

  agent(name: string): string {
    return `${this.agents}${name}`;
  }
}

/** One node as `palisade status` shows it. */
export interface NodeStatus {
  readonly node: string;
  /** alive: its lease holds; dead: registered, lease expired, not stopped; stopped: stopped on purpose. */
  readonly state: 'alive' | 'dead' | 'stopped';
  readonly record?: StatusRecord;
  readonly registration?: AgentRegistration;
  /** The store's policy revision minus the realized one, when alive and behind (0: current). */
  readonly lag?: number;
}

export interface ClusterStatus {
  /** The store's revision when read. */
  readonly storeRevision: number;
  /** The revision of the last change agents must realize (objects and the reflector's records). */
  readonly policyRevision: number;
  readonly nodes: readonly NodeStatus[];
}

/** Every agent's status, read at one moment. */
export async function readStatus(store: EtcdStore, layout: KeyLayout): Promise<ClusterStatus> {
  const keys = new StatusKeys(layout);
  const [records, registrations, objects, versions] = await Promise.all([
    store.range(keys.nodes),
    store.range(keys.agents),
    store.lastModified(layout.objects),
    store.lastModified(layout.resourceVersions),
  ]);
  const policyRevision = Math.max(objects.modRevision, versions.modRevision);
  const byNode = new Map<string, { record?: StatusRecord; registration?: AgentRegistration }>();
  const entry = (node: string) => {
    let found = byNode.get(node);
    if (!found) byNode.set(node, (found = {}));
    return found;
  };
  for (const kv of records.kvs) {
    const record = parseJson<StatusRecord>(kv.value);
    if (record) entry(kv.key.slice(keys.nodes.length)).record = record;
  }
  for (const kv of registrations.kvs) {
    const registration = parseJson<AgentRegistration>(kv.value);
    if (registration) entry(kv.key.slice(keys.agents.length)).registration = registration;
  }
  const nodes = [...byNode]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([node, { record, registration }]): NodeStatus => {
      if (record)
        return {
          node,
          state: 'alive',
          record,
          ...(registration ? { registration } : {}),
          lag: Math.max(0, policyRevision - record.realizedRevision),
        };
      return {
        node,
        state: registration?.stoppedAt ? 'stopped' : 'dead',
        ...(registration ? { registration } : {}),
      };
    });
  return { storeRevision: Math.max(records.revision, registrations.revision), policyRevision, nodes };
}

/** The status as a table, one node a line (what `palisade status` prints). */
export function formatStatus(status: ClusterStatus): string {
  const header = [
    'NODE',
    'STATE',
    'PHASE',
    'DATAPATH',
    'REALIZED',
    'LAG',
    'TABLES',
    'RULES',
    'SETS',
    'REPAIRS',
    'ERROR',
  ];
  const rows = status.nodes.map((n) => {
    const r = n.record;
    const phase = r ? (r.stale ? `${r.phase},stale` : r.phase) : '-';
    return [
      n.node,
      n.state,
      phase,
      r?.datapath ?? n.registration?.datapath ?? '-',
      r ? String(r.realizedRevision) : '-',
      n.lag === undefined ? '-' : String(n.lag),
      r ? String(r.counts.tables) : '-',
      r ? String(r.counts.rules) : '-',
      r ? String(r.counts.sets) : '-',
      r ? String(r.driftRepairs ?? 0) : '-',
      r ? problem(r) : '',
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const degraded = status.nodes.filter((n) => n.record?.phase === 'degraded').length;
  const summary =
    `store revision ${status.storeRevision}, policy revision ${status.policyRevision}; ` +
    `${status.nodes.filter((n) => n.state === 'alive').length} alive, ` +
    `${status.nodes.filter((n) => n.state === 'dead').length} dead, ` +
    `${status.nodes.filter((n) => n.lag !== undefined && n.lag > 0).length} behind` +
    (degraded > 0 ? `, ${degraded} degraded` : '');
  if (status.nodes.length === 0) return `${summary}\nno agent has registered\n`;
  return `${summary}\n${[line(header), ...rows.map(line)].join('\n')}\n`;
}

/** What is wrong with a node, in one line: its last error, or the keys it cannot read. */
function problem(record: StatusRecord): string {
  if (record.lastError) return oneLine(record.lastError.message);
  const first = record.unreadable?.[0];
  if (!first) return '';
  const count = record.unreadableCount ?? record.unreadable.length;
  // The key without the layout's root: `pod/shop/web`.
  const key = first.key.replace(/^.*\/v1\/k8s\//, '');
  return oneLine(`${count} key${count === 1 ? '' : 's'} unreadable: ${key}: ${first.reason}`);
}

/** Whether a node needs attention: dead, failing, or degraded (`palisade status` exits 1). */
export function inTrouble(node: NodeStatus): boolean {
  return node.state === 'dead' || node.record?.phase === 'failing' || node.record?.phase === 'degraded';
}

function oneLine(text: string): string {
  const first = text.split('\n')[0]!;
  return first.length > 100 ? `${first.slice(0, 97)}...` : first;
}

function parseJson<T>(text: string): T | undefined {
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}
