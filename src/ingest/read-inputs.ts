/**
 * Expands input paths (files, directories searched recursively, `-` for stdin) into file texts,
 * handed one at a time to a visitor that drops each before the next is read (visitInputs), so a
 * large input's texts are never all held together. Problems become
 * diagnostics; one unreadable path never stops the others.
 */
import { createReadStream, fstatSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { makeDiagnostic, type Diagnostic } from '../model/diagnostics.ts';
import type { InputFile } from './types.ts';
import { decodeUtf8 } from './text-checks.ts';
import { notManifestReason, skippedDirectory } from './non-manifests.ts';

export const DEFAULT_MAX_FILE_BYTES = 128 * 1024 * 1024;
const MANIFEST_EXTENSIONS = new Set(['.yaml', '.yml', '.json']);

interface ReadInputsOptions {
  readonly maxFileBytes?: number;
  /**
   * Standard input's text, or undefined when it holds more than `maxBytes` (then reading
   * stops there: a huge pipe must not fill memory). Default: the process's standard input.
   */
  readonly readStdin?: (maxBytes: number) => Promise<string | undefined>;
  /**
   * How the command takes a pod that was written after -f by mistake (`--pod shop/web`), said
   * when a missing path reads like namespace/name; a command with no such option leaves it out.
   */
  readonly podOption?: (name: string) => string;
}

/**
 * Hands each file of the input paths to `visit` as soon as it is read, in order: the file's text
 * is the visitor's to keep or drop.
 */
export async function visitInputs(
  paths: readonly string[],
  options: ReadInputsOptions,
  visit: (file: InputFile) => void,
): Promise<{ diagnostics: Diagnostic[] }> {
  const maxBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  const walk: Walk = {
    maxBytes,
    visit,
    filesRead: 0,
    diagnostics: [],
    seen: new Set(),
    named: await namedFiles(paths),
    ...(options.podOption ? { podOption: options.podOption } : {}),
  };
  for (const path of paths) {
    if (path === '-') {
      // Redirected from a file that is also named (`-f - -f x.yaml < x.yaml`): read it once.
      if (alreadyRead(walk, stdinIdentity())) continue;
      const text = await (options.readStdin ?? readStdin)(maxBytes);
      if (text === undefined || Buffer.byteLength(text) > maxBytes)
        walk.diagnostics.push(tooLarge('<stdin>', maxBytes));
      else found(walk, { name: '<stdin>', text });
      continue;
    }
    await readPath(path, true, walk);
  }
  return { diagnostics: walk.diagnostics };
}

/** A walk over the inputs: where files go, how many went, and the problems met. */
interface Walk {
  readonly maxBytes: number;
  readonly visit: (file: InputFile) => void;
  readonly podOption?: (name: string) => string;
  filesRead: number;
  readonly diagnostics: Diagnostic[];
  /**
   * Files read and directories walked already, by device and inode: one given twice (`-f app
   * -f app`, a directory and a file in it, a link) is read once, or each of its objects would be
   * "defined more than once" at its own place.
   */
  readonly seen: Set<string>;
  /**
   * The files named on the command line, by device and inode: one met first inside a named
   * directory (`-f app -f app/x.yaml`) is still read as named — its problems reported, not
   * skipped quietly as a directory's stray file — whichever order the two come in.
   */
  readonly named: ReadonlySet<string>;
}

/** Identities of the paths that are files (a path that cannot be read is reported when it is read). */
async function namedFiles(paths: readonly string[]): Promise<Set<string>> {
  const identities = new Set<string>();
  for (const path of paths) {
    if (path === '-') continue;
    const info = await stat(path).catch(() => undefined);
    if (info?.isFile()) identities.add(identity(info));
  }
  return identities;
}

function identity(info: { dev: number; ino: number }): string {
  return `${info.dev}:${info.ino}`;
}

/** Whether `path` is a file named on the command line (stat only when some file was named). */
async function isNamed(walk: Walk, path: string): Promise<boolean> {
  if (walk.named.size === 0) return false;
  const info = await stat(path).catch(() => undefined);
  return info !== undefined && walk.named.has(identity(info));
}

function found(walk: Walk, file: InputFile): void {
  walk.filesRead++;
  walk.visit(file);
}

/** Lowercase DNS names, as a namespace and a pod are named: `shop/web`. */
const NAMESPACED_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/;

/**
 * `explain -f examples/shop shop/web` reads `shop/web` as a second path, since -f takes every
 * word after it; when a missing path reads like namespace/name, say so, and how the command
 * takes a pod when it takes one.
 */
function podNameHint(path: string, podOption: ((name: string) => string) | undefined): string {
  if (!NAMESPACED_NAME.test(path) || /\.(ya?ml|json)$/.test(path)) return '';
  return podOption
    ? ` (if it names a pod, give it with ${podOption(path)}: -f takes every word after it as a path)`
    : ' (-f takes every word after it as a path)';
}

async function readPath(path: string, explicit: boolean, walk: Walk): Promise<void> {
  const { maxBytes, diagnostics } = walk;
  let info;
  try {
    info = await stat(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    diagnostics.push(
      code === 'ENOENT'
        ? makeDiagnostic(
            'FILE_NOT_FOUND',
            path === ''
              ? 'an empty path names no file (was a shell variable after -f unset?)'
              : `no such file or directory: ${path}${podNameHint(path, walk.podOption)}`,
            {
              file: path,
            },
          )
        : makeDiagnostic('FILE_UNREADABLE', `cannot read ${path}: ${errorText(error)}`, { file: path }),
    );
    return;
  }
  if (info.isDirectory()) {
    // Met again — named twice, or through a link to itself or a parent (`loop.yaml -> .`): one
    // walk, not one per level until the path is too long to open.
    if (alreadyRead(walk, `directory ${identity(info)}`)) return;
    const before = walk.filesRead;
    const diagnosticsBefore = diagnostics.length;
    let entries;
    try {
      entries = await readdir(path, { withFileTypes: true });
    } catch (error) {
      diagnostics.push(
        makeDiagnostic('FILE_UNREADABLE', `cannot list ${path}: ${errorText(error)}`, { file: path }),
      );
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue; // .git and editor files are never manifests
      const child = join(path, entry.name);
      if (entry.isDirectory()) {
        if (!skippedDirectory(entry.name)) await readPath(child, false, walk);
      } else if (MANIFEST_EXTENSIONS.has(extname(entry.name).toLowerCase())) {
        const reason = notManifestReason(entry.name);
        if (reason && !(await isNamed(walk, child)))
          diagnostics.push(
            makeDiagnostic('NOT_KUBERNETES', `${child} is ${reason}, not Kubernetes manifests; skipped`, {
              file: child,
            }),
          );
        else await readPath(child, false, walk);
      }
    }
    const skipped = diagnostics.slice(diagnosticsBefore).some((d) => d.code === 'NOT_KUBERNETES');
    if (explicit && walk.filesRead === before && !skipped) {
      diagnostics.push(
        makeDiagnostic('NO_INPUT_FILES', `${path} holds no .yaml, .yml or .json files`, { file: path }),
      );
    }
    return;
  }
  if (!explicit && !info.isFile()) {
    // A pipe or a socket found in a directory would wait for a writer forever: not a manifest.
    diagnostics.push(
      makeDiagnostic('NOT_KUBERNETES', `${path} is not a regular file (a pipe, socket or device); skipped`, {
        file: path,
      }),
    );
    return;
  }
  if (alreadyRead(walk, identity(info))) {
    walk.filesRead++; // read, once: its directory does hold manifests
    return;
  }
  if (info.size > maxBytes) {
    diagnostics.push(tooLarge(path, maxBytes, info.size));
    return;
  }
  let decoded: ReturnType<typeof decodeUtf8>;
  try {
    // A named pipe, `-f <(kubectl get …)` or a device has no size beforehand: read up to the limit.
    const bytes = info.isFile() ? await readFile(path) : await readUpTo(path, maxBytes);
    if (bytes === undefined) {
      diagnostics.push(tooLarge(path, maxBytes));
      return;
    }
    // Bytes, not text: decoding would turn what is not UTF-8 into U+FFFD without a word.
    decoded = decodeUtf8(path, bytes);
  } catch (error) {
    diagnostics.push(
      makeDiagnostic('FILE_UNREADABLE', `cannot read ${path}: ${errorText(error)}`, { file: path }),
    );
    return;
  }
  // Only reading is FILE_UNREADABLE. What the visitor does with the text (parse, decode) is its
  // own: a fault there is not an unreadable file (loadCluster reports it as PROCESSING_FAILED).
  const named = explicit || walk.named.has(identity(info));
  if ('text' in decoded)
    found(
      walk,
      named ? { name: path, text: decoded.text } : { name: path, text: decoded.text, discovered: true },
    );
  else diagnostics.push(decoded.diagnostic);
}

/** The bytes of a file of unknown size, or undefined once they pass `maxBytes` (reading stops there). */
function readUpTo(path: string, maxBytes: number): Promise<Buffer | undefined> {
  return readStreamUpTo(createReadStream(path), maxBytes);
}

async function readStreamUpTo(stream: AsyncIterable<unknown>, maxBytes: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let total = 0;
  // Leaving the loop early closes the stream.
  for await (const chunk of stream) {
    total += (chunk as Buffer).length;
    if (total > maxBytes) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Whether the file of this identity was read already; if not, it is now taken as read. */
function alreadyRead(walk: Walk, identity: string | undefined): boolean {
  if (identity === undefined) return false;
  if (walk.seen.has(identity)) return true;
  walk.seen.add(identity);
  return false;
}

/** Standard input's device and inode when it is a regular file (a pipe or a terminal: none). */
function stdinIdentity(): string | undefined {
  try {
    const info = fstatSync(0);
    return info.isFile() ? identity(info) : undefined;
  } catch {
    return undefined;
  }
}

function tooLarge(file: string, maxBytes: number, size?: number): Diagnostic {
  const mib = (n: number): string => `${(n / 1024 / 1024).toFixed(1)} MiB`;
  const actual = size === undefined ? '' : ` (${mib(size)})`;
  return makeDiagnostic(
    'FILE_TOO_LARGE',
    `${file} is larger than the limit of ${mib(maxBytes)}${actual}; raise it with --max-file-size`,
    {
      file,
    },
  );
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The process's standard input as text, or undefined once it passes `maxBytes` (reading stops there). */
export async function readStdin(maxBytes: number): Promise<string | undefined> {
  return (await readStreamUpTo(process.stdin, maxBytes))?.toString('utf8');
}
