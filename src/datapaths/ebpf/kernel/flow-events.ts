/**
 * The reader of a node's flow_events ring buffer (bpf/flow-events.h): libbpf's ring_buffer over
 * the pinned map, consumed on the caller's schedule — `read()` takes what the programs wrote
 * since the last call and never waits (libbpf calls back into this thread during the consume).
 * Each event is one side of a new connection as the program judged it; `lost` sums the per-CPU
 * count of events the ring buffer had no room for.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { formatIp } from '../../../net/ip.ts';
import type { FlowProtocol, VerdictEvent } from '../../../flows/types.ts';
import { pinDir } from './loader.ts';
import { DIR_EGRESS } from './layout.ts';
import { EbpfError, type PinLocation } from './types.ts';

/** struct flow_event's size (bpf/palisade.h). */
const EVENT_SIZE = 48;
const PROTOCOLS: Readonly<Record<number, FlowProtocol>> = { 6: 'TCP', 17: 'UDP', 132: 'SCTP' };

export interface FlowEventReader {
  read(now?: number): VerdictEvent[];
  readonly lost: number;
  close(): void;
}

interface Koffi {
  load(path: string): { func(signature: string): (...args: unknown[]) => unknown };
  proto(signature: string): unknown;
  pointer(type: unknown): unknown;
  register(callback: (...args: unknown[]) => unknown, type: unknown): unknown;
  unregister(callback: unknown): void;
  view(pointer: unknown, length: number): ArrayBuffer;
}

/** Opens the ring buffer of the node pinned at `location`. Throws an EbpfError saying why not. */
export function openFlowEvents(location: PinLocation): FlowEventReader {
  const koffi = createRequire(import.meta.url)('koffi') as Koffi;
  const lib = koffi.load('libbpf.so.1');
  const libc = koffi.load('libc.so.6');
  const objGet = lib.func('int bpf_obj_get(const char *path)') as (path: string) => number;
  const close = libc.func('int close(int fd)') as (fd: number) => number;
  const ringNew = lib.func('void *ring_buffer__new(int fd, void *cb, void *ctx, void *opts)');
  const consume = lib.func('int ring_buffer__consume(void *rb)') as (rb: unknown) => number;
  const free = lib.func('void ring_buffer__free(void *rb)');
  const lookup = lib.func('int bpf_map_lookup_elem(int fd, const void *key, void *value)') as (
    fd: number,
    key: Buffer,
    value: Buffer,
  ) => number;
  const cpus = (lib.func('int libbpf_num_possible_cpus(void)') as () => number)();
  const maps = join(pinDir(location), 'maps');
  const fd = objGet(join(maps, 'flow_events'));
  if (fd < 0)
    throw new EbpfError(`opening the pinned ring buffer ${join(maps, 'flow_events')} failed (${fd})`);
  const budgetFd = objGet(join(maps, 'flow_budget'));
  const sample = koffi.proto('int palisade_flow_sample(void *ctx, void *data, size_t size)');
  let batch: VerdictEvent[] = [];
  let now = Date.now();
  const callback = koffi.register((_ctx: unknown, data: unknown, size: unknown) => {
    if (Number(size) >= EVENT_SIZE) {
      const event = decodeEvent(Buffer.from(koffi.view(data, EVENT_SIZE)), now);
      if (event) batch.push(event);
    }
    return 0;
  }, koffi.pointer(sample));
  const ring = ringNew(fd, callback, null, null);
  if (!ring) {
    koffi.unregister(callback);
    close(fd);
    if (budgetFd >= 0) close(budgetFd);
    throw new EbpfError('libbpf could not open the flow_events ring buffer');
  }
  let closed = false;
  const budgets = Buffer.alloc(16 * Math.max(1, cpus));
  return {
    read(at = Date.now()) {
      if (closed) return [];
      now = at;
      const code = consume(ring);
      if (code < 0) throw new EbpfError(`reading the flow_events ring buffer failed (${code})`);
      const out = batch;
      batch = [];
      return out;
    },
    get lost() {
      if (closed || budgetFd < 0 || lookup(budgetFd, Buffer.alloc(4), budgets) !== 0) return 0;
      let lost = 0;
      for (let cpu = 0; cpu < cpus; cpu++) lost += budgets.readUInt32LE(cpu * 16 + 12);
      return lost;
    },
    close() {
      if (closed) return;
      closed = true;
      free(ring);
      koffi.unregister(callback);
      close(fd);
      if (budgetFd >= 0) close(budgetFd);
    },
  };
}

/** One struct flow_event, or undefined for a protocol flows do not report (ICMP). */
export function decodeEvent(data: Buffer, at: number): VerdictEvent | undefined {
  const family = data.readUInt8(36) === 6 ? 6 : 4;
  const protocol = PROTOCOLS[data.readUInt8(37)];
  if (!protocol) return undefined;
  const address = (offset: number): string =>
    family === 4
      ? formatIp({ family: 4, value: BigInt(data.readUInt32BE(offset)) })
      : formatIp({
          family: 6,
          value: (data.readBigUInt64BE(offset) << 64n) | data.readBigUInt64BE(offset + 8),
        });
  const direction = data.readUInt8(38) === DIR_EGRESS ? 'egress' : 'ingress';
  const allowed = data.readUInt8(39) !== 0;
  const weight = data.readUInt32LE(40);
  return {
    at,
    protocol,
    src: address(0),
    dst: address(16),
    srcPort: data.readUInt16LE(32),
    port: data.readUInt16LE(34),
    verdict: allowed ? 'allowed' : 'denied',
    ...(allowed ? {} : { deniedBy: direction }),
    kernel: `ebpf ${direction}`,
    ...(weight > 1 ? { weight } : {}),
  };
}
