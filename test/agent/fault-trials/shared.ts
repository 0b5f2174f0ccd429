/**
 * What the fault trials share: the suite they run in (its worlds, temp dirs and the times to
 * converge it reports), and small helpers over a FaultWorld.
 */
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { FaultWorld } from '../fault-world.ts';
import { type WorldOptions } from '../fault-world.ts';

/** Agent processes starting on a loaded machine (tsx loads the sources) may take this long. */
export const STARTUP_MS = 150_000;

/**
 * How long the agents may take to converge after a fault. They take 1–5 s on a quiet machine
 * (the times each trial reports); in CI, on two cores shared with the whole suite, a full resync
 * of the eBPF datapath took over 30 s. The trials hold that they converge, fail closed meanwhile
 * and never open; how fast is measured where nothing else runs (docs/BENCHMARKS.md).
 */
export const CONVERGE_MS = 120_000;

/** The suite a datapath's fault trials run in. */
export interface FaultSuite {
  /** The datapath the suite's agents enforce with. */
  readonly datapath: 'nftables' | 'ebpf';
  /**
   * A new world of its own, closed when the trial `t` ends: left running to the suite's end, every
   * earlier trial's agents kept verifying and watching (on eBPF, 24 agents by the eleventh trial
   * took a two-core machine to load 42 on their own).
   */
  readonly world: (t: TestContext, name: string, options?: WorldOptions) => Promise<FaultWorld>;
  /** Temporary directories removed with the suite. */
  readonly temps: string[];
  /** Notes how long the agents took to converge after a fault (printed at the end). */
  readonly converged: (fault: string, ms: number) => void;
}

/** Fails with the agents' logs attached. */
export function check(w: FaultWorld, ok: boolean, what: string): void {
  assert.ok(ok, `${what}\n${w.logs()}`);
}

/** The last lines of a process's log file, for a failing test's message. */
export function readLog(path: string): string {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-30).join('\n');
  } catch {
    return '(no log)';
  }
}

/** The revision of the store's last policy change (objects, or the reflector's records). */
export async function currentRevision(w: FaultWorld): Promise<number> {
  const [objects, records] = await Promise.all([
    w.store.lastModified(w.layout.objects),
    w.store.lastModified(w.layout.resourceVersions),
  ]);
  return Math.max(objects.modRevision, records.modRevision);
}

export async function leader(w: FaultWorld): Promise<string | undefined> {
  const got = await w.store.range(w.layout.leader);
  return got.kvs[0]?.value;
}
