/**
 * The connection-rate figures' client and server (bench/ebpf-connrate.c): new connections in
 * turn — connect, echo, close — between two pods of a lab, timed by the wall clock and by the CPU
 * the client and the server (and any other process named, such as a flow reader) spent on them.
 * Used by the eBPF benchmark and the flow-reporting benchmark.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { execFileSync } from 'node:child_process';

/** The connection-rate client and server (bench/ebpf-connrate.c), compiled into `dir`. */
export function connrateTool(dir: string): string {
  // Found upwards from this module: it runs from bench/ and from its build (.bench-build/bench/).
  let root = import.meta.dirname;
  while (!existsSync(join(root, 'bench', 'ebpf-connrate.c'))) {
    if (dirname(root) === root) throw new Error('bench/ebpf-connrate.c not found');
    root = dirname(root);
  }
  const binary = join(dir, 'ebpf-connrate');
  execFileSync('clang', ['-O2', '-Wall', '-o', binary, join(root, 'bench', 'ebpf-connrate.c')]);
  return binary;
}

/** A process's time on a CPU so far, ns (/proc/PID/schedstat). */
export const cpuNs = (pid: number): number =>
  Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);

/**
 * A process's time on a CPU so far over all its threads, ns — for a Node process, whose libuv and
 * V8 threads work too; 0 once it is gone.
 */
export function processCpuNs(pid: number): number {
  let total = 0;
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return 0;
  }
  for (const task of tasks) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return total;
}

/**
 * Connections in turn by the C client, in `chunks` runs of count / chunks: the wall rate over all
 * of them, and the least CPU ns per connection of a chunk (the client's and the server's, and
 * those of `alsoCounted`: processes whose work the connections cause, such as a flow reader). Other
 * work on the machine only ever adds to a chunk's CPU time — its softirqs served in the client's
 * or server's system calls, its cache and TLB misses — so the least chunk is the one it disturbed
 * least; a chunk of 5,000 connections takes ~0.1 s here, shorter than most such disturbances.
 */
export function connectInTurn(
  tool: string,
  clientNetns: string,
  serverPid: number,
  serverIp: string,
  count: number,
  chunks: number,
  cpu: number | undefined,
  alsoCounted: readonly number[] = [],
): { rate: number; cpu: number } {
  const others = (): number => alsoCounted.reduce((sum, pid) => sum + processCpuNs(pid), 0);
  let connections = 0;
  let wall = 0;
  let least = Infinity;
  for (let k = 0; k < chunks; k++) {
    const before = cpuNs(serverPid);
    const othersBefore = others();
    const out = execFileSync(
      ...onCpu(cpu, 'nsenter', [
        `--net=/run/netns/${clientNetns}`,
        tool,
        'client',
        serverIp,
        String(CONNRATE_PORT),
        String(Math.ceil(count / chunks)),
      ]),
      { encoding: 'utf8' },
    );
    const server = cpuNs(serverPid) - before;
    // A reader polls at most 400 ms apart while idle, then within 100 ms (agent/flow-feed.ts):
    // what it does for this chunk's connections is done by then.
    if (alsoCounted.length > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, READER_LAG_MS);
    const other = others() - othersBefore;
    const [connected, seconds, clientCpu] = out.trim().split(' ').map(Number) as [number, number, number];
    connections += connected;
    wall += seconds;
    least = Math.min(least, (clientCpu + server + other) / connected);
  }
  return { rate: connections / wall, cpu: least };
}

export const CONNRATE_PORT = 5202;

/** How long a chunk waits for the processes counted beside it to finish its work. */
const READER_LAG_MS = 600;

/** A command line run on the pinned CPU, when one is given (taskset execs it: the same pid). */
export const onCpu = (
  cpu: number | undefined,
  command: string,
  args: readonly string[],
): [string, string[]] =>
  cpu === undefined ? [command, [...args]] : ['taskset', ['-c', String(cpu), command, ...args]];
