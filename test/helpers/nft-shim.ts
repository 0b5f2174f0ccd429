/**
 * An `nft` of a test's own first on PATH: a shell script that makes the nftables datapath's nft
 * slow, refusing or lossy where the real one would not be, so a test can hold what the agent does
 * then. Only nft run as a process meets it: `nft monitor`, and transactions under
 * `PALISADE_NFT=exec` (else libnftables may take them in-process).
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { run } from '../../src/dataplane/index.ts';

interface NftShimOptions {
  /**
   * The shell script (sh). `$REAL` is the real nft's path; `$FLAG` a file in the shim's
   * directory, absent at first, that the test creates and removes to switch a fault on and off.
   */
  readonly script: string;
  /**
   * `before`: the script runs first, then the real nft with the same arguments (unless the script
   * exits). `instead`: the script is all of nft, and runs `$REAL` itself when it should.
   */
  readonly mode: 'before' | 'instead';
  /**
   * For agents inside this test process: process.env gets the shim first on PATH and `env` set,
   * both put back when the test ends. Without it, agent processes are given `dir` on their PATH.
   */
  readonly inProcess?: { readonly env?: Readonly<Record<string, string>> };
}

interface NftShim {
  /** The directory holding the shim, to put first on an agent process's PATH. */
  readonly dir: string;
  /** The file the script knows as `$FLAG` (not there until the test writes it). */
  readonly flag: string;
}

/**
 * Writes the shim into a new temporary directory, removed even when the test fails: by
 * `removedBy`, a test (when it ends), or a suite's list of temporary directories (when the suite
 * ends — the fault suite's agent processes run the shim until their worlds close, after the
 * trial). An in-process shim needs a test, as process.env is put back when it ends.
 */
export async function nftShim(
  removedBy: Pick<TestContext, 'after'> | string[],
  options: NftShimOptions,
): Promise<NftShim> {
  if (options.inProcess && Array.isArray(removedBy))
    throw new Error('an in-process nft shim puts process.env back when its test ends: give it the test');
  const real = (await run('sh', ['-c', 'command -v nft'])).stdout.trim();
  const dir = mkdtempSync(join(tmpdir(), `palisade-nft-shim-${process.pid}-`));
  const flag = join(dir, 'flag');
  const env = options.inProcess ? { ...options.inProcess.env, PATH: `${dir}:${process.env.PATH}` } : {};
  if (Array.isArray(removedBy)) removedBy.push(dir);
  else {
    const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
    removedBy.after(() => {
      for (const [k, v] of Object.entries(saved))
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      rmSync(dir, { recursive: true, force: true });
    });
  }
  const then = options.mode === 'before' ? 'exec "$REAL" "$@"\n' : '';
  writeFileSync(join(dir, 'nft'), `#!/bin/sh\nFLAG=${flag}\nREAL=${real}\n${options.script}\n${then}`);
  chmodSync(join(dir, 'nft'), 0o755);
  Object.assign(process.env, env);
  return { dir, flag };
}
