/**
 * One exclusive lock per lab and per datapath instance, so that two processes never plan and
 * commit against the same tables at once. A `flock` on a lock file: the kernel releases it when
 * the holder exits or is killed, so a crash never leaves a stale lock behind. A second process
 * waits up to its deadline, then fails with a message naming the holder.
 *
 * A release removes the lock file (one per lab and per network namespace would otherwise pile up
 * in /run). Removing a file others may have opened is safe only with a check on the other side:
 * a process that gets the lock verifies that its file is still the one at the path, and opens it
 * again when the holder removed it meanwhile.
 */
import {
  closeSync,
  constants,
  fstatSync,
  ftruncateSync,
  openSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { DataplaneError } from './exec.ts';
import { ensurePrivateDir, StateFileError } from './files.ts';
import { EWOULDBLOCK, LOCK_EX, LOCK_NB, LOCK_UN, nativeError, nativeLibc, type Libc } from './native.ts';

/** A held lock; `release` is idempotent. */
export interface HeldLock {
  readonly path: string;
  release(): void;
}

interface LockOptions {
  /** How long to wait for another holder, in milliseconds (default 30 s; 0: fail at once). */
  readonly waitMs?: number;
  /** What the lock protects, for messages (`lab "x"`). */
  readonly what?: string;
}

/** Another process holds the lock past the deadline. */
export class LockBusyError extends DataplaneError {}

const pause = new Int32Array(new SharedArrayBuffer(4));
const sleep = (ms: number): void => void Atomics.wait(pause, 0, 0, ms);

/** Takes the lock at `path` (created 0600 in a 0700 directory), waiting up to `waitMs`. */
export function acquireLock(path: string, options: LockOptions = {}): HeldLock {
  const libc = nativeLibc();
  if (!libc) throw new DataplaneError(`cannot lock ${path}: ${nativeError()}`);
  ensurePrivateDir(dirname(path));
  const deadline = performance.now() + (options.waitMs ?? 30_000);
  let fd: number;
  for (;;) {
    fd = openLockFile(path);
    waitForLock(libc, fd, path, deadline, options);
    if (isFileAt(fd, path)) break;
    closeSync(fd); // the previous holder removed this file as it released it: lock the current one
  }
  // Who holds it, for the message another process shows; informative only.
  ftruncateSync(fd, 0);
  writeSync(fd, `pid ${process.pid}, since ${new Date().toISOString()}\n`, 0);
  let held = true;
  return {
    path,
    release(): void {
      if (!held) return;
      held = false;
      // Removed while still locked, so nobody can lock this file and believe it current.
      try {
        unlinkSync(path);
      } catch {
        // already gone (removed by hand): nothing to tidy
      }
      libc.flock(fd, LOCK_UN);
      closeSync(fd);
    },
  };
}

/** Where the lock of the datapath instance driving one network namespace's tables lives. */
export const DATAPATH_LOCK_ROOT = '/run/palisade/datapath';

/**
 * Takes the lock of the datapath instance for a network namespace (or the host's, without one):
 * whoever commits to that namespace's tables — a lab command, a node agent — holds it meanwhile.
 * `root`: the directory of such locks (default DATAPATH_LOCK_ROOT; an agent's `--run-dir`/datapath).
 */
export function acquireDatapathLock(
  netns: string | undefined,
  options: LockOptions & { readonly root?: string } = {},
): HeldLock {
  const name = netns ?? 'host';
  if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new DataplaneError(`not a network namespace name: ${name}`);
  return acquireLock(`${options.root ?? DATAPATH_LOCK_ROOT}/${name}.lock`, {
    what: `the datapath of ${netns ? `network namespace ${netns}` : 'the host'}`,
    ...options,
  });
}

/** Locks the open file `fd`, polling until `deadline`; closes it and throws when it cannot. */
function waitForLock(libc: Libc, fd: number, path: string, deadline: number, options: LockOptions): void {
  for (;;) {
    if (libc.flock(fd, LOCK_EX | LOCK_NB) === 0) return;
    const errno = libc.errno();
    if (errno !== EWOULDBLOCK) {
      closeSync(fd);
      throw new DataplaneError(`cannot lock ${path}: flock failed (errno ${errno})`);
    }
    if (performance.now() >= deadline) {
      const holder = readHolder(path);
      closeSync(fd);
      const waitMs = options.waitMs ?? 30_000;
      throw new LockBusyError(
        `${options.what ?? path} is busy: another palisade process${holder ? ` (${holder})` : ''} holds its lock ${path}` +
          `${waitMs > 0 ? ` and did not release it within ${(waitMs / 1000).toFixed(1)} s` : ''}; try again when it is done`,
      );
    }
    sleep(Math.min(25, Math.max(1, deadline - performance.now())));
  }
}

function openLockFile(path: string): number {
  try {
    return openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    throw new StateFileError(`cannot open the lock ${path}: ${String((error as Error).message)}`);
  }
}

/** Whether the open file `fd` is still the file at `path` (not removed or replaced since). */
function isFileAt(fd: number, path: string): boolean {
  try {
    const open = fstatSync(fd);
    const current = statSync(path);
    return open.ino === current.ino && open.dev === current.dev;
  } catch {
    return false;
  }
}

function readHolder(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return '';
  }
}
