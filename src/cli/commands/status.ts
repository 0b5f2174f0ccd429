/**
 * `palisade status`: every node agent's status from etcd — the revision it has realized
 * against the store's, lag, counts, repairs, last error or unreadable keys, and agents whose
 * lease expired (dead). Exits 1 when an agent is dead, failing, degraded or behind the store's
 * policy revision, so scripts can wait on it.
 */
import { Command } from 'commander';
import { checkChoice } from '../input-options.ts';
import { etcdFailureLine, formatStatus, inTrouble, readClusterStatus } from '../../agent/index.ts';
import { EXIT_FINDINGS, EXIT_OK, type CliIo } from '../io.ts';
import { etcdConnection, withEtcdOptions } from '../etcd-connection.ts';

export function statusCommand(io: CliIo, done: (code: number) => void): Command {
  return withEtcdOptions(
    new Command('status').description(
      "node agents' status: realized revision against the store's, lag, errors, dead agents",
    ),
  )
    .option('--prefix <root>', 'root of the key layout in etcd', '/palisade')
    .option('-o, --output <format>', 'text or json', 'text')
    .action(async (raw: Record<string, unknown>) => {
      const output = checkChoice('--output', raw.output, ['text', 'json'] as const);
      const etcd = etcdConnection(raw, io.env);
      let status;
      try {
        status = await readClusterStatus(etcd, String(raw.prefix));
      } catch (error) {
        const line = etcdFailureLine(error, etcd.endpoints);
        if (line === undefined) throw error;
        io.stderr.write(`palisade: ${line}\n`);
        return done(EXIT_FINDINGS);
      }
      if (output === 'json') io.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
      else io.stdout.write(formatStatus(status));
      // Behind counts too: `until palisade status; do sleep 1; done` waits for convergence.
      const trouble = status.nodes.some((n) => inTrouble(n) || (n.lag ?? 0) > 0);
      done(trouble ? EXIT_FINDINGS : EXIT_OK);
    });
}
