/**
 * The reader of a node's flow counts (bpf/flow-events.h): the programs count new connections by
 * kind (addresses, destination port, protocol, side, verdict) into the map `flow_active` names;
 * `read()` drains the other one — idle since the previous read, so no program is still adding to
 * it — with bpf_map_lookup_and_delete_batch (one call per 4,096 entries, through libbpf and
 * koffi), then makes it the one counted into. So a read's work follows the kinds of connection
 * the node saw, not how many, and a connection is read at most two reads after it was made. A
 * drain walks every bucket of the map, empty or not (~20 µs for 32,768 holding a few entries,
 * timed alone): the programs count the entries they make per map, and a map none were made in
 * since its last drain is not drained (an idle node's polls cost three lookups).
 * `lost` sums the per-CPU count of connections the map had no room for.
 */
import { join } from 'node:path';
import { formatIp } from '../../../net/ip.ts';
import type { FlowProtocol, VerdictEvent } from '../../../flows/types.ts';
import { libbpf, ENOENT, errnoName } from './libbpf.ts';
import { pinDir } from './loader.ts';
import {
  DIR_EGRESS,
  FLOW_BUDGET_LOST,
  FLOW_BUDGET_MADE,
  FLOW_BUDGET_SIZE,
  FLOW_COUNT_SIZE,
  FLOW_KEY_SIZE,
} from './layout.ts';
import { EbpfError, type PinLocation } from './types.ts';

const PROTOCOLS: Readonly<Record<number, FlowProtocol>> = { 6: 'TCP', 17: 'UDP', 132: 'SCTP' };
/** Entries per batch call: 288 KiB of buffers, allocated once. */
const CHUNK = 4096;
/**
 * A map switched away from less than this long ago is left for the next read: a program that
 * found it active just before the switch may still be adding to it (a program runs for
 * microseconds; the agent reads every 100 ms).
 */
const SETTLE_NS = 10_000_000n;

export interface FlowEventReader {
  read(now?: number): VerdictEvent[];
  /** Whether connections were counted that a later read gives (one lookup). */
  pending(): boolean;
  readonly lost: number;
  close(): void;
}

