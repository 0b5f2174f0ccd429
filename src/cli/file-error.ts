/**
 * A file system error in words a user reads without looking up errno names: `ENOTDIR` alone
 * said little when `generate -o` was given an existing file.
 */
const WORDS: Readonly<Record<string, string>> = {
  ENOENT: 'no such file or directory',
  ENOTDIR: 'a part of the path is a file, not a directory',
  EISDIR: 'it is a directory',
  EEXIST: 'it already exists',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOSPC: 'no space left on the device',
  EROFS: 'the file system is read-only',
  EMFILE: 'too many open files',
};

export function fileErrorText(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code && WORDS[code]) return `${WORDS[code]} (${code})`;
  return code ?? (error instanceof Error ? error.message : String(error));
}
