/**
 * Turns what a user types for a port — `80`, `http`, `53/UDP` (protocols in any case), with or
 * without a protocol given on its own — into a PortQuery. `check --port`, `matrix --port`, the
 * expectations file of `assert` and serve's API all read ports through here, so they take the
 * same forms and say the same things about a bad one; each names its own fields (`--port` or
 * `port`) in the messages.
 */
import { PROTOCOLS, type Protocol } from '../model/types.ts';
import { portNameProblem } from '../ingest/index.ts';
import { resolveNamedPort } from '../semantics/index.ts';
import type { Address } from '../semantics/types.ts';
import { addressText } from './resolve-address.ts';
import type { PortQuery } from './types.ts';

export type PortQueryParse =
  | { ok: true; query: PortQuery }
  /** `field`: which of the two inputs is wrong (for a file, where to point). */
  | { ok: false; message: string; field: 'port' | 'protocol' };

export interface PortQueryOptions {
  /** The protocol given apart from the port (`--protocol`, `protocol:`), when one was. */
  readonly protocol?: string;
  /**
   * True when that protocol was given for this port alone, so that a port naming another one
   * (`53/UDP` with `--protocol TCP`) contradicts it; false when it is a default for many ports,
   * which a port naming its own protocol overrides. Default true.
   */
  readonly protocolIsForThisPort?: boolean;
  /** How the caller's users write the two fields, named so in the messages. Default CLI_SPELLING. */
  readonly spelling?: PortSpelling;
}

/**
 * How a caller's users write a port and a protocol: the fields' names (what messages call them)
 * and how a value is given to one and the two are put together, to say how to ask for a port.
 */
export interface PortSpelling {
  /** `--port`, `port`. */
  readonly port: string;
  readonly protocol: string;
  /** Between a field and its value: `--port 80`, `port: 80`, `port=80`. */
  readonly assign: string;
  /** Between the two fields: `--port dns --protocol UDP`, `port: dns, protocol: UDP`. */
  readonly between: string;
}

/** Command-line options: `--port dns --protocol UDP`. */
export const CLI_SPELLING: PortSpelling = {
  port: '--port',
  protocol: '--protocol',
  assign: ' ',
  between: ' ',
};
/** An expectations file's keys: `port: dns, protocol: UDP`. */
export const FILE_SPELLING: PortSpelling = {
  port: 'port',
  protocol: 'protocol',
  assign: ': ',
  between: ', ',
};
/** serve's query parameters: `port=dns&protocol=UDP`. */
export const QUERY_SPELLING: PortSpelling = { port: 'port', protocol: 'protocol', assign: '=', between: '&' };

/** `text` as a port query; TCP unless a protocol is named. */
export function parsePortQuery(text: string, options: PortQueryOptions = {}): PortQueryParse {
  const spelling = options.spelling ?? CLI_SPELLING;
  const fail = (field: 'port' | 'protocol', message: string): PortQueryParse => ({
    ok: false,
    message,
    field,
  });
  const slash = text.lastIndexOf('/');
  const portText = slash < 0 ? text : text.slice(0, slash);
  const inline = slash < 0 ? undefined : protocolNamed(text.slice(slash + 1), 'no protocol after "/"');
  if (inline?.ok === false) return fail('port', `${spelling.port} ${text}: ${inline.message}`);
  const given = options.protocol === undefined ? undefined : protocolNamed(options.protocol, 'is empty');
  if (given?.ok === false) return fail('protocol', `${spelling.protocol} ${given.message}`);
  const inlineProtocol = inline?.ok ? inline.protocol : undefined;
  const givenProtocol = given?.ok ? given.protocol : undefined;
  if (
    inlineProtocol &&
    givenProtocol &&
    inlineProtocol !== givenProtocol &&
    options.protocolIsForThisPort !== false
  )
    return fail(
      'protocol',
      `${spelling.port} ${text} says ${inlineProtocol} but ${spelling.protocol} says ${givenProtocol}`,
    );
  const protocol = inlineProtocol ?? givenProtocol ?? 'TCP';
  if (/^[0-9]+$/.test(portText)) {
    const port = Number(portText);
    if (port < 1 || port > 65535)
      return fail('port', `${spelling.port} ${portText} is not between 1 and 65535`);
    return { ok: true, query: { port, protocol } };
  }
  if (portText === '') return fail('port', `${spelling.port} "${text}": give a port number or name`);
  if (/^[0-9]*\.[0-9]*$/.test(portText) && portText !== '.')
    return fail('port', `${spelling.port} ${portText} is not a whole number between 1 and 65535`);
  const problem = portNameProblem(portText);
  if (problem === undefined) return { ok: true, query: { port: portText, protocol } };
  const hint =
    portNameProblem(portText.toLowerCase()) === undefined
      ? `port names are lower case: "${portText.toLowerCase()}"`
      : `a port name ${problem}`;
  return fail('port', `${spelling.port} "${portText}" is neither a port number nor a port name (${hint})`);
}

/** `whenEmpty` says what an empty protocol is where it was given (after a "/", or on its own). */
function protocolNamed(
  text: string,
  whenEmpty: string,
): { ok: true; protocol: Protocol } | { ok: false; message: string } {
  const protocol = PROTOCOLS.find((p) => p === text.toUpperCase());
  if (protocol) return { ok: true, protocol };
  const message = text === '' ? `${whenEmpty} (TCP, UDP or SCTP)` : `"${text}" is not TCP, UDP or SCTP`;
  return { ok: false, message };
}

export type PortAtDestination =
  { ok: true; port: number; portName?: string } | { ok: false; message: string };

/**
 * How to ask for port `name` on `protocol`: `--port dns/UDP`, or — when the protocol was given
 * apart, which `dns/UDP` would contradict — `--port dns --protocol UDP`.
 */
export function askForPort(
  spelling: PortSpelling,
  name: string,
  protocol: Protocol,
  protocolApart: boolean,
): string {
  const { port, protocol: protocolField, assign, between } = spelling;
  return protocolApart
    ? `${port}${assign}${name}${between}${protocolField}${assign}${protocol}`
    : `${port}${assign}${name}/${protocol}`;
}

/**
 * The number a port query stands for at `destination`: its own, or the one its name has there.
 * A name the destination lacks is refused, naming the protocol it has one on (if any) and how to
 * ask for it, by check, assert and serve alike.
 */
export function portAtDestination(
  destination: Address,
  query: PortQuery,
  spelling: PortSpelling,
  protocolApart: boolean,
): PortAtDestination {
  if (typeof query.port === 'number') return { ok: true, port: query.port };
  const name = query.port;
  const port = resolveNamedPort(destination, name, query.protocol);
  if (port !== undefined) return { ok: true, port, portName: name };
  const other = PROTOCOLS.find(
    (p) => p !== query.protocol && resolveNamedPort(destination, name, p) !== undefined,
  );
  const hint = other ? ` (it has one on ${other}: ${askForPort(spelling, name, other, protocolApart)})` : '';
  return {
    ok: false,
    message: `${addressText(destination)} has no ${query.protocol} container port named "${name}"${hint}`,
  };
}
