/**
 * libbpf's map calls (Debian `libbpf1`), in-process through koffi: opening pinned maps, writing,
 * deleting, reading and walking entries, and waiting out an RCU grace period (`membarrier`).
 * Map writes are the datapath's update path, so they are calls (a few microseconds each), not a
 * `bpftool` process per entry. Loaded on first use; a machine without them gets an EbpfError
 * that says which is missing.
 */
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import { EbpfError } from './types.ts';

/** The calls the datapath makes; errors are negative errno values, as libbpf 1.x returns them. */
export interface Libbpf {
  objGet(path: string): number;
  /** Pins an open map or program at `path` (bpf_obj_pin): a pin someone removed, put back. */
  objPin(fd: number, path: string): number;
  update(fd: number, key: Buffer, value: Buffer, flags: bigint): number;
  remove(fd: number, key: Buffer): number;
  lookup(fd: number, key: Buffer, value: Buffer): number;
  /** The key after `key` (the first with null) into `next`; -ENOENT at the end. */
  nextKey(fd: number, key: Buffer | null, next: Buffer): number;
  /**
   * bpf_map_lookup_and_delete_batch: up to `count`'s value of entries into `keys` and `values`,
   * removed from the map, `count` rewritten with how many; `inBatch` null for the first call,
   * then the `outBatch` of the one before. -ENOENT once the map has no more.
   */
  drainBatch(
    fd: number,
    inBatch: Buffer | null,
    outBatch: Buffer,
    keys: Buffer,
    values: Buffer,
    count: Buffer,
  ): number;
  /** How many CPUs a per-CPU map has a value for (libbpf_num_possible_cpus). */
  possibleCpus(): number;
  /** bpf_obj_get_info_by_fd for a program: its id. */
  programId(fd: number): number;
  /** bpf_obj_get_info_by_fd for a tcx link: the program it runs and the interface it is on (0: gone). */
  linkInfo(fd: number): { programId: number; ifindex: number };
  /** bpf_obj_get_info_by_fd for a map: its type, key size, value size, max entries, flags, name. */
  mapInfo(fd: number): { type: number; keySize: number; valueSize: number; maxEntries: number; name: string };
  close(fd: number): void;
  /** Waits for a grace period: every BPF program running when it was called has finished. */
  graceSync(): void;
  /**
   * Calls `done` after a grace period that began after this call: one wait runs at a time, and
   * requests made while it runs are answered by the next.
   */
  graceAsync(done: (error: Error | undefined) => void): void;
  /**
   * Runs a loaded program on one packet (BPF_PROG_TEST_RUN, `repeat` times): its return code and
   * the kernel's average run time per repetition in nanoseconds.
   */
  testRun(programFd: number, packet: Buffer, repeat: number): { retval: number; duration: number };
}

const SYS_MEMBARRIER = 324; // x86-64
const MEMBARRIER_CMD_GLOBAL = 1;

interface KoffiFunction {
  (...args: unknown[]): unknown;
  async(...args: unknown[]): void;
}
interface Koffi {
  load(path: string): { func(signature: string): KoffiFunction };
  struct(name: string, fields: Record<string, string>): unknown;
  sizeof(type: unknown): number;
}

let loaded: Libbpf | undefined;

