/**
 * The `nft` binary as a transaction engine: a script is applied with `nft -f -`, which the
 * kernel commits atomically — all of it or none of it, the previous ruleset staying in place.
 * Applying is synchronous: a renderer's commit is done when it returns.
 */
import { execFileSync, spawn } from 'node:child_process';
import {
  closeSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSync, DataplaneError, type ExecOptions } from './exec.ts';

export interface NftRunner {
  /** Applies one script as one transaction; throws DataplaneError, leaving the ruleset as it was. */
  apply(script: string): void;
}

/** Why a transaction failed, in nft's words; nothing of it was applied. */
function rejection(code: number, stderr: string, netns: string | undefined): DataplaneError {
  if (code === 127) return new DataplaneError('nft is not installed (Debian package nftables)');
  const where = netns ? ` in network namespace ${netns}` : '';
  return new DataplaneError(
    `nft rejected the transaction${where}; the previous ruleset is in place:\n${stderr.trim()}`,
  );
}

/** Runs `nft -f -`, in a network namespace when given. */
export function nftRunner(options: Pick<ExecOptions, 'netns'> = {}): NftRunner {
  return {
    apply(script: string): void {
      if (script.trim() === '') return;
      const result = runSync('nft', ['-f', '-'], { ...options, input: script });
      if (result.code !== 0) throw rejection(result.code, result.stderr, options.netns);
    },
  };
}

/**
 * The same through a small helper process started now, while this process is small, so that a
 * process holding a large cluster does not fork itself for every `nft` (the helper, a shell
 * reading transaction file names from a named pipe, forks nft). Measured at shape (a), nft's own
 * reading of the table dominates either way. Still synchronous: the answer is read from a second
 * named pipe with a blocking read.
 */
export function persistentNftRunner(options: Pick<ExecOptions, 'netns'> = {}): NftRunner & { close(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'palisade-nft-'));
  const requests = join(dir, 'requests');
  const answers = join(dir, 'answers');
  execFileSync('mkfifo', [requests, answers]);
  const nft = options.netns ? `ip netns exec '${options.netns}' nft` : 'nft';
  const loop = `exec 3<"${requests}" 4>"${answers}"; while IFS= read -r f <&3; do ${nft} -f "$f" 2>"$f.err"; echo $? >&4; done`;
  const child = spawn('sh', ['-c', loop], { stdio: 'ignore' });
  child.unref();
  // Both ends open in the order the helper opens them (each open waits for its peer).
  const write = openSync(requests, 'w');
  const read = openSync(answers, 'r');
  let count = 0;
  let closed = false;
  const answer = Buffer.alloc(64);
  return {
    apply(script: string): void {
      if (script.trim() === '') return;
      if (closed) throw new DataplaneError('the nft helper was closed');
      const file = join(dir, `txn-${count++}.nft`);
      writeFileSync(file, script);
      writeSync(write, `${file}\n`);
      let text = '';
      while (!text.includes('\n')) {
        const n = readSync(read, answer, 0, answer.length, null);
        if (n === 0) throw new DataplaneError('the nft helper exited');
        text += answer.toString('utf8', 0, n);
      }
      const code = Number(text.trim());
      const stderr = code === 0 ? '' : readFileSync(`${file}.err`, 'utf8');
      rmSync(file, { force: true });
      rmSync(`${file}.err`, { force: true });
      if (code !== 0) throw rejection(/not found/.test(stderr) ? 127 : code, stderr, options.netns);
    },
    close(): void {
      if (closed) return;
      closed = true;
      closeSync(write);
      closeSync(read);
      rmSync(dir, { recursive: true, force: true });
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
