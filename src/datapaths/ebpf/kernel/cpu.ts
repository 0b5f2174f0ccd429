/**
 * Pinning the calling thread to the CPU it runs on (sched_setaffinity through koffi), so
 * test runs of the two hooks share per-CPU maps the way one packet's two hooks do in the
 * kernel (the hand-over from from_pod to to_pod is per CPU). For tests and benchmarks.
 */
import { createRequire } from 'node:module';
import { EbpfError } from './types.ts';

type CFunction = (...args: unknown[]) => number;

/** The CPU this thread now stays on, and how to give it its earlier CPUs back. */
interface CpuPin {
  readonly cpu: number;
  restore(): void;
}

/** Pins this thread (Node's main thread makes the test runs) to its current CPU. */
export function pinToCurrentCpu(): CpuPin {
  const koffi = createRequire(import.meta.url)('koffi') as {
    load(path: string): { func(signature: string): CFunction };
  };
  const libc = koffi.load('libc.so.6');
  const getAffinity = libc.func('int sched_getaffinity(int pid, size_t size, void *mask)');
  const setAffinity = libc.func('int sched_setaffinity(int pid, size_t size, void *mask)');
  const getCpu = libc.func('int sched_getcpu()');
  const earlier = Buffer.alloc(128);
  if (getAffinity(0, earlier.length, earlier) < 0) throw new EbpfError('sched_getaffinity failed');
  const cpu = getCpu();
  const mask = Buffer.alloc(128);
  mask[cpu >> 3] = 1 << (cpu & 7);
  if (setAffinity(0, mask.length, mask) !== 0) throw new EbpfError(`pinning to CPU ${cpu} failed`);
  return { cpu, restore: () => void setAffinity(0, earlier.length, earlier) };
}
