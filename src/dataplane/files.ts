/**
 * Files the datapath and the lab keep as root: written atomically (a temporary file in the same
 * directory, fsync, rename, fsync of the directory — a reader or a crash sees the old content or
 * the new, never a mix or nothing), created 0600 in 0700 directories whatever the umask, and read
 * only when they are owned by this user and writable by nobody else (a file another user could
 * write must not steer what root does).
 */
import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { dirname, join, basename } from 'node:path';
import { DataplaneError } from './exec.ts';

/**
 * A state file or directory that is missing, unsafe or unwritable; the message names the path
 * (a tool's refusal like any other: one line for the user, never an internal error).
 */
export class StateFileError extends DataplaneError {}

const uid = (): number => (typeof process.getuid === 'function' ? process.getuid() : 0);

function describe(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  return e.code ? `${e.code}: ${e.message.replace(/^[A-Z]+: /, '')}` : String(error);
}

/** Refuses a path owned by another user or writable by group or others (and symlinks). */
function checkTrusted(path: string, mode: number, owner: number, kind: string): void {
  if (owner !== uid())
    throw new StateFileError(
      `${path}: ${kind} is owned by uid ${owner}, not by this user (${uid()}); refusing it`,
    );
  if ((mode & 0o022) !== 0)
    throw new StateFileError(
      `${path}: ${kind} is writable by ${mode & 0o002 ? 'others' : 'its group'} (mode ${(mode & 0o777).toString(8)}); refusing it`,
    );
}

/** Creates a directory (and parents) 0700, or checks an existing one is ours and private enough. */
export function ensurePrivateDir(path: string): void {
  try {
    mkdirSync(path, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new StateFileError(`cannot create ${path}: ${describe(error)}`);
  }
  checkDir(path);
}

/** Checks that a directory exists, is a directory (not a symlink), is ours and not writable by others. */
function checkDir(path: string): void {
  let stat;
  try {
    stat = lstatSync(path);
  } catch (error) {
    throw new StateFileError(`${path}: ${describe(error)}`);
  }
  if (!stat.isDirectory()) throw new StateFileError(`${path}: not a directory; refusing it`);
  checkTrusted(path, stat.mode, stat.uid, 'the directory');
}

/** Writes a file atomically with mode 0600; throws StateFileError naming the path and the cause. */
export function writeFileAtomic(path: string, data: string): void {
  const dir = dirname(path);
  const temporary = join(dir, `.${basename(path)}.${process.pid}.tmp`);
  let fd: number | undefined;
  try {
    fd = openSync(
      temporary,
      constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
      0o600,
    );
    fchmodSync(fd, 0o600);
    const buffer = Buffer.from(data, 'utf8');
    let offset = 0;
    while (offset < buffer.length) offset += writeSync(fd, buffer, offset);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(temporary, path);
    syncDir(dir);
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    rmSync(temporary, { force: true });
    throw new StateFileError(`cannot write ${path}: ${describe(error)}`);
  }
}

/** Reads a file after checking it is a regular file of ours that nobody else can write. */
export function readTrustedFile(path: string): string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    throw new StateFileError(`cannot read ${path}: ${describe(error)}`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new StateFileError(`${path}: not a regular file; refusing it`);
    checkTrusted(path, stat.mode, stat.uid, 'the file');
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

function syncDir(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
