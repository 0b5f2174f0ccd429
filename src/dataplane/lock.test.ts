/**
 * Locks: exclusive between processes, waited for up to a deadline, refused with the holder named,
 * and released by the kernel when the holder is killed (no stale lock after a crash). A release
 * removes the file, and a waiter whose file was removed meanwhile locks the current one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireLock, LockBusyError } from './lock.ts';

/** A child process that takes the lock, says so, and holds it until killed. */
function holder(path: string, releaseAfterMs?: number): Promise<{ kill(): Promise<void> }> {
  const code = `
    const { acquireLock } = await import(${JSON.stringify(new URL('./lock.ts', import.meta.url).href)});
    const lock = acquireLock(${JSON.stringify(path)});
    process.stdout.write('held\\n');
    ${releaseAfterMs === undefined ? '' : `setTimeout(() => lock.release(), ${releaseAfterMs});`}
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.stdout.once('data', () =>
      resolve({
        kill: () =>
          new Promise((done) => {
            child.once('exit', () => done());
            child.kill('SIGKILL');
          }),
      }),
    );
    child.once('exit', (code) => reject(new Error(`holder exited (${code})`)));
  });
}

describe('locks', () => {
  it('is exclusive across processes, says who holds it, and is released when the holder is killed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'palisade-lock-'));
    try {
      const path = join(dir, 'locks', 'x.lock');
      const other = await holder(path);
      assert.equal(statSync(join(dir, 'locks')).mode & 0o777, 0o700);
      const started = performance.now();
      assert.throws(
        () => acquireLock(path, { waitMs: 200, what: 'lab "x"' }),
        (error: Error) =>
          error instanceof LockBusyError &&
          /^lab "x" is busy: another palisade process \(pid \d+, since /.test(error.message),
      );
      assert.ok(performance.now() - started >= 190, 'waited for the deadline');
      await other.kill(); // kill -9: no chance to clean up
      const mine = acquireLock(path, { waitMs: 0 });
      assert.throws(
        () => acquireLock(path, { waitMs: 0 }),
        LockBusyError,
        'exclusive within one process too',
      );
      mine.release();
      acquireLock(path, { waitMs: 0 }).release();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('removes its file on release; a waiter whose file was removed locks the current one, never beside another holder', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'palisade-lock-'));
    try {
      const path = join(dir, 'x.lock');
      acquireLock(path, { waitMs: 0 }).release();
      assert.equal(existsSync(path), false, 'a released lock leaves no file behind');

      // The other process releases (and removes its file) while this one waits on that file.
      const other = await holder(path, 150);
      const mine = acquireLock(path, { waitMs: 5_000 });
      try {
        assert.equal(existsSync(path), true, 'the waiter holds a file that is at the path');
        assert.throws(
          () => acquireLock(path, { waitMs: 0 }),
          LockBusyError,
          'and it excludes the next comer',
        );
      } finally {
        mine.release();
        await other.kill();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
