/**
 * One process at a time changes a node's kernel datapath: the lock of a kernel backend on a node
 * (a network namespace), under the run directory, released by the kernel if its holder dies.
 */
import { acquireDatapathLock, type HeldLock } from '../dataplane/index.ts';
import type { NodeContext } from './types.ts';

/** The default `--run-dir`. */
export const DEFAULT_RUN_DIR = '/run/palisade';

/** Takes `name`'s lock on the context's node; throws a one-line error when another process holds it. */
export function lockNodeDatapath(
  name: string,
  context: Pick<NodeContext, 'netns' | 'lockWaitMs' | 'runDir'>,
): HeldLock {
  const where = context.netns ? ` in network namespace ${context.netns}` : '';
  return acquireDatapathLock(context.netns, {
    waitMs: context.lockWaitMs ?? 0,
    what: `the ${name} datapath${where}`,
    root: `${context.runDir ?? DEFAULT_RUN_DIR}/datapath`,
  });
}
