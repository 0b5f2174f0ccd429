/**
 * A Cilium rule's `toPorts` (decode-cilium.ts reads the rest of the rule): numbers, ranges
 * (`endPort`), named ports, on TCP, UDP, SCTP or ANY, and the L7 parts reported as not analysed.
 */
import { PROTOCOLS, type Protocol } from '../model/types.ts';
import type { ClusterPort } from '../model/cluster-policy.ts';
import type { DecodeContext } from './decode-context.ts';
import { checkPortNumber } from './decode-policy.ts';
import type { FieldPath } from './types.ts';
import { portNameProblem } from './validate-names.ts';
import { exactArray } from '../util/exact-array.ts';

/**
 * `toPorts`: the union of its entries' ports — `'none'` when the rule has none (every port) —
 * reporting the L7 parts. An entry without ports covers every port.
 */
export function decodeToPorts(
  ctx: DecodeContext,
  raw: Record<string, unknown>,
  action: 'allow' | 'deny',
  path: FieldPath,
): ClusterPort[] | 'none' | undefined {
  const list = raw.toPorts as readonly Record<string, unknown>[] | null | undefined;
  if (!list || list.length === 0) return 'none';
  const out: ClusterPort[] = [];
  let every = false;
  list.forEach((entry, i) => {
    const at = [...path, 'toPorts', i];
    const l7 = L7_FIELDS.filter((f) => entry[f] != null);
    if (l7.length > 0 && action === 'allow')
      ctx.report(
        'RULE_NOT_ANALYSED',
        `the L7 part of this entry (${l7.join(', ')}) is not analysed: the connection is allowed at L4; requests on it are then filtered by the proxy`,
        [...at, l7[0] as string],
      );
    const ports = (entry.ports as readonly RawPortProtocol[] | null | undefined) ?? [];
    if (ports.length === 0) every = true;
    ports.forEach((port, j) => out.push(...portEntries(ctx, port, [...at, 'ports', j])));
  });
  return every ? 'none' : exactArray(out);
}

/** A toPorts entry's application-layer parts (reported as not analysed). */
const L7_FIELDS = ['rules', 'terminatingTLS', 'originatingTLS', 'serverNames', 'listener'] as const;

/** A `ports` entry as the schema reads it. */
interface RawPortProtocol {
  readonly port?: string | number | null;
  readonly endPort?: number | null;
  readonly protocol?: string | null;
}

function portEntries(ctx: DecodeContext, raw: RawPortProtocol, path: FieldPath): ClusterPort[] {
  const protocolText = raw.protocol == null || raw.protocol === '' ? 'ANY' : raw.protocol.toUpperCase();
  const known = ['TCP', 'UDP', 'SCTP', 'ANY'].includes(protocolText);
  if (!known)
    ctx.report('PROTOCOL_INVALID', `protocol "${raw.protocol ?? ''}" is not TCP, UDP, SCTP or ANY`, [
      ...path,
      'protocol',
    ]);
  // An unknown protocol gives no entries, but the port is checked all the same: the entry's
  // problems are said at once, not one per run.
  const protocols: readonly Protocol[] = !known
    ? []
    : protocolText === 'ANY'
      ? PROTOCOLS
      : [protocolText as Protocol];
  const port = raw.port;
  const endPort = raw.endPort ?? undefined;
  if (port === undefined || port === null || port === '' || port === '0' || port === 0)
    return protocols.map((protocol) => ({ type: 'number', protocol }));
  const text = String(port);
  if (/^[0-9]+$/.test(text)) {
    const number = Number(text);
    checkPortNumber(ctx, number, [...path, 'port']);
    if (endPort !== undefined) {
      checkPortNumber(ctx, endPort, [...path, 'endPort']);
      if (endPort < number)
        ctx.report(
          'END_PORT_BEFORE_PORT',
          `endPort ${endPort} must be greater than or equal to port ${number}`,
          [...path, 'endPort'],
        );
    }
    // Two literals, not a conditional spread (the runtime's slow copy, for every port).
    return endPort !== undefined && endPort > number
      ? protocols.map((protocol) => ({ type: 'number', protocol, port: number, endPort }))
      : protocols.map((protocol) => ({ type: 'number', protocol, port: number }));
  }
  const problem = portNameProblem(text);
  if (problem) {
    ctx.report('PORT_NAME_INVALID', `named port "${text}" is invalid: ${problem}`, [...path, 'port']);
    return [];
  }
  if (!known) return [];
  // "EndPort is ignored if Port is a named port."
  return protocolText === 'ANY'
    ? [{ type: 'named', name: text }]
    : [{ type: 'named', name: text, protocol: protocolText as Protocol }];
}
