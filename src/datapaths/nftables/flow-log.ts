/**
 * New connections' verdicts from the nftables datapath: the base chains log a new connection's
 * first packet to an nflog group before each side's policy and after all of it (`FLOW_STAGES`,
 * base-chains.ts), and this reader turns the stages into verdicts. A packet that reached `A`
 * passed; one whose last stage is `E` or `I` was dropped by that side's policy (egress or
 * ingress) — known once it has not moved on for `settleMs` (the kernel sends one packet's
 * stages within microseconds, in order, at most `flushMs` apart across batches), or at once when
 * the same connection's next attempt starts over. Pending packets are bounded; beyond the bound
 * the oldest are settled early (as drops) and counted.
 */
import { formatIp } from '../../net/ip.ts';
import type { FlowProtocol, VerdictEvent } from '../../flows/types.ts';
import { openNflog, type NflogPacket, type NflogReader } from '../../dataplane/index.ts';
import { FLOW_STAGES } from './base-chains.ts';

/** The nflog group the node's flow log uses unless told otherwise. */
export const DEFAULT_FLOW_LOG_GROUP = 5141;

interface FlowLogOptions {
  readonly group?: number;
  readonly netns?: string;
  /** A packet whose stages stopped moving this long ago was dropped (ms, default 250). */
  readonly settleMs?: number;
  /** Most packets awaiting their verdict (default 65,536). */
  readonly maxPending?: number;
}

export interface FlowLogReader {
  /** Verdicts settled since the last call. */
  read(now?: number): VerdictEvent[];
  /** Packets the kernel could not queue for the reader, and pending ones settled early. */
  readonly lost: number;
  close(): void;
}

interface Pending {
  readonly event: Omit<VerdictEvent, 'verdict' | 'deniedBy'>;
  readonly stage: string;
  readonly seen: number;
}

const PROTOCOLS: Readonly<Record<number, FlowProtocol>> = { 6: 'TCP', 17: 'UDP', 132: 'SCTP' };

export function openFlowLog(options: FlowLogOptions = {}): FlowLogReader {
  const nflog: NflogReader = openNflog({
    group: options.group ?? DEFAULT_FLOW_LOG_GROUP,
    ...(options.netns !== undefined ? { netns: options.netns } : {}),
  });
  const settleMs = options.settleMs ?? 250;
  const maxPending = options.maxPending ?? 65_536;
  const pending = new Map<string, Pending>();
  let overflow = 0;
  const settle = (key: string, entry: Pending, out: VerdictEvent[]): void => {
    pending.delete(key);
    const side = entry.stage === FLOW_STAGES.egress ? 'egress' : 'ingress';
    out.push({ ...entry.event, verdict: 'denied', deniedBy: side, kernel: `nftables stage ${entry.stage}` });
  };
  return {
    get lost() {
      return nflog.lost + overflow;
    },
    read(now = Date.now()) {
      const out: VerdictEvent[] = [];
      for (const packet of nflog.read()) {
        const parsed = parsePacket(packet, now);
        if (!parsed) continue;
        const { key, event } = parsed;
        const entry = pending.get(key);
        if (packet.prefix === FLOW_STAGES.allowed) {
          if (entry) pending.delete(key);
          out.push({ ...event, verdict: 'allowed', kernel: 'nftables stage A' });
          continue;
        }
        // A new attempt of the same connection (a retransmitted SYN): the last one was dropped.
        const startsOver =
          entry !== undefined &&
          (packet.prefix === FLOW_STAGES.egress ||
            (packet.prefix === FLOW_STAGES.ingress && entry.stage === FLOW_STAGES.ingress));
        if (entry && startsOver) settle(key, entry, out);
        const current = pending.get(key);
        if (current) {
          // Moved to the end: the map stays in order of the last stage seen.
          pending.delete(key);
          pending.set(key, { event: current.event, stage: packet.prefix, seen: now });
        } else {
          if (pending.size >= maxPending) {
            const [oldestKey, oldest] = pending.entries().next().value as [string, Pending];
            settle(oldestKey, oldest, out);
            overflow++;
          }
          pending.set(key, { event, stage: packet.prefix, seen: now });
        }
      }
      for (const [key, entry] of pending) {
        if (now - entry.seen < settleMs) break; // insertion order is arrival order
        settle(key, entry, out);
      }
      return out;
    },
    close() {
      nflog.close();
    },
  };
}

/** The connection a logged packet opens, or undefined for a packet with no ports to read. */
function parsePacket(
  packet: NflogPacket,
  at: number,
): { key: string; event: Omit<VerdictEvent, 'verdict' | 'deniedBy'> } | undefined {
  const data = packet.payload;
  let protocolNumber: number;
  let l4: number;
  let src: string;
  let dst: string;
  if (packet.family === 4) {
    if (data.length < 20) return undefined;
    l4 = (data.readUInt8(0) & 0x0f) * 4;
    if ((data.readUInt16BE(6) & 0x1fff) !== 0) return undefined; // a later fragment
    protocolNumber = data.readUInt8(9);
    src = formatIp({ family: 4, value: BigInt(data.readUInt32BE(12)) });
    dst = formatIp({ family: 4, value: BigInt(data.readUInt32BE(16)) });
  } else {
    if (data.length < 40) return undefined;
    l4 = 40;
    protocolNumber = data.readUInt8(6);
    src = formatIp({ family: 6, value: readU128(data, 8) });
    dst = formatIp({ family: 6, value: readU128(data, 24) });
  }
  const protocol = PROTOCOLS[protocolNumber];
  if (!protocol || data.length < l4 + 4) return undefined;
  const srcPort = data.readUInt16BE(l4);
  const port = data.readUInt16BE(l4 + 2);
  return {
    key: `${protocol} ${src} ${srcPort} ${dst} ${port}`,
    event: { at, protocol, src, dst, srcPort, port },
  };
}

function readU128(data: Buffer, offset: number): bigint {
  return (data.readBigUInt64BE(offset) << 64n) | data.readBigUInt64BE(offset + 8);
}
