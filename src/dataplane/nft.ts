/**
 * nftables as a transaction engine: a script is one transaction that the kernel commits
 * atomically — all of it or none of it. Two ways to reach it:
 *
 * - `libnftablesRunner`: one long-lived libnftables context per network namespace, in this
 *   process (koffi). No process per transaction, and no `nft` left behind if this process dies.
 * - `execNftRunner`: `nft -f -` per transaction, under a deadline (see `exec.ts`).
 *
 * `nftRunner` picks the library when it loads, else the executable (`PALISADE_NFT=exec` forces
 * the executable). Runners never claim what the kernel holds after a failure: callers read back.
 */
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_TIMEOUT_MS, DataplaneError, runSync } from './exec.ts';
import {
  CLONE_NEWNET,
  NFT_OUTPUT_ECHO,
  NFT_OUTPUT_JSON,
  nativeError,
  nativeLibc,
  nativeLibnftables,
} from './native.ts';

export interface NftRunner {
  /** Which way it reaches nftables (`library`, `exec`, `recording`, `fake`). */
  readonly kind: string;
  /**
   * Applies one script as one transaction. Throws a DataplaneError when nft refused it or did
   * not answer; `uncertain` on the error says the transaction may have been committed anyway.
   * With `echo`, returns nft's JSON of every object the transaction added, as the kernel took it
   * (`nft --echo -j`; '' from runners that reach no kernel); otherwise ''.
   */
  apply(script: string, options?: { readonly echo?: boolean }): string;
  /**
   * Runs a read-only `list …` command (without `nft`, e.g. `list table inet palisade`) and
   * returns nft's JSON; undefined when the object does not exist.
   */
  query(command: string): string | undefined;
  /** Releases what the runner holds. */
  close(): void;
}

interface NftRunnerOptions {
  /** Run inside this named network namespace. */
  readonly netns?: string;
  /** Deadline per `nft` process (exec runner), default 30 s. */
  readonly timeoutMs?: number;
}

const where = (netns: string | undefined): string => (netns ? ` in network namespace ${netns}` : '');
const missing = (error: string): boolean => /No such file or directory/.test(error);

/** Why a transaction failed, in nft's words (whether anything is in place is for the caller to check). */
function rejection(stderr: string, netns: string | undefined, uncertain = false): DataplaneError {
  return new DataplaneError(`nft rejected the transaction${where(netns)}:\n${stderr.trim()}`, uncertain);
}

/**
 * Runs `nft --echo` on a script written to a file of its own: with `--echo`, nft 1.0.6 fails to
 * read `-f -` from a child's stdin ("Could not open file /dev/stdin: No such device or address").
 */
