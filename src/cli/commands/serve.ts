/**
 * `palisade serve`: a local web view of who can talk to whom — heatmap, graph, explanations,
 * lint, diff, and with a flow source (`--flows FILE`, or agents as `palisade flows` reads them)
 * the observed flows — kept current as the input files (or the cluster, or the flows) change. Binds to 127.0.0.1
 * unless asked. It binds its port before loading anything else (the web framework, the layers
 * that read and analyse the input): the address is printed while they load, and the browser's
 * requests wait for them.
 */
import { existsSync, statSync } from 'node:fs';
import { Command } from 'commander';
import { resolveInputOptions, stdinNamedTwice, withInputOptions } from '../input-options.ts';
import { EXIT_OK, UsageError, type CliIo } from '../io.ts';
import type { FlowSource } from '../../serve/index.ts';

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

export function serveCommand(io: CliIo, done: (code: number) => void): Command {
  return withInputOptions(new Command('serve'))
    .description('a local web view: reachability heatmap and graph, explanations, lint, diff (live)')
    .option('--against <paths...>', 'an older input to compare with in the diff view (files)')
    .option('--port <port>', 'TCP port to listen on (0: any free port)', '7780')
    .option(
      '--address <address>',
      'address to listen on; anything but loopback must be asked for',
      '127.0.0.1',
    )
    .option('--allow-host <name>', 'another host name the page may be reached by (repeatable)', collect)
    .option(
      '--flows <file>',
      'observed flows: NDJSON records (palisade flows -o json), followed as it changes',
    )
    .option('--agent <url...>', "observed flows, live from agents' /flows: http://host:port or unix:/path")
    .option(
      '--lab <name>',
      'observed flows, live from every agent of a lab (lab up --control-plane --flow-log)',
    )
    .option('--state-dir <path>', 'with --lab: where labs keep their state')
    .action(async (raw: Record<string, unknown>) => {
      const input = resolveInputOptions(raw);
      const flows = await flowSourceOf(raw);
      const against = raw.against as string[] | undefined;
      const stdin = stdinNamedTwice(['-f', input.file], ['--against', against ?? []]);
      if (stdin) throw new UsageError(stdin);
      const port = Number(raw.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new UsageError('--port must be a number from 0 to 65535');
      const address = String(raw.address);
      const { listen } = await import('../../serve/socket/index.ts');
      const listener = await listen(address, port).catch((error: NodeJS.ErrnoException) => {
        // A port in use or not ours to take: the user's to change, one line.
        if (error.code === 'EADDRINUSE' || error.code === 'EACCES' || error.code === 'EADDRNOTAVAIL')
          throw new UsageError(
            `cannot listen on ${address}:${port}: ${error.code} (choose another --port or --address)`,
          );
        throw error;
      });
      // Said as soon as the page can be opened; the rest loads and the input is read meanwhile.
      io.stderr.write(`palisade serve: ${listener.url} (Ctrl-C stops it)\n`);
      const [{ serveOn }, { loadInput, reportDiagnostics }, { watchClusterChanges }] = await Promise.all([
        import('../../serve/index.ts'),
        import('../common.ts'),
        import('../cluster-watch.ts'),
      ]);
      // Diagnostics of the first reading go to the terminal; later ones are on the page.
      let first = true;
      const read = async () => {
        const loaded = await loadInput(input, io);
        if (first) reportDiagnostics(loaded.diagnostics, io, input.verbose);
        first = false;
        return loaded;
      };
      const { cluster, ...files } = input;
      const server = await serveOn(listener, {
        read,
        ...(against ? { readAgainst: () => loadInput({ ...files, file: against }, io) } : {}),
        watch: [...input.file, ...(against ?? [])],
        // A cluster is watched through its API: the view follows it as it follows files.
        ...(cluster
          ? { watchSource: (changed: () => void) => watchClusterChanges(cluster, io, changed) }
          : {}),
        semantics: input.semantics,
        ...(flows ? { flows } : {}),
        address,
        port,
        allowedHosts: (raw.allowHost as string[] | undefined) ?? [],
      });
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          resolve();
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
      await server.close();
      done(EXIT_OK);
    });
}

/** `--flows FILE`, or `--agent URL…` / `--lab NAME` read as `palisade flows` reads them; or none. */
async function flowSourceOf(raw: Record<string, unknown>): Promise<FlowSource | undefined> {
  const agents = raw.agent !== undefined || raw.lab !== undefined;
  if (typeof raw.flows === 'string') {
    if (agents) throw new UsageError('--flows and --agent/--lab exclude each other: one source of flows');
    if (!existsSync(raw.flows) || !statSync(raw.flows).isFile())
      throw new UsageError(`--flows ${raw.flows}: no such file`);
    return { kind: 'file', path: raw.flows };
  }
  if (!agents) return undefined;
  const { flowAgentsOf } = await import('./flows.ts');
  return { kind: 'agents', agents: flowAgentsOf(raw) };
}
