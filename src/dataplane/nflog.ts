/**
 * A reader of one nflog group (the kernel's netfilter log over netlink, what nftables' `log group
 * N` statements send): a non-blocking NETLINK_NETFILTER socket opened in a network namespace and
 * bound to the group, read on the caller's schedule (`read()` returns what has arrived and never
 * waits). Through koffi, like libnftables (native.ts): no helper process, no library beyond libc.
 *
 * The kernel batches up to `batch` packets or `flushMs` into one message, so a busy node costs a
 * wakeup per batch, not per packet; a socket buffer that overflows (the reader too slow) loses
 * packets, which the kernel reports as ENOBUFS and `lost` counts — never a stall of the kernel.
 */
import { closeSync, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { CLONE_NEWNET, nativeLibc } from './native.ts';
import { DataplaneError } from './exec.ts';

/** One logged packet: the rule's prefix and the packet from its network header. */
export interface NflogPacket {
  readonly prefix: string;
  readonly family: 4 | 6;
  readonly payload: Buffer;
}

export interface NflogReader {
  /** What arrived since the last call (never waits). */
  read(): NflogPacket[];
  /** Packets the kernel could not queue for this reader (its buffer overflowed). */
  readonly lost: number;
  close(): void;
}

interface NflogOptions {
  readonly group: number;
  readonly netns?: string;
  /** Bytes of each packet copied (enough for the IP and transport headers). Default 80. */
  readonly copyRange?: number;
  /** Packets the kernel gathers before sending (default 64) … */
  readonly batch?: number;
  /** … or after this long, ms (default 20). */
  readonly flushMs?: number;
  /** The socket's receive buffer, bytes (default 4 MiB). */
  readonly bufferBytes?: number;
}

const AF_NETLINK = 16;
const SOCK_RAW = 3;
const SOCK_NONBLOCK = 0x800;
const SOCK_CLOEXEC = 0x80000;
const NETLINK_NETFILTER = 12;
const SOL_SOCKET = 1;
const SO_RCVBUFFORCE = 33;
const MSG_DONTWAIT = 0x40;
const EAGAIN = 11;
const ENOBUFS = 105;
const NLMSG_ERROR = 2;
const NLM_F_REQUEST = 1;
const NLM_F_ACK = 4;
const NFNL_SUBSYS_ULOG = 4;
const NFULNL_MSG_PACKET = 0;
const NFULNL_MSG_CONFIG = 1;
const NFULA_CFG_CMD = 1;
const NFULA_CFG_MODE = 2;
const NFULA_CFG_TIMEOUT = 4;
const NFULA_CFG_QTHRESH = 5;
const NFULNL_CFG_CMD_BIND = 1;
const NFULNL_COPY_PACKET = 2;
const NFULA_PACKET_HDR = 1;
const NFULA_PAYLOAD = 9;
const NFULA_PREFIX = 10;

interface Socketry {
  socket(domain: number, type: number, protocol: number): number;
  bind(fd: number, address: Buffer, length: number): number;
  send(fd: number, data: Buffer, length: number, flags: number): number;
  recv(fd: number, buffer: Buffer, length: number, flags: number): number;
  setsockopt(fd: number, level: number, name: number, value: Buffer, length: number): number;
  close(fd: number): number;
  errno(): number;
}

function socketry(): Socketry {
  const koffi = createRequire(import.meta.url)('koffi') as {
    load(path: string): { func(signature: string): (...args: unknown[]) => number };
    errno(): number;
  };
  const lib = koffi.load('libc.so.6');
  const f = <T>(signature: string): T => lib.func(signature) as T;
  return {
    socket: f('int socket(int, int, int)'),
    bind: f('int bind(int, const void *, uint32_t)'),
    send: f('long send(int, const void *, size_t, int)'),
    recv: f('long recv(int, void *, size_t, int)'),
    setsockopt: f('int setsockopt(int, int, int, const void *, uint32_t)'),
    close: f('int close(int)'),
    errno: () => koffi.errno(),
  };
}

/** One netlink attribute, padded to 4 bytes. */
function attribute(type: number, value: Buffer): Buffer {
  const length = 4 + value.length;
  const out = Buffer.alloc((length + 3) & ~3);
  out.writeUInt16LE(length, 0);
  out.writeUInt16LE(type, 2);
  value.copy(out, 4);
  return out;
}

function configMessage(group: number, attributes: Buffer[], sequence: number): Buffer {
  const body = Buffer.concat([Buffer.from([0, 0, (group >> 8) & 0xff, group & 0xff]), ...attributes]);
  const header = Buffer.alloc(16);
  header.writeUInt32LE(16 + body.length, 0);
  header.writeUInt16LE((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG, 4);
  header.writeUInt16LE(NLM_F_REQUEST | NLM_F_ACK, 6);
  header.writeUInt32LE(sequence, 8);
  return Buffer.concat([header, body]);
}

const u32be = (value: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(value, 0);
  return b;
};

/** Opens the group's reader (in `netns` when given). Throws a DataplaneError saying why not. */
export function openNflog(options: NflogOptions): NflogReader {
  let io: Socketry;
  try {
    io = socketry();
  } catch (error) {
    throw new DataplaneError(`nflog: libc could not be loaded through koffi: ${String(error)}`);
  }
  const fd = inNamespace(options.netns, () =>
    io.socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_NETFILTER),
  );
  if (fd < 0) throw new DataplaneError(`nflog: cannot open a netlink socket (errno ${io.errno()})`);
  const buffer = Buffer.alloc(256 * 1024);
  let sequence = 1;
  const request = (attributes: Buffer[], what: string): void => {
    const message = configMessage(options.group, attributes, sequence++);
    if (io.send(fd, message, message.length, 0) < 0)
      throw new DataplaneError(`nflog: ${what} failed (errno ${io.errno()})`);
    const got = io.recv(fd, buffer, buffer.length, MSG_DONTWAIT);
    if (got >= 20 && buffer.readUInt16LE(4) === NLMSG_ERROR) {
      const code = -buffer.readInt32LE(16);
      if (code !== 0)
        throw new DataplaneError(
          `nflog: ${what} refused (errno ${code}${code === 16 ? ': another process reads this group' : ''})`,
        );
    }
  };
  try {
    const address = Buffer.alloc(12);
    address.writeUInt16LE(AF_NETLINK, 0);
    if (io.bind(fd, address, address.length) !== 0)
      throw new DataplaneError(`nflog: cannot bind the netlink socket (errno ${io.errno()})`);
    const size = Buffer.alloc(4);
    size.writeInt32LE(options.bufferBytes ?? 4 * 1024 * 1024, 0);
    io.setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, size, 4);
    request([attribute(NFULA_CFG_CMD, Buffer.from([NFULNL_CFG_CMD_BIND]))], `binding group ${options.group}`);
    const mode = Buffer.alloc(6);
    mode.writeUInt32BE(options.copyRange ?? 80, 0);
    mode.writeUInt8(NFULNL_COPY_PACKET, 4);
    request(
      [
        attribute(NFULA_CFG_MODE, mode),
        attribute(NFULA_CFG_QTHRESH, u32be(options.batch ?? 64)),
        attribute(NFULA_CFG_TIMEOUT, u32be(Math.max(1, Math.round((options.flushMs ?? 20) / 10)))),
      ],
      `configuring group ${options.group}`,
    );
  } catch (error) {
    io.close(fd);
    throw error;
  }
  let lost = 0;
  let closed = false;
  return {
    get lost() {
      return lost;
    },
    read() {
      const packets: NflogPacket[] = [];
      if (closed) return packets;
      for (;;) {
        const got = io.recv(fd, buffer, buffer.length, MSG_DONTWAIT);
        if (got < 0) {
          const errno = io.errno();
          if (errno === ENOBUFS) {
            lost++;
            continue;
          }
          if (errno === EAGAIN) break;
          throw new DataplaneError(`nflog: reading group ${options.group} failed (errno ${errno})`);
        }
        parseMessages(buffer.subarray(0, got), packets);
      }
      return packets;
    },
    close() {
      if (closed) return;
      closed = true;
      io.close(fd);
    },
  };
}