/** Opens the flow counts of the node pinned at `location`. Throws an EbpfError saying why not. */
export function openFlowEvents(location: PinLocation): FlowEventReader {
  const lib = libbpf();
  const cpus = lib.possibleCpus();
  const maps = join(pinDir(location), 'maps');
  const fds: number[] = [];
  const open = (name: string): number => {
    const fd = lib.objGet(join(maps, name));
    if (fd < 0) {
      for (const opened of fds) lib.close(opened);
      throw new EbpfError(`opening the pinned map ${join(maps, name)} failed (${errnoName(fd)})`);
    }
    fds.push(fd);
    return fd;
  };
  const counts = [open('flow_counts0'), open('flow_counts1')] as const;
  const activeFd = open('flow_active');
  const budgetFd = open('flow_budget');
  const zero = Buffer.alloc(4);
  const active = Buffer.alloc(4);
  const keys = Buffer.alloc(CHUNK * FLOW_KEY_SIZE);
  const values = Buffer.alloc(CHUNK * FLOW_COUNT_SIZE);
  const count = Buffer.alloc(4);
  const batchIn = Buffer.alloc(8);
  const batchOut = Buffer.alloc(8);
  const budgets = Buffer.alloc(FLOW_BUDGET_SIZE * Math.max(1, cpus));
  let closed = false;
  let switchedAt = 0n;
  /** Per count map, the entries made in it (summed over CPUs, wrapping) when it was last drained. */
  const drainedAt: [number, number] = [0, 0];
  /** The entries ever made in each count map, summed over CPUs as 32-bit wrapping counters. */
  const made = (): [number, number] => {
    if (lib.lookup(budgetFd, zero, budgets) !== 0) throw new EbpfError('reading flow_budget failed');
    const sums: [number, number] = [0, 0];
    for (let cpu = 0; cpu < cpus; cpu++)
      for (const map of [0, 1] as const)
        sums[map] =
          (sums[map] + budgets.readUInt32LE(cpu * FLOW_BUDGET_SIZE + FLOW_BUDGET_MADE + 4 * map)) >>> 0;
    return sums;
  };

  /** Every entry of the idle map, removed from it, as events seen by `now`'s clock. */
  const drain = (fd: number, now: number): VerdictEvent[] => {
    const out: VerdictEvent[] = [];
    // bpf_ktime_get_ns() and process.hrtime are both CLOCK_MONOTONIC.
    const monotonic = process.hrtime.bigint();
    const wall = (ktime: bigint): number => now - Number(monotonic - ktime) / 1e6;
    for (let first = true; ; first = false) {
      count.writeUInt32LE(CHUNK);
      const code = lib.drainBatch(fd, first ? null : batchIn, batchOut, keys, values, count);
      const n = count.readUInt32LE();
      for (let i = 0; i < n; i++) {
        const event = decodeCount(
          keys.subarray(i * FLOW_KEY_SIZE, (i + 1) * FLOW_KEY_SIZE),
          values.subarray(i * FLOW_COUNT_SIZE, (i + 1) * FLOW_COUNT_SIZE),
          wall,
        );
        if (event) out.push(event);
      }
      if (code === ENOENT) return out;
      if (code < 0) throw new EbpfError(`draining the flow counts failed (${errnoName(code)})`);
      batchOut.copy(batchIn);
    }
  };

  return {
    read(now = Date.now()) {
      if (closed) return [];
      if (process.hrtime.bigint() - switchedAt < SETTLE_NS) return [];
      if (lib.lookup(activeFd, zero, active) !== 0) throw new EbpfError('reading flow_active failed');
      const idle = ((active.readUInt32LE() & 1) ^ 1) as 0 | 1;
      // Nothing made in the idle map since its last drain: it is empty, and a drain would walk
      // its every bucket to find that out (most polls of a quiet node).
      const madeInIdle = made()[idle];
      const events = madeInIdle === drainedAt[idle] ? [] : drain(counts[idle], now);
      drainedAt[idle] = madeInIdle;
      active.writeUInt32LE(idle);
      const code = lib.update(activeFd, zero, active, 0n);
      if (code !== 0) throw new EbpfError(`switching the flow counts failed (${errnoName(code)})`);
      switchedAt = process.hrtime.bigint();
      return events;
    },
    pending() {
      if (closed) return false;
      // Either map: the idle one too, while a fresh switch leaves it for the next read.
      const [made0, made1] = made();
      return made0 !== drainedAt[0] || made1 !== drainedAt[1];
    },
    get lost() {
      if (closed || lib.lookup(budgetFd, zero, budgets) !== 0) return 0;
      let lost = 0;
      for (let cpu = 0; cpu < cpus; cpu++)
        lost += budgets.readUInt32LE(cpu * FLOW_BUDGET_SIZE + FLOW_BUDGET_LOST);
      return lost;
    },
    close() {
      if (closed) return;
      closed = true;
      for (const fd of fds) lib.close(fd);
    },
  };
}

/**
 * One struct flow_key and its struct flow_count as an event standing for `count` connections
 * (`at` the last, `firstAt` the first), or undefined for an empty entry.
 */
function decodeCount(key: Buffer, value: Buffer, wall: (ktime: bigint) => number): VerdictEvent | undefined {
  const family = key.readUInt8(34) === 6 ? 6 : 4;
  const protocol = PROTOCOLS[key.readUInt8(35)];
  const weight = Number(value.readBigUInt64LE(0));
  if (!protocol || weight === 0) return undefined;
  const address = (offset: number): string =>
    family === 4
      ? formatIp({ family: 4, value: BigInt(key.readUInt32BE(offset)) })
      : formatIp({
          family: 6,
          value: (key.readBigUInt64BE(offset) << 64n) | key.readBigUInt64BE(offset + 8),
        });
  const direction = key.readUInt8(36) === DIR_EGRESS ? 'egress' : 'ingress';
  const allowed = key.readUInt8(37) !== 0;
  return {
    at: wall(value.readBigUInt64LE(16)),
    firstAt: wall(value.readBigUInt64LE(8)),
    protocol,
    src: address(0),
    dst: address(16),
    port: key.readUInt16LE(32),
    verdict: allowed ? 'allowed' : 'denied',
    ...(allowed ? {} : { deniedBy: direction }),
    kernel: `ebpf ${direction}`,
    weight,
    ...(value.readUInt32LE(24) !== 0 ? { sampled: true } : {}),
  };
}
