/**
 * The BPF program's object file, compiled on first use: the C source (`bpf/` at the package's
 * root) is compiled by Debian's clang (`-target bpf`) into a cache keyed by the source and the
 * compiler's version, so nothing but the eBPF datapath ever needs clang — not `npm ci`, not the
 * analysis commands — and a second use costs nothing. Concurrent first uses each compile into a
 * temporary file and rename it into place.
 */
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EbpfError } from './types.ts';

/** Where compiled objects are kept (root only; cleared at reboot). */
const OBJECT_CACHE = '/run/palisade/bpf-objects';

/** The program and every header it includes (bpf/*.h): all go into the compiled object's key. */
function sourceFiles(source: string): string[] {
  return [
    'palisade.bpf.c',
    ...readdirSync(source)
      .filter((f) => f.endsWith('.h'))
      .sort(),
  ];
}

/** The folder holding the program's C source, found upwards from this module (src/ or dist/). */
function sourceDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'bpf', 'palisade.bpf.c'))) return join(dir, 'bpf');
    const parent = dirname(dir);
    if (parent === dir) throw new EbpfError('the eBPF program source (bpf/palisade.bpf.c) is missing');
    dir = parent;
  }
}

/**
 * A tool's version line, asked once per process: the program's key and the tcx tool's are asked
 * on every load and attach, and `clang --version` (a synchronous start of a large binary) held an
 * agent's event loop for seconds on a loaded node — once per interface attached.
 */
const versions = new Map<string, string | undefined>();
function toolVersion(tool: string, args: readonly string[]): string | undefined {
  // PATH in the key: a test (or a caller) that hides the tool sees it missing.
  const key = [process.env.PATH ?? '', tool, ...args].join('\0');
  if (versions.has(key)) return versions.get(key);
  const result = spawnSync(tool, args, { encoding: 'utf8' });
  const version = result.error || result.status !== 0 ? undefined : result.stdout.trim();
  versions.set(key, version);
  return version;
}

/** Where this machine's <asm/…> headers are (Debian's multiarch), which `-target bpf` does not find by itself. */
export function asmIncludeDir(): string {
  const triplet = process.arch === 'arm64' ? 'aarch64-linux-gnu' : 'x86_64-linux-gnu';
  return `/usr/include/${triplet}`;
}

/**
 * The compiled program, compiling it when this source and compiler have not been compiled yet.
 * Throws an EbpfError (one line) when clang or libbpf's headers are missing or compilation fails.
 */
export function compiledObject(cache = OBJECT_CACHE): string {
  const source = sourceDir();
  const clang = toolVersion('clang', ['--version']);
  if (clang === undefined)
    throw new EbpfError(
      'the eBPF datapath needs clang to compile its program (Debian: apt-get install clang llvm libbpf-dev)',
    );
  const hash = createHash('sha256');
  for (const file of sourceFiles(source)) hash.update(readFileSync(join(source, file)));
  hash.update(clang);
  const object = join(cache, `palisade-${hash.digest('hex').slice(0, 16)}.o`);
  if (existsSync(object)) return object;
  if (!existsSync('/usr/include/bpf/bpf_helpers.h'))
    throw new EbpfError("the eBPF datapath needs libbpf's headers (Debian: apt-get install libbpf-dev)");
  mkdirSync(cache, { recursive: true });
  const temporary = `${object}.${process.pid}.tmp`;
  const result = spawnSync(
    'clang',
    [
      '-O2',
      '-g',
      '-Wall',
      '-Werror',
      '-target',
      'bpf',
      '-I',
      asmIncludeDir(),
      '-c',
      join(source, 'palisade.bpf.c'),
      '-o',
      temporary,
    ],
    { encoding: 'utf8' },
  );
  if (result.status !== 0) {
    rmSync(temporary, { force: true });
    const first = (result.stderr || String(result.error ?? '')).split('\n').find((l) => l.includes('error'));
    throw new EbpfError(`compiling the eBPF program failed: ${first ?? `clang exited ${result.status}`}`);
  }
  renameSync(temporary, object);
  return object;
}

/**
 * The tcx link tool (bpf/tcx-link.c, a small user-space program), compiled on first use into the
 * same cache as the program, or undefined when it cannot be (then programs attach with tc).
 */
export function tcxTool(cache = OBJECT_CACHE): string | undefined {
  const source = join(sourceDir(), 'tcx-link.c');
  const clang = toolVersion('clang', ['--version']);
  if (clang === undefined || !existsSync(source)) return undefined;
  const hash = createHash('sha256').update(readFileSync(source)).update(clang);
  const binary = join(cache, `tcx-link-${hash.digest('hex').slice(0, 16)}`);
  if (existsSync(binary)) return binary;
  mkdirSync(cache, { recursive: true });
  const temporary = `${binary}.${process.pid}.tmp`;
  const result = spawnSync('clang', ['-O2', '-Wall', '-o', temporary, source], { encoding: 'utf8' });
  if (result.status !== 0) {
    rmSync(temporary, { force: true });
    return undefined;
  }
  renameSync(temporary, binary);
  return binary;
}

/** bpftool's version line, or an EbpfError saying it is missing. */
export function requireBpftool(): void {
  if (toolVersion('bpftool', ['version']) === undefined)
    throw new EbpfError(
      'the eBPF datapath needs bpftool to load its program (Debian: apt-get install bpftool)',
    );
}
