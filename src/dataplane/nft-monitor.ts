/**
 * nftables' change notifications for one table: `nft monitor` (in the network namespace, when
 * one is given) prints every object each transaction adds or deletes, then a line naming the
 * transaction's generation. The monitor groups those lines by transaction and reports each one
 * that touched the table, with the fingerprint elements it added (a writer that stamps its
 * transactions — the nftables renderer does — recognises its own by them).
 *
 * `nft monitor` is a process of its own: it reads the kernel's netlink events whatever this
 * process is busy with. If it stops (killed, or it lost events when the kernel's buffer
 * overflowed), `onStopped` says so — events may have been missed — and the caller restarts it.
 * It never outlives this process: a shell beside it kills it when its standard input (a pipe
 * from here) closes, which the kernel does when this process dies, however it dies.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** One transaction that touched the table. */
export interface TableTransaction {
  /** Its generation, as nft prints it (0 when the line was not seen). */
  readonly generation: number;
  /** Elements it added to the fingerprint set, as `generation . nonce` in decimal. */
  readonly fingerprints: readonly string[];
  /** Its first line that named the table (for the log). */
  readonly example: string;
}

export interface NftMonitorOptions {
  /** `inet palisade`. */
  readonly table: string;
  /** The set whose elements stamp a writer's transactions. */
  readonly fingerprintSet: string;
  readonly netns?: string;
  readonly onTransaction: (transaction: TableTransaction) => void;
  /** The monitor process ended or reported an error: events may have been missed. */
  readonly onStopped: (why: string) => void;
}

export interface NftMonitor {
  close(): void;
}

/**
 * nft monitor, killed when standard input closes; the shell ends when nft does, with its code.
 * (A background job's standard input is /dev/null unless redirected: the pipe goes through fd 3.)
 */
const TIED = 'exec 3<&0; nft monitor </dev/null & m=$!; (cat <&3 >/dev/null; kill $m 2>/dev/null) & wait $m';

export function monitorTable(options: NftMonitorOptions): NftMonitor {
  const argv = [...(options.netns ? ['ip', 'netns', 'exec', options.netns] : []), 'sh', '-c', TIED];
  let child: ChildProcess | undefined = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
  let closed = false;
  const named = ` ${options.table}`;
  const stamp = `add element ${options.table} ${options.fingerprintSet} { `;
  let touched: string | undefined;
  let fingerprints: string[] = [];
  const lines = createInterface({ input: child.stdout! });
  lines.on('line', (line) => {
    if (line.startsWith('# new generation ')) {
      if (touched !== undefined)
        options.onTransaction({
          generation: Number(/\d+/.exec(line)?.[0] ?? 0),
          fingerprints,
          example: touched,
        });
      touched = undefined;
      fingerprints = [];
      return;
    }
    if (!line.includes(`${named} `) && !line.endsWith(named)) return;
    touched ??= line.length > 160 ? `${line.slice(0, 157)}...` : line;
    if (line.startsWith(stamp)) fingerprints.push(stampText(line.slice(stamp.length)));
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2000);
    // nft keeps running after some errors (ENOBUFS when events overflow): events were lost.
    if (!closed) options.onStopped(`nft monitor: ${stderr.trim().split('\n').at(-1) ?? ''}`);
  });
  const ended = (why: string): void => {
    if (closed) return;
    closed = true;
    child?.stdin?.end();
    child = undefined;
    options.onStopped(why);
  };
  child.on('error', (error) => ended(`nft monitor could not run: ${error.message}`));
  child.on('exit', (code, signal) =>
    ended(
      `nft monitor exited (${signal ?? `code ${code}`})${stderr ? `: ${stderr.trim().split('\n').at(-1)}` : ''}`,
    ),
  );
  return {
    close(): void {
      closed = true;
      lines.close();
      // The shell beside nft kills it and ends.
      child?.stdin?.end();
      child = undefined;
    },
  };
}

/** `0x00000005 . 0x0000007b }` → `5 . 123`. */
function stampText(rest: string): string {
  return rest
    .replace(/\s*}\s*$/, '')
    .split('.')
    .map((part) => String(Number(part.trim())))
    .join(' . ');
}
