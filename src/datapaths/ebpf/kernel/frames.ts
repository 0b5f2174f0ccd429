/**
 * Ethernet frames for running the program on test packets (BPF_PROG_TEST_RUN): IPv4 or IPv6
 * with a TCP, UDP or SCTP header carrying the ports, optionally a fragment. Checksums are left
 * zero: the program never reads them.
 */
import type { IpAddress } from '../../../net/ip.ts';

export const TC_ACT_OK = 0;
export const TC_ACT_SHOT = 2;

const IP_PROTOCOLS = { TCP: 6, UDP: 17, SCTP: 132 } as const;

export interface TestPacket {
  readonly src: IpAddress;
  readonly dst: IpAddress;
  readonly protocol: 'TCP' | 'UDP' | 'SCTP';
  readonly srcPort: number;
  readonly dstPort: number;
}

function addressBytes(ip: IpAddress): Buffer {
  const length = ip.family === 4 ? 4 : 16;
  const b = Buffer.alloc(length);
  let value = ip.value;
  for (let i = length - 1; i >= 0; i--) {
    b[i] = Number(value & 0xffn);
    value >>= 8n;
  }
  return b;
}

/** One frame of the packet (a TCP SYN, or a UDP or SCTP header with 8 bytes of payload). */
export function frameOf(p: TestPacket): Buffer {
  const l4 = Buffer.alloc(p.protocol === 'TCP' ? 20 : p.protocol === 'UDP' ? 16 : 12);
  l4.writeUInt16BE(p.srcPort, 0);
  l4.writeUInt16BE(p.dstPort, 2);
  if (p.protocol === 'TCP') {
    l4[12] = 5 << 4;
    l4[13] = 0x02; // SYN
  } else if (p.protocol === 'UDP') l4.writeUInt16BE(l4.length, 4);
  const protocol = IP_PROTOCOLS[p.protocol];
  const eth = Buffer.alloc(14);
  eth.fill(0x02, 0, 12);
  let ip: Buffer;
  if (p.src.family === 4) {
    eth.writeUInt16BE(0x0800, 12);
    ip = Buffer.alloc(20);
    ip[0] = 0x45;
    ip.writeUInt16BE(20 + l4.length, 2);
    ip[8] = 64;
    ip[9] = protocol;
    addressBytes(p.src).copy(ip, 12);
    addressBytes(p.dst).copy(ip, 16);
  } else {
    eth.writeUInt16BE(0x86dd, 12);
    ip = Buffer.alloc(40);
    ip[0] = 0x60;
    ip.writeUInt16BE(l4.length, 4);
    ip[6] = protocol;
    ip[7] = 64;
    addressBytes(p.src).copy(ip, 8);
    addressBytes(p.dst).copy(ip, 24);
  }
  return Buffer.concat([eth, ip, l4]);
}