/** libbpf through koffi; throws an EbpfError naming what is missing. */
export function libbpf(): Libbpf {
  if (loaded) return loaded;
  let koffi: Koffi;
  try {
    koffi = createRequire(import.meta.url)('koffi') as Koffi;
  } catch (error) {
    throw new EbpfError(`the eBPF datapath needs the koffi package (npm ci installs it): ${String(error)}`);
  }
  let lib: ReturnType<Koffi['load']>;
  let libc: ReturnType<Koffi['load']>;
  try {
    lib = koffi.load('libbpf.so.1');
    libc = koffi.load('libc.so.6');
  } catch {
    throw new EbpfError('the eBPF datapath needs libbpf.so.1 (Debian: apt-get install libbpf1)');
  }
  const objGet = lib.func('int bpf_obj_get(const char *path)');
  const objPin = lib.func('int bpf_obj_pin(int fd, const char *path)');
  const update = lib.func(
    'int bpf_map_update_elem(int fd, const void *key, const void *value, uint64_t flags)',
  );
  const remove = lib.func('int bpf_map_delete_elem(int fd, const void *key)');
  const lookup = lib.func('int bpf_map_lookup_elem(int fd, const void *key, void *value)');
  const nextKey = lib.func('int bpf_map_get_next_key(int fd, const void *key, void *next)');
  const drainBatch = lib.func(
    'int bpf_map_lookup_and_delete_batch(int fd, void *in_batch, void *out_batch, void *keys, void *values, void *count, void *opts)',
  );
  const possibleCpus = lib.func('int libbpf_num_possible_cpus(void)');
  const info = lib.func('int bpf_obj_get_info_by_fd(int fd, void *info, void *len)');
  const close = libc.func('int close(int fd)');
  const opts = koffi.struct('bpf_test_run_opts', {
    sz: 'size_t',
    data_in: 'const void *',
    data_out: 'void *',
    data_size_in: 'uint32_t',
    data_size_out: 'uint32_t',
    ctx_in: 'const void *',
    ctx_out: 'void *',
    ctx_size_in: 'uint32_t',
    ctx_size_out: 'uint32_t',
    retval: 'uint32_t',
    repeat: 'int',
    duration: 'uint32_t',
    flags: 'uint32_t',
    cpu: 'uint32_t',
    batch_size: 'uint32_t',
  });
  const testRun = lib.func('int bpf_prog_test_run_opts(int fd, _Inout_ bpf_test_run_opts *opts)');
  /** bpf_obj_get_info_by_fd into a buffer of `size` bytes (the info struct of a map, program or link). */
  const objInfo = (fd: number, size: number, what: string): Buffer => {
    const buffer = Buffer.alloc(size);
    const length = Buffer.alloc(4);
    length.writeUInt32LE(buffer.length, 0);
    const code = info(fd, buffer, length) as number;
    if (code !== 0) throw new EbpfError(`reading a BPF ${what}'s info failed: ${errnoName(code)}`);
    return buffer;
  };
  // syscall(2) is variadic in C; the x86-64 ABI passes these integers the same either way.
  const syscall = libc.func('long syscall(long number, long cmd, long flags, long cpu)');
  let waiting = false;
  let queued: ((error: Error | undefined) => void)[] = [];
  const wait = (): void => {
    const answered = queued;
    queued = [];
    waiting = true;
    syscall.async(SYS_MEMBARRIER, MEMBARRIER_CMD_GLOBAL, 0, 0, (error: unknown, code: unknown) => {
      waiting = false;
      const failed =
        error || Number(code) !== 0 ? new EbpfError('membarrier(MEMBARRIER_CMD_GLOBAL) failed') : undefined;
      for (const done of answered) done(failed);
      if (queued.length > 0) wait();
    });
  };
  loaded = {
    objGet: (path) => objGet(path) as number,
    objPin: (fd, path) => objPin(fd, path) as number,
    update: (fd, key, value, flags) => update(fd, key, value, flags) as number,
    remove: (fd, key) => remove(fd, key) as number,
    lookup: (fd, key, value) => lookup(fd, key, value) as number,
    nextKey: (fd, key, next) => nextKey(fd, key, next) as number,
    drainBatch: (fd, inBatch, outBatch, keys, values, count) =>
      drainBatch(fd, inBatch, outBatch, keys, values, count, null) as number,
    possibleCpus: () => possibleCpus() as number,
    programId: (fd) => objInfo(fd, 256, 'program').readUInt32LE(4),
    linkInfo(fd) {
      // struct bpf_link_info: type, id, prog_id, then a union aligned to 8 (tcx: ifindex, attach_type).
      const buffer = objInfo(fd, 64, 'link');
      return { programId: buffer.readUInt32LE(8), ifindex: buffer.readUInt32LE(16) };
    },
    mapInfo(fd) {
      const buffer = objInfo(fd, 96, 'map');
      const nameBytes = buffer.subarray(24, 40);
      const end = nameBytes.indexOf(0);
      return {
        type: buffer.readUInt32LE(0),
        keySize: buffer.readUInt32LE(8),
        valueSize: buffer.readUInt32LE(12),
        maxEntries: buffer.readUInt32LE(16),
        name: nameBytes.subarray(0, end < 0 ? 16 : end).toString('latin1'),
      };
    },
    close: (fd) => void close(fd),
    graceSync() {
      const code = Number(syscall(SYS_MEMBARRIER, MEMBARRIER_CMD_GLOBAL, 0, 0));
      if (code !== 0) throw new EbpfError('membarrier(MEMBARRIER_CMD_GLOBAL) failed: no grace period');
    },
    testRun(programFd, packet, repeat) {
      const run = {
        sz: koffi.sizeof(opts),
        data_in: packet,
        data_out: null,
        data_size_in: packet.length,
        data_size_out: 0,
        ctx_in: null,
        ctx_out: null,
        ctx_size_in: 0,
        ctx_size_out: 0,
        retval: 0,
        repeat,
        duration: 0,
        flags: 0,
        cpu: 0,
        batch_size: 0,
      };
      const code = testRun(programFd, run) as number;
      if (code !== 0)
        throw new EbpfError(`running the BPF program on a test packet failed: ${errnoName(code)}`);
      return { retval: run.retval, duration: run.duration };
    },
    graceAsync(done) {
      queued.push(done);
      if (!waiting) wait();
    },
  };
  return loaded;
}

const ERRNO_NAMES = new Map(Object.entries(constants.errno).map(([name, value]) => [value, name]));

/** `-2` → `ENOENT`. */
export function errnoName(code: number): string {
  return ERRNO_NAMES.get(-code) ?? `error ${code}`;
}

export const ENOENT = -constants.errno.ENOENT;
