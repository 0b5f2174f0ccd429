/**
 * `palisade flows --staged` across nodes. Each agent says what the staged policies would change
 * on the sides it judged (a pod's egress on the source's node, its ingress on the destination's),
 * but a connection is one thing: what breaks is a connection that passes today on every node and
 * that some node's staged rule would deny; what opens is one that a node drops today and that the
 * staged rules would let through wherever it is dropped. A side that would deny a connection
 * another node denies already breaks nothing, and is left out. "Today" is each node's latest
 * record of the connection: older ones (before a policy changed, or was staged or enforced) do
 * not speak for it any more.
 */
import type { FlowRecord } from './types.ts';

const connectionOf = (r: FlowRecord): string => `${r.src.ip} ${r.dst.ip} ${r.protocol}/${r.port}`;

/** The records whose staged verdict changes their connection, given every node's records of it. */
export function stagedView(records: readonly FlowRecord[]): FlowRecord[] {
  // Each node's latest record of each connection (ISO times of one format compare as text).
  const latest = new Map<string, FlowRecord>();
  for (const record of records) {
    const key = `${connectionOf(record)} ${record.node ?? ''}`;
    const held = latest.get(key);
    if (!held || held.lastSeen < record.lastSeen) latest.set(key, record);
  }
  const connections = new Map<string, FlowRecord[]>();
  for (const record of latest.values()) {
    const key = connectionOf(record);
    const list = connections.get(key);
    if (list) list.push(record);
    else connections.set(key, [record]);
  }
  return records.filter((record) => {
    if (!record.staged || latest.get(`${connectionOf(record)} ${record.node ?? ''}`) !== record) return false;
    const all = connections.get(connectionOf(record))!;
    if (record.staged.verdict === 'denied') return all.every((r) => r.verdict === 'allowed');
    return all.every((r) => r.verdict === 'allowed' || r.staged?.verdict === 'allowed');
  });
}
