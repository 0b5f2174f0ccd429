/**
 * The `nft` binary as a transaction engine: a script is applied with `nft -f -`, which the
 * kernel commits atomically — all of it or none of it, the previous ruleset staying in place.
 * Applying is synchronous: a renderer's commit is done when it returns.
 */
import { run, runSync, DataplaneError, type ExecOptions } from './exec.ts';

export interface NftRunner {
  /** Applies one script as one transaction; throws DataplaneError, leaving the ruleset as it was. */
  apply(script: string): void;
}

/** Runs `nft -f -`, in a network namespace when given. */
export function nftRunner(options: Pick<ExecOptions, 'netns'> = {}): NftRunner {
  return {
    apply(script: string): void {
      if (script.trim() === '') return;
      const result = runSync('nft', ['-f', '-'], { ...options, input: script });
      if (result.code === 127) throw new DataplaneError('nft is not installed (Debian package nftables)');
      if (result.code !== 0) {
        const where = options.netns ? ` in network namespace ${options.netns}` : '';
        throw new DataplaneError(
          `nft rejected the transaction${where}; the previous ruleset is in place:\n${result.stderr.trim()}`,
        );
      }
    },
  };
}

/** A runner that only records scripts (for printing a ruleset, and for tests without root). */
export function recordingRunner(): NftRunner & { readonly scripts: string[] } {
  const scripts: string[] = [];
  return {
    scripts,
    apply(script: string): void {
      scripts.push(script);
    },
  };
}

/** Lists one table as text (`nft list table`), or undefined when it does not exist. */
export async function listTable(
  family: string,
  name: string,
  options: Pick<ExecOptions, 'netns'> = {},
): Promise<string | undefined> {
  const result = await run('nft', ['list', 'table', family, name], options);
  return result.code === 0 ? result.stdout : undefined;
}

/** Deletes one table if it exists. */
export async function deleteTable(
  family: string,
  name: string,
  options: Pick<ExecOptions, 'netns'> = {},
): Promise<void> {
  await run('nft', ['delete', 'table', family, name], options);
}
