/**
 * nftables' change notifications for one table: `nft monitor` (in the network namespace, when
 * one is given) prints every object each transaction adds or deletes, then a line naming the
 * transaction's generation. The monitor groups those lines by transaction and reports each one
 * that touched the table, with the fingerprint elements it added (a writer that stamps its
 * transactions — the nftables renderer does — recognises its own by them).
 *
 * `nft monitor` is a process of its own (tied-process.ts: it never outlives this one): it reads
 * the kernel's netlink events whatever this process is busy with. If it stops (killed, or it lost
 * events when the kernel's buffer overflowed), `onStopped` says so — events may have been missed
 * — and the caller restarts it.
 */
import { startTiedProcess } from './tied-process.ts';

/** One transaction that touched the table. */
interface TableTransaction {
  /** Its generation, as nft prints it (0 when the line was not seen). */
  readonly generation: number;
  /** Elements it added to the fingerprint set, as `generation . nonce` in decimal. */
  readonly fingerprints: readonly string[];
  /** Its first line that named the table (for the log). */
  readonly example: string;
}

interface NftMonitorOptions {
  /** `inet palisade`. */
  readonly table: string;
  /** The set whose elements stamp a writer's transactions. */
  readonly fingerprintSet: string;
  readonly netns?: string;
  readonly onTransaction: (transaction: TableTransaction) => void;
  /** The monitor process ended or reported an error: events may have been missed. */
  readonly onStopped: (why: string) => void;
}

interface NftMonitor {
  close(): void;
}

export function monitorTable(options: NftMonitorOptions): NftMonitor {
  const named = ` ${options.table}`;
  const stamp = `add element ${options.table} ${options.fingerprintSet} { `;
  let touched: string | undefined;
  let fingerprints: string[] = [];
  return startTiedProcess({
    argv: ['nft', 'monitor'],
    ...(options.netns !== undefined ? { netns: options.netns } : {}),
    onLine: (line) => {
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
    },
    onStopped: options.onStopped,
  });
}

/** `0x00000005 . 0x0000007b }` → `5 . 123`. */
function stampText(rest: string): string {
  return rest
    .replace(/\s*}\s*$/, '')
    .split('.')
    .map((part) => String(Number(part.trim())))
    .join(' . ');
}
