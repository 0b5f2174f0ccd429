/**
 * `palisade flows`: what the node agents' datapaths saw happen to new connections, each with the
 * policy, rule and tier that decided it — read from the agents' `/flows` endpoints (`--agent
 * URL…`, or every agent of a lab with `--lab NAME`), filtered there, printed as text or NDJSON.
 * `--follow` keeps each stream open and prints records as the agents update them (`--for`
 * seconds, or until interrupted). `--staged` keeps only the connections the staged policies would
 * break or open, each with the staged rule that would decide it, judged over every agent's
 * records of the connection (`flows/staged-view.ts`).
 */
import { request, type IncomingMessage } from 'node:http';
import { Command } from 'commander';
import { checkChoice } from '../input-options.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError, type CliIo } from '../io.ts';
import {
  FLOW_FILTER_PARAMETERS,
  flowFilterParameters,
  flowText,
  parseFlowFilter,
  stagedView,
  type FlowFilter,
  type FlowRecord,
} from '../../flows/index.ts';
import { DEFAULT_STATE_ROOT, labFlowSockets } from '../../lab/index.ts';

/** An agent's endpoint: `http://host:port` or `unix:/path`. */
interface Endpoint {
  readonly label: string;
  readonly url: string;
}

export function flowsCommand(io: CliIo, done: (code: number) => void): Command {
  const command = new Command('flows')
    .description("new connections the node agents' datapaths judged, with the rule that decided each")
    .option('--agent <url...>', "agents' endpoints: http://host:port (palisade agent --listen) or unix:/path")
    .option('--lab <name>', 'every agent of a lab with a control plane (lab up --control-plane --flow-log)')
    .option('--state-dir <path>', 'with --lab: where labs keep their state', DEFAULT_STATE_ROOT)
    .option('-f, --follow', 'keep reading: print records as the agents update them')
    .option('--for <seconds>', 'with --follow: stop after this long')
    .option('--from <endpoint>', 'source: ns/name, ns/ (a namespace), or an address')
    .option('--to <endpoint>', 'destination: ns/name, ns/, or an address')
    .option('--pod <endpoint>', 'either end')
    .option('--namespace <name>', 'either end in this namespace')
    .option('--verdict <verdict>', 'allowed or denied')
    .option('--protocol <protocol>', 'TCP, UDP or SCTP')
    .option('--port <port>', 'destination port')
    .option('--policy <name>', 'decided by this policy (ns/name, anp/name, banp/default, cnp/name)')
    .option('--node <name>', 'reported by this node')
    .option(
      '--staged',
      'only flows the staged policies (palisade.dev/staged) would deny or newly allow, with the staged rule',
    )
    .option('-o, --output <format>', 'text or json (one record per line)', 'text');
  return command.action(async (raw: Record<string, unknown>) => {
    const output = checkChoice('--output', raw.output, ['text', 'json'] as const);
    const params = new URLSearchParams();
    for (const name of FLOW_FILTER_PARAMETERS) if (typeof raw[name] === 'string') params.set(name, raw[name]);
    if (raw.staged === true) params.set('staged', 'true');
    const filter = parseFlowFilter(params);
    if ('error' in filter) throw new UsageError(`--${filter.error}`);
    const follow = raw.follow === true;
    const forMs = raw.for === undefined ? undefined : Number(raw.for) * 1000;
    if (forMs !== undefined && (!Number.isFinite(forMs) || forMs <= 0))
      throw new UsageError('--for must be a number of seconds, more than 0');
    if (forMs !== undefined && !follow) throw new UsageError('--for needs --follow');
    const endpoints = endpointsOf(raw);
    const print = (record: FlowRecord): void => {
      io.stdout.write(output === 'json' ? `${JSON.stringify(record)}\n` : `${flowText(record)}\n`);
    };
    // --staged (not following): every node's records of a connection decide whether the staged
    // verdict changes it (stagedView), so all are read first, then the changed ones printed.
    // Following, each agent's own staged records are printed as they come.
    const merged = filter.staged === true && !follow;
    const { staged: _staged, ...unstaged } = filter;
    const collected: FlowRecord[] = [];
    const take = merged ? (record: FlowRecord) => collected.push(record) : print;
    let failed = false;
    const streams = endpoints.map((endpoint) =>
      readFlows(endpoint, merged ? unstaged : filter, follow, take, forMs).catch((error: unknown) => {
        failed = true;
        io.stderr.write(
          `palisade: ${endpoint.label}: ${error instanceof Error ? error.message : String(error)}\n`,
        );
      }),
    );
    await Promise.all(streams);
    if (merged) for (const record of stagedView(collected)) print(record);
    done(failed ? EXIT_FINDINGS : EXIT_OK);
  });

  function endpointsOf(raw: Record<string, unknown>): Endpoint[] {
    const agents = (raw.agent as string[] | undefined) ?? [];
    if (typeof raw.lab === 'string') {
      if (agents.length > 0) throw new UsageError('--lab and --agent exclude each other');
      try {
        return labFlowSockets(raw.lab, String(raw.stateDir)).map(({ node, socket }) => ({
          label: `agent of ${node}`,
          url: `unix:${socket}`,
        }));
      } catch (error) {
        throw new UsageError((error as Error).message);
      }
    }
    if (agents.length === 0) throw new UsageError('name the agents: --agent URL… or --lab NAME');
    return agents.map((url) => {
      if (!/^(https?:\/\/[^/]+\/?$|unix:\/)/.test(url))
        throw new UsageError(`--agent ${url}: expected http://host:port or unix:/path`);
      return { label: url, url };
    });
  }
}

/** Streams one agent's `/flows` answer, record by record. */
function readFlows(
  endpoint: Endpoint,
  filter: FlowFilter,
  follow: boolean,
  print: (record: FlowRecord) => void,
  forMs: number | undefined,
): Promise<void> {
  const params = flowFilterParameters(filter);
  if (follow) params.set('follow', '1');
  const path = `/flows${params.size > 0 ? `?${params.toString()}` : ''}`;
  const target = endpoint.url.startsWith('unix:')
    ? { socketPath: endpoint.url.slice('unix:'.length), path }
    : (() => {
        const url = new URL(endpoint.url);
        return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 80), path };
      })();
  return new Promise((resolve, reject) => {
    const req = request(
      { ...target, method: 'GET', timeout: follow ? 0 : 10_000 },
      (response: IncomingMessage) => {
        if (response.statusCode !== 200) {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += chunk.toString()));
          response.on('end', () =>
            reject(
              new Error(
                response.statusCode === 404
                  ? 'the agent reports no flows (start it with --flow-log)'
                  : `HTTP ${response.statusCode}: ${body.trim()}`,
              ),
            ),
          );
          return;
        }
        let rest = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          const lines = (rest + chunk).split('\n');
          rest = lines.pop() ?? '';
          for (const line of lines) if (line.trim() !== '') print(JSON.parse(line) as FlowRecord);
        });
        response.on('end', () => resolve());
        response.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', (error: NodeJS.ErrnoException) =>
      error.code === 'ECONNRESET' && stopped ? resolve() : reject(new Error(reachError(error))),
    );
    let stopped = false;
    const stop = (): void => {
      stopped = true;
      req.destroy();
      resolve();
    };
    if (forMs !== undefined) setTimeout(stop, forMs).unref();
    if (follow) process.once('SIGINT', stop);
    req.end();
  });
}

function reachError(error: NodeJS.ErrnoException): string {
  if (error.code === 'ENOENT' || error.code === 'ECONNREFUSED')
    return `cannot reach the agent (${error.code})`;
  return error.message;
}
