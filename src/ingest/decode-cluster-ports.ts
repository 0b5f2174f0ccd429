/**
 * Port matches of cluster policy rules: v1alpha1's `ports` (portNumber, portRange, namedPort)
 * and v1alpha2's `protocols` (tcp/udp/sctp with a destination port number or range, or
 * destinationNamedPort) both become ClusterPorts.
 */
import type { ClusterPort } from '../model/cluster-policy.ts';
import type { Protocol } from '../model/types.ts';
import type { DecodeContext } from './decode-context.ts';
import { checkPortNumber, decodeProtocol } from './decode-policy.ts';
import type { RawAnpPort, RawCnpProtocol } from './cluster-policy-schemas.ts';
import type { FieldPath } from './types.ts';
import { portNameProblem } from './validate-names.ts';

export function decodeAnpPort(ctx: DecodeContext, raw: RawAnpPort, at: FieldPath): ClusterPort | undefined {
  const set = (['portNumber', 'portRange', 'namedPort'] as const).filter((k) => raw[k] != null);
  if (set.length !== 1) {
    ctx.report(
      'CLUSTER_PORT_INVALID',
      `a port sets exactly one of portNumber, portRange, namedPort (found ${set.length ? set.join(', ') : 'none'})`,
      at,
    );
    return undefined;
  }
  if (raw.namedPort != null) return decodeNamedPort(ctx, raw.namedPort, [...at, 'namedPort']);
  if (raw.portNumber) {
    const where = [...at, 'portNumber'];
    const protocol = decodeProtocol(ctx, raw.portNumber.protocol, [...where, 'protocol']);
    return numbered(ctx, protocol, raw.portNumber.port, undefined, where, 'port');
  }
  const range = raw.portRange;
  if (!range) return undefined;
  const where = [...at, 'portRange'];
  const protocol = decodeProtocol(ctx, range.protocol, [...where, 'protocol']);
  return numbered(ctx, protocol, range.start, range.end, where, 'start');
}

export function decodeCnpProtocol(
  ctx: DecodeContext,
  raw: RawCnpProtocol,
  at: FieldPath,
): ClusterPort | undefined {
  const set = (['tcp', 'udp', 'sctp', 'destinationNamedPort'] as const).filter((k) => raw[k] != null);
  if (set.length !== 1) {
    ctx.report(
      'CLUSTER_PORT_INVALID',
      `a protocols entry sets exactly one of tcp, udp, sctp, destinationNamedPort (found ${set.length ? set.join(', ') : 'none'})`,
      at,
    );
    return undefined;
  }
  if (raw.destinationNamedPort != null) {
    return decodeNamedPort(ctx, raw.destinationNamedPort, [...at, 'destinationNamedPort']);
  }
  const field = set[0] as 'tcp' | 'udp' | 'sctp';
  const protocol: Protocol = field === 'tcp' ? 'TCP' : field === 'udp' ? 'UDP' : 'SCTP';
  const where = [...at, field];
  const destination = raw[field]?.destinationPort;
  if (!destination) {
    ctx.report('CLUSTER_PORT_INVALID', `${field} needs destinationPort`, where);
    return undefined;
  }
  const portAt = [...where, 'destinationPort'];
  if ((destination.number != null) === (destination.range != null)) {
    ctx.report('CLUSTER_PORT_INVALID', 'destinationPort sets exactly one of number and range', portAt);
    return undefined;
  }
  if (destination.number != null)
    return numbered(ctx, protocol, destination.number, undefined, portAt, 'number');
  const range = destination.range;
  return range ? numbered(ctx, protocol, range.start, range.end, [...portAt, 'range'], 'start') : undefined;
}

function numbered(
  ctx: DecodeContext,
  protocol: Protocol | undefined,
  port: number,
  end: number | undefined,
  at: FieldPath,
  portField: string,
): ClusterPort | undefined {
  const before = ctx.diagnostics.length;
  checkPortNumber(ctx, port, [...at, portField]);
  if (end !== undefined) {
    checkPortNumber(ctx, end, [...at, 'end']);
    if (end <= port) {
      ctx.report('CLUSTER_PORT_INVALID', `range start ${port} must be less than end ${end}`, [...at, 'end']);
    }
  }
  if (!protocol || ctx.errorSince(before)) return undefined;
  return { type: 'number', protocol, port, ...(end !== undefined ? { endPort: end } : {}) };
}

function decodeNamedPort(ctx: DecodeContext, name: string, at: FieldPath): ClusterPort | undefined {
  const problem = portNameProblem(name);
  if (problem) {
    ctx.report('PORT_NAME_INVALID', `named port "${name}" is invalid: ${problem}`, at);
    return undefined;
  }
  return { type: 'named', name };
}
