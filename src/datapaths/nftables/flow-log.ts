/**
 * New connections' verdicts from the nftables datapath: the base chains log each new
 * connection's first packet once to an nflog group (base-chains.ts) — `A` when all of its policy
 * passed it, `E` or `I` at the drop, for the side whose policy dropped it (`FLOW_STAGES`) — and
 * this reader turns each message into a verdict as it comes.
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
}

export interface FlowLogReader {
  /** Verdicts logged since the last call. */
  read(now?: number): VerdictEvent[];
  /** Times the kernel could not queue messages for the reader (each one or more). */
  readonly lost: number;
  close(): void;
}

const PROTOCOLS: Readonly<Record<number, FlowProtocol>> = { 6: 'TCP', 17: 'UDP', 132: 'SCTP' };

export function openFlowLog(options: FlowLogOptions = {}): FlowLogReader {
  const nflog: NflogReader = openNflog({
    group: options.group ?? DEFAULT_FLOW_LOG_GROUP,
    ...(options.netns !== undefined ? { netns: options.netns } : {}),
  });
  return {
    get lost() {
      return nflog.lost;
    },
    read(now = Date.now()) {
      const out: VerdictEvent[] = [];
      for (const packet of nflog.read()) {
        const event = parsePacket(packet, now);
        if (!event) continue;
        if (packet.prefix === FLOW_STAGES.allowed)
          out.push({ ...event, verdict: 'allowed', kernel: 'nftables allowed' });
        else if (packet.prefix === FLOW_STAGES.egress || packet.prefix === FLOW_STAGES.ingress) {
          const side = packet.prefix === FLOW_STAGES.egress ? 'egress' : 'ingress';
          out.push({ ...event, verdict: 'denied', deniedBy: side, kernel: `nftables ${side} drop` });
        }
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
): Omit<VerdictEvent, 'verdict' | 'deniedBy'> | undefined {
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
  return { at, protocol, src, dst, srcPort, port };
}

function readU128(data: Buffer, offset: number): bigint {
  return (data.readBigUInt64BE(offset) << 64n) | data.readBigUInt64BE(offset + 8);
}
