/**
 * The ports `lab probe` probes: `--port 53,8080 --protocol TCP,UDP` read item by item as check,
 * matrix and assert read a port (analysis/port-query.ts), so `53/udp`, a port name and the same
 * messages about a bad one work here too; a name stands for the numbers the lab's pods give it.
 * Without --port, every container port in the lab.
 */
import { askForPort, CLI_SPELLING, parsePortQuery, type PortQuery } from '../analysis/index.ts';
import { defaultPorts, type LabPod, type ProbePort, type Transport } from '../lab/index.ts';
import { checkChoice } from './input-options.ts';
import { UsageError } from './io.ts';

/** The protocols the lab can probe (Node has no SCTP sockets). */
const TRANSPORTS: readonly Transport[] = ['TCP', 'UDP'];

/** What `--port` asks for, read before the lab is opened; undefined without it (every port). */
export interface ProbeQueries {
  readonly queries: readonly PortQuery[];
  /** Whether --protocol was given (then `53/UDP` with `--protocol TCP` contradicts it). */
  readonly protocolGiven: boolean;
}

/**
 * `--port` (comma-separated items) and `--protocol` (TCP, UDP or both; `protocolGiven` when on
 * the command line rather than the default TCP). An item without a protocol is probed on each
 * protocol listed; one naming its own is probed on that one, which, when --protocol was given,
 * must be listed.
 */
export function parseProbePorts(
  portText: string | undefined,
  protocolText: string,
  protocolGiven: boolean,
): ProbeQueries | undefined {
  if (portText === undefined) {
    if (protocolGiven)
      throw new UsageError(
        '--protocol needs --port (without it, every container port is probed on its protocol)',
      );
    return undefined;
  }
  const protocols = protocolText
    .split(',')
    .map((p) => checkChoice('--protocol', p.trim().toUpperCase(), TRANSPORTS));
  const queries = new Map<string, PortQuery>();
  for (const item of portText.split(',').map((text) => text.trim())) {
    let refusal: string | undefined;
    let read = false;
    for (const protocol of protocols) {
      const parsed = parsePortQuery(item, { protocol, protocolIsForThisPort: protocolGiven });
      if (!parsed.ok) {
        refusal ??= parsed.message;
        continue;
      }
      read = true;
      const query = parsed.query;
      if (!TRANSPORTS.includes(query.protocol as Transport))
        throw new UsageError(
          `--port ${item}: the lab probes TCP and UDP only (Node has no ${query.protocol} sockets)`,
        );
      queries.set(`${query.protocol}/${query.port}`, query);
    }
    // Refused only when no listed protocol takes it: `53/UDP` with `--protocol TCP,UDP` is UDP's.
    if (!read) throw new UsageError(refusal ?? `--port ${item}: not a port`);
  }
  return { queries: [...queries.values()], protocolGiven };
}

/**
 * The ports to probe in a lab of `pods`: the queries' numbers, and for a name every number a
 * pod gives it on that protocol; every container port without queries. A name no pod has on
 * any protocol it was asked on would probe nothing: refused, pointing at the protocol it has
 * one on, as matrix does.
 */
export function probePorts(
  asked: ProbeQueries | undefined,
  pods: readonly LabPod[],
): { ports: ProbePort[]; notProbed: string[] } {
  if (!asked) return defaultPorts(pods);
  const numbersNamed = (name: string, protocol: string): number[] =>
    pods.flatMap((pod) =>
      pod.ports.filter((p) => p.name === name && p.protocol === protocol).map((p) => p.port),
    );
  for (const { port: name } of asked.queries) {
    if (typeof name !== 'string') continue;
    const askedOn = asked.queries.filter((q) => q.port === name).map((q) => q.protocol);
    if (askedOn.some((p) => numbersNamed(name, p).length > 0)) continue;
    const other = TRANSPORTS.find((p) => !askedOn.includes(p) && numbersNamed(name, p).length > 0);
    const hint = other
      ? ` (some have one on ${other}: ${askForPort(CLI_SPELLING, name, other, asked.protocolGiven)})`
      : '';
    throw new UsageError(
      // Every protocol it was asked on (`--protocol TCP,UDP`), not just the first.
      `--port ${name}: no pod in the lab has a ${askedOn.join(' or ')} container port named "${name}"${hint}`,
    );
  }
  const ports = new Map<string, ProbePort>();
  for (const { port, protocol } of asked.queries) {
    const numbers = typeof port === 'number' ? [port] : numbersNamed(port, protocol).sort((a, b) => a - b);
    for (const number of numbers)
      ports.set(`${protocol}/${number}`, { port: number, protocol: protocol as Transport });
  }
  return { ports: [...ports.values()], notProbed: [] };
}