function echoed<T>(script: string, run: (file: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'palisade-nft-'));
  try {
    const file = join(dir, 'transaction.nft');
    writeFileSync(file, script);
    return run(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `nft -f -` per transaction, each under a deadline that kills its process group. */
export function execNftRunner(options: NftRunnerOptions = {}): NftRunner {
  const exec = {
    ...(options.netns ? { netns: options.netns } : {}),
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  };
  return {
    kind: 'exec',
    apply(script: string, applying: { readonly echo?: boolean } = {}): string {
      if (script.trim() === '') return '';
      const result = applying.echo
        ? echoed(script, (file) => runSync('nft', ['--echo', '-j', '-f', file], exec))
        : runSync('nft', ['-f', '-'], { ...exec, input: script });
      if (result.code === 0) return applying.echo ? result.stdout : '';
      if (result.code === 127) throw new DataplaneError('nft is not installed (Debian package nftables)');
      if (result.timedOut)
        throw new DataplaneError(
          `nft did not answer${where(options.netns)} within ${exec.timeoutMs} ms and was killed; the transaction may or may not have been committed`,
          true,
        );
      throw rejection(result.stderr, options.netns);
    },
    query(command: string): string | undefined {
      const result = runSync('nft', ['-j', ...command.split(' ')], exec);
      if (result.code === 0) return result.stdout;
      if (missing(result.stderr)) return undefined;
      throw new DataplaneError(
        result.timedOut
          ? `nft ${command} did not answer${where(options.netns)} within ${exec.timeoutMs} ms and was killed`
          : `nft ${command}${where(options.netns)} failed: ${result.stderr.trim() || `exit ${result.code}`}`,
        result.timedOut,
      );
    },
    close: () => undefined,
  };
}

/**
 * One libnftables context for transactions and one for JSON queries, opened inside the network
 * namespace (a netlink socket belongs to the namespace it was created in, so the thread enters
 * the namespace only while the contexts are created). Undefined when libnftables or koffi is
 * not available.
 */
export function libnftablesRunner(options: NftRunnerOptions = {}): NftRunner | undefined {
  const lib = nativeLibnftables();
  const libc = nativeLibc();
  if (!lib || !libc) return undefined;
  const open = (): unknown[] => {
    const contexts = [lib.newContext(), lib.newContext()];
    for (const ctx of contexts) {
      lib.bufferOutput(ctx);
      lib.bufferError(ctx);
    }
    lib.setOutputFlags(contexts[1], NFT_OUTPUT_JSON);
    return contexts;
  };
  let contexts: unknown[];
  if (options.netns) {
    let own: number | undefined;
    let target: number | undefined;
    try {
      own = openSync('/proc/thread-self/ns/net', 'r');
      target = openSync(`/run/netns/${options.netns}`, 'r');
    } catch (error) {
      if (own !== undefined) closeSync(own);
      const missingNetns = (error as NodeJS.ErrnoException).code === 'ENOENT' && own !== undefined;
      throw new DataplaneError(
        missingNetns
          ? `network namespace ${options.netns} does not exist (no /run/netns/${options.netns})`
          : `network namespace ${options.netns}: ${(error as Error).message}`,
      );
    }
    try {
      if (libc.setns(target, CLONE_NEWNET) !== 0)
        throw new DataplaneError(`cannot enter network namespace ${options.netns} (errno ${libc.errno()})`);
      let opened: unknown[] | undefined;
      let failure: unknown;
      try {
        opened = open();
      } catch (error) {
        failure = error;
      }
      // Never leave this thread in the other namespace.
      if (libc.setns(own, CLONE_NEWNET) !== 0)
        throw new Error(`could not return to this process's network namespace (errno ${libc.errno()})`);
      if (!opened) throw failure;
      contexts = opened;
    } finally {
      closeSync(own);
      closeSync(target);
    }
  } else contexts = open();
  const [txn, reader] = contexts;
  let closed = false;
  const check = (): void => {
    if (closed) throw new DataplaneError('the nftables context was closed');
  };
  return {
    kind: 'library',
    apply(script: string, applying: { readonly echo?: boolean } = {}): string {
      if (script.trim() === '') return '';
      check();
      if (applying.echo) lib.setOutputFlags(txn, NFT_OUTPUT_ECHO | NFT_OUTPUT_JSON);
      let code: number;
      try {
        code = lib.runCommand(txn, script);
      } finally {
        if (applying.echo) lib.setOutputFlags(txn, 0);
      }
      const error = lib.error(txn);
      const output = lib.output(txn);
      if (code !== 0) throw rejection(error, options.netns);
      return applying.echo ? output : '';
    },
    query(command: string): string | undefined {
      check();
      const code = lib.runCommand(reader, command);
      const output = lib.output(reader);
      const error = lib.error(reader);
      if (code === 0) return output;
      if (missing(error)) return undefined;
      throw new DataplaneError(`nft ${command}${where(options.netns)} failed: ${error.trim()}`);
    },
    close(): void {
      if (closed) return;
      closed = true;
      lib.freeContext(txn);
      lib.freeContext(reader);
    },
  };
}

/**
 * The fastest runner available: libnftables in-process, else `nft` processes. `PALISADE_NFT=exec`
 * forces processes (to compare, or where loading native code is not wanted).
 */
export function nftRunner(options: NftRunnerOptions = {}): NftRunner {
  if (process.env.PALISADE_NFT !== 'exec') {
    const library = libnftablesRunner(options);
    if (library) return library;
  }
  return execNftRunner(options);
}

/** Why the library runner is not available ('' when it is). */
export function libnftablesUnavailable(): string {
  return nativeLibnftables() && nativeLibc() ? '' : nativeError();
}

/** A runner that only records scripts (for printing a ruleset, and for tests without root). */
export function recordingRunner(): NftRunner & { readonly scripts: string[] } {
  const scripts: string[] = [];
  return {
    kind: 'recording',
    scripts,
    apply(script: string): string {
      scripts.push(script);
      return '';
    },
    query: () => undefined,
    close: () => undefined,
  };
}
