/**
 * The few C functions the datapath calls in-process, through koffi (an FFI package that ships
 * its binaries in the npm package): `flock` for locks the kernel releases when a process dies,
 * `setns` to open a libnftables context inside a network namespace, and libnftables itself
 * (Debian `libnftables1`, what `nft` is built on). Loaded on first use; a machine without them
 * gets `undefined` and the callers fall back or say what is missing.
 */
import { createRequire } from 'node:module';

/** The libc functions used here. */
export interface Libc {
  flock(fd: number, operation: number): number;
  setns(fd: number, nstype: number): number;
  /** The calling thread's errno after a failed call. */
  errno(): number;
}

/** libnftables' context API (nftables 1.0). */
interface Libnftables {
  newContext(): unknown;
  freeContext(ctx: unknown): void;
  bufferOutput(ctx: unknown): void;
  bufferError(ctx: unknown): void;
  setOutputFlags(ctx: unknown, flags: number): void;
  runCommand(ctx: unknown, text: string): number;
  output(ctx: unknown): string;
  error(ctx: unknown): string;
}

export const LOCK_EX = 2;
export const LOCK_NB = 4;
export const LOCK_UN = 8;
export const EWOULDBLOCK = 11;
export const CLONE_NEWNET = 0x40000000;
/** `NFT_CTX_OUTPUT_JSON`. */
export const NFT_OUTPUT_JSON = 1 << 4;
/** `nft --echo`: print what a transaction added (with JSON: as JSON). */
export const NFT_OUTPUT_ECHO = 1 << 5;

interface Koffi {
  load(path: string): { func(signature: string): (...args: unknown[]) => unknown };
  errno(): number;
}

let koffi: Koffi | null | undefined;
let libc: Libc | null | undefined;
let libnftables: Libnftables | null | undefined;
let loadError = '';

function loadKoffi(): Koffi | undefined {
  if (koffi === undefined) {
    try {
      koffi = createRequire(import.meta.url)('koffi') as Koffi;
    } catch (error) {
      loadError = `koffi could not be loaded: ${String(error)}`;
      koffi = null;
    }
  }
  return koffi ?? undefined;
}

/** libc through koffi, or undefined (with `nativeError()` saying why). */
export function nativeLibc(): Libc | undefined {
  if (libc !== undefined) return libc ?? undefined;
  const ffi = loadKoffi();
  if (!ffi) {
    libc = null;
    return undefined;
  }
  try {
    const lib = ffi.load('libc.so.6');
    const flock = lib.func('int flock(int fd, int operation)') as (fd: number, op: number) => number;
    const setns = lib.func('int setns(int fd, int nstype)') as (fd: number, type: number) => number;
    libc = { flock, setns, errno: () => ffi.errno() };
  } catch (error) {
    loadError = `libc could not be loaded through koffi: ${String(error)}`;
    libc = null;
  }
  return libc ?? undefined;
}

/** libnftables through koffi, or undefined (with `nativeError()` saying why). */
export function nativeLibnftables(): Libnftables | undefined {
  if (libnftables !== undefined) return libnftables ?? undefined;
  const ffi = loadKoffi();
  if (!ffi) {
    libnftables = null;
    return undefined;
  }
  try {
    const lib = ffi.load('libnftables.so.1');
    const f = <T>(signature: string): T => lib.func(signature) as T;
    const newContext = f<(flags: number) => unknown>('void *nft_ctx_new(uint32_t flags)');
    const getOutput = f<(ctx: unknown) => string | null>('const char *nft_ctx_get_output_buffer(void *ctx)');
    const getError = f<(ctx: unknown) => string | null>('const char *nft_ctx_get_error_buffer(void *ctx)');
    libnftables = {
      newContext: () => newContext(0),
      freeContext: f('void nft_ctx_free(void *ctx)'),
      bufferOutput: f('int nft_ctx_buffer_output(void *ctx)'),
      bufferError: f('int nft_ctx_buffer_error(void *ctx)'),
      setOutputFlags: f('void nft_ctx_output_set_flags(void *ctx, uint32_t flags)'),
      runCommand: f('int nft_run_cmd_from_buffer(void *ctx, const char *buf)'),
      output: (ctx) => getOutput(ctx) ?? '',
      error: (ctx) => getError(ctx) ?? '',
    };
  } catch (error) {
    loadError = `libnftables could not be loaded (Debian package libnftables1): ${String(error)}`;
    libnftables = null;
  }
  return libnftables ?? undefined;
}

/** Why the last native load failed ('' when none did). */
export function nativeError(): string {
  return loadError;
}