/** The packets of one datagram of netlink messages. */
function parseMessages(data: Buffer, out: NflogPacket[]): void {
  let offset = 0;
  while (offset + 16 <= data.length) {
    const length = data.readUInt32LE(offset);
    if (length < 16 || offset + length > data.length) break;
    const type = data.readUInt16LE(offset + 4);
    if (type === ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET)) {
      let prefix = '';
      let family: 4 | 6 | undefined;
      let payload: Buffer | undefined;
      let at = offset + 20; // nlmsghdr, nfgenmsg
      const end = offset + length;
      while (at + 4 <= end) {
        const attrLength = data.readUInt16LE(at);
        if (attrLength < 4 || at + attrLength > end) break;
        const attrType = data.readUInt16LE(at + 2) & 0x3fff;
        const value = data.subarray(at + 4, at + attrLength);
        if (attrType === NFULA_PREFIX) prefix = value.toString('latin1').replace(/\0.*$/s, '');
        else if (attrType === NFULA_PAYLOAD) payload = Buffer.from(value);
        else if (attrType === NFULA_PACKET_HDR && value.length >= 2) {
          const protocol = value.readUInt16BE(0);
          family = protocol === 0x0800 ? 4 : protocol === 0x86dd ? 6 : undefined;
        }
        at += (attrLength + 3) & ~3;
      }
      if (payload && payload.length > 0) {
        const version = payload[0] === undefined ? 0 : payload[0] >> 4;
        const f = family ?? (version === 4 ? 4 : version === 6 ? 6 : undefined);
        if (f) out.push({ prefix, family: f, payload });
      }
    }
    offset += (length + 3) & ~3;
  }
}

/** Runs `open` with this thread in `netns` (when given), always returning to its own. */
function inNamespace(netns: string | undefined, open: () => number): number {
  if (netns === undefined) return open();
  const libc = nativeLibc();
  if (!libc) throw new DataplaneError('nflog: setns is not available (koffi could not load libc)');
  let own: number | undefined;
  let target: number | undefined;
  try {
    own = openSync('/proc/thread-self/ns/net', 'r');
    target = openSync(`/run/netns/${netns}`, 'r');
  } catch (error) {
    if (own !== undefined) closeSync(own);
    throw new DataplaneError(`nflog: network namespace ${netns}: ${(error as Error).message}`);
  }
  try {
    if (libc.setns(target, CLONE_NEWNET) !== 0)
      throw new DataplaneError(`nflog: cannot enter network namespace ${netns} (errno ${libc.errno()})`);
    try {
      return open();
    } finally {
      if (libc.setns(own, CLONE_NEWNET) !== 0)
        // eslint-disable-next-line no-unsafe-finally -- a thread left in another namespace is a bug to stop at
        throw new Error(`could not return to this process's network namespace (errno ${libc.errno()})`);
    }
  } finally {
    closeSync(own);
    closeSync(target);
  }
}
