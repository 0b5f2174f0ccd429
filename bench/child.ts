/**
 * The `palisade` executable as a user runs it, for end-to-end figures: wall time, the process's
 * peak RSS and CPU time (reported by a preload at exit, so the figures are the child's own), with
 * stdout discarded, or read slowly through a pipe (a reader that is behind, to see that output
 * waits instead of piling up in memory).
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

/** The executable compiled with the benchmarks (the same sources as the library figures). */
export const CLI = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));

export interface CliRun {
  readonly code: number | null;
  readonly millis: number;
  readonly peakMiB: number;
  /** The child's CPU time (user + system, every thread), ms; NaN when it died before reporting. */
  readonly cpuMillis: number;
  readonly stdoutBytes: number;
  readonly stderr: string;
  /** Killed after `timeoutMs`: the figures are those of an unfinished run. */
  readonly timedOut?: boolean;
}

/** The address a `palisade serve` child says it listens on (its stderr), or its exit as an error. */
export function listeningUrl(child: ChildProcessByStdio<null, null, Readable>): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let text = '';
    child.stderr.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const match = /palisade serve: (http:\/\/\S+)/.exec(text);
      if (match) resolve(match[1] as string);
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${text}`)));
  });
}

/** A scratch directory named for this process, removed by `remove`. */
export function scratchDirectory(label: string): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), `palisade-bench-${label}-${process.pid}-`));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/**
 * Runs `palisade ARGS…`. `slowReader` reads stdout a chunk per millisecond; otherwise stdout
 * is read as fast as it comes and counted.
 */
export function runCli(
  args: readonly string[],
  options: {
    slowReader?: boolean;
    nodeOptions?: readonly string[];
    /** Another build of the executable (e.g. the code before a change), instead of `CLI`. */
    cli?: string;
    /** Kills the run after this long (the result then has `timedOut`). */
    timeoutMs?: number;
    env?: NodeJS.ProcessEnv;
  } = {},
): Promise<CliRun> {
  const scratch = scratchDirectory('peak');
  const peakFile = join(scratch.path, 'peak');
  const preload = join(scratch.path, 'peak.cjs');
  writeFileSync(
    preload,
    `process.on('exit', () => { const u = process.resourceUsage(); require('node:fs').writeFileSync(${JSON.stringify(peakFile)}, u.maxRSS + ' ' + (u.userCPUTime + u.systemCPUTime)); });\n`,
  );
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [...(options.nodeOptions ?? []), '--require', preload, options.cli ?? CLI, ...args],
    { stdio: ['ignore', 'pipe', 'pipe'], ...(options.env ? { env: options.env } : {}) },
  );
  let timedOut = false;
  const timer =
    options.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          child.kill('SIGKILL');
        }, options.timeoutMs);
  let stdoutBytes = 0;
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdoutBytes += chunk.length;
    if (options.slowReader) {
      child.stdout.pause();
      setTimeout(() => child.stdout.resume(), 1);
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      if (timer) clearTimeout(timer);
      const millis = performance.now() - started;
      let peakKiB = 0;
      let cpuMicros = NaN;
      try {
        [peakKiB, cpuMicros] = readFileSync(peakFile, 'utf8').split(' ').map(Number) as [number, number];
      } catch {
        // The process died before its exit handler ran: no figure.
      }
      scratch.remove();
      resolve({
        code,
        millis,
        peakMiB: peakKiB / 1024,
        cpuMillis: cpuMicros / 1000,
        stdoutBytes,
        stderr,
        ...(timedOut ? { timedOut } : {}),
      });
    });
  });
}
