/**
 * Kernel fixtures for tests that run as root: a scratch network namespace for the duration of a
 * suite, and a lab built from objects and removed afterwards.
 */
import { after, before } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRoot, run } from '../../src/dataplane/index.ts';
import { Lab, type DatapathKind } from '../../src/lab/index.ts';
import type { Cluster } from '../../src/model/types.ts';

/** The skip reason for a suite that needs root, or false as root. */
export const needsRoot = (what: string): string | false => (isRoot() ? false : `skipped: ${what} needs root`);

/** A network namespace that exists from the suite's start to its end; returns its name. */
export function scratchNetns(prefix: string): string {
  const name = `${prefix}-${process.pid}`;
  before(async () => {
    await run('ip', ['netns', 'add', name]);
  });
  after(async () => {
    await run('ip', ['netns', 'delete', name]);
  });
  return name;
}

/** A lab in its own state directory; `down` removes the lab and the directory. */
export async function startLab(
  prefix: string,
  objects: readonly object[],
  cluster: Cluster,
  options: { readonly datapath?: DatapathKind } = {},
): Promise<{ lab: Lab; stateRoot: string; down: () => Promise<void> }> {
  const stateRoot = mkdtempSync(join(tmpdir(), 'palisade-lab-'));
  const lab = await Lab.up(`${prefix}${process.pid % 100000}`, objects, cluster, { stateRoot, ...options });
  return {
    lab,
    stateRoot,
    down: async () => {
      lab.close();
      await Lab.down(lab.plan.name, { stateRoot });
      rmSync(stateRoot, { recursive: true, force: true });
    },
  };
}
