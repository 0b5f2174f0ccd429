/**
 * `palisade flows`: what the node agents' datapaths saw happen to new connections, each with the
 * policy, rule and tier that decided it — read from the agents' `/flows` endpoints (`--agent
 * URL…`, or every agent of a lab with `--lab NAME`), filtered there, printed as text or NDJSON.
 * `--follow` keeps each stream open and prints records as the agents update them (`--for`
 * seconds, or until interrupted). `--staged` keeps only the connections the staged policies would
 * break or open, each with the staged rule that would decide it, judged over every agent's
 * records of the connection (`flows/staged-view.ts`).
 */
import { Command } from 'commander';
import { checkChoice } from '../input-options.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError, type CliIo } from '../io.ts';
import {
  agentUrlProblem,
  FLOW_FILTER_PARAMETERS,
  flowText,
  parseFlowFilter,
  readAgentFlows,
  stagedView,
  type FlowAgent,
  type FlowRecord,
} from '../../flows/index.ts';
import { DEFAULT_STATE_ROOT, labFlowSockets } from '../../lab/index.ts';

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
    const endpoints = flowAgentsOf(raw);
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
    // Following ends after --for, or on Ctrl-C; each stream then resolves with what it printed.
    const stop = new AbortController();
    const abort = (): void => stop.abort();
    if (forMs !== undefined) setTimeout(abort, forMs).unref();
    if (follow) process.once('SIGINT', abort);
    const streams = endpoints.map((endpoint) =>
      readAgentFlows(endpoint, merged ? unstaged : filter, { follow, signal: stop.signal }, take).catch(
        (error: unknown) => {
          failed = true;
          io.stderr.write(
            `palisade: ${endpoint.label}: ${error instanceof Error ? error.message : String(error)}\n`,
          );
        },
      ),
    );
    await Promise.all(streams);
    process.off('SIGINT', abort);
    if (merged) for (const record of stagedView(collected)) print(record);
    done(failed ? EXIT_FINDINGS : EXIT_OK);
  });
}

/**
 * The agents `--agent URL…` or `--lab NAME` (with `--state-dir`) name, or undefined when neither
 * is given; a usage error when both are, or when one is not an agent. `palisade serve` takes the
 * same options.
 */
export function flowAgentsOf(raw: Record<string, unknown>): FlowAgent[] {
  const agents = (raw.agent as string[] | undefined) ?? [];
  if (typeof raw.lab === 'string') {
    if (agents.length > 0) throw new UsageError('--lab and --agent exclude each other');
    try {
      return labFlowSockets(
        raw.lab,
        typeof raw.stateDir === 'string' ? raw.stateDir : DEFAULT_STATE_ROOT,
      ).map(({ node, socket }) => ({
        label: `agent of ${node}`,
        url: `unix:${socket}`,
      }));
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  }
  if (agents.length === 0) throw new UsageError('name the agents: --agent URL… or --lab NAME');
  return agents.map((url) => {
    const problem = agentUrlProblem(url);
    if (problem) throw new UsageError(`--agent ${problem}`);
    return { label: url, url };
  });
}
