/**
 * Nodes (v1 Node): name, labels and `status.addresses`, so that `nodes` peers of cluster policy
 * can select them. Only address entries that are IPs count (InternalIP, ExternalIP); Hostname and
 * DNS entries are names, not addresses a packet comes from.
 */
import { parseIp, type IpAddress } from '../net/ip.ts';
import type { NodeInfo } from '../model/types.ts';
import type { DecodeContext } from './decode-context.ts';
import { decodeLabels } from './decode-labels.ts';
import { nodeSchema } from './schemas.ts';
import { dnsSubdomainProblem } from './validate-names.ts';
import { decodeReportingAll } from './prune-mistyped.ts';
import type { z } from 'zod';

const IP_ADDRESS_TYPES = new Set(['InternalIP', 'ExternalIP']);

const NODE_READING = { schema: nodeSchema };

export function decodeNode(ctx: DecodeContext): NodeInfo | undefined {
  // A mistyped field does not hide the rest (a bad address beside labels that are not a mapping).
  return decodeReportingAll(ctx, ctx.raw.value, NODE_READING, (raw) => decodeParsed(ctx, raw));
}

function decodeParsed(
  ctx: DecodeContext,
  { metadata, status }: z.output<typeof nodeSchema>,
): NodeInfo | undefined {
  const problem = dnsSubdomainProblem(metadata.name);
  if (problem)
    ctx.report('NAME_INVALID', `name "${metadata.name}" is invalid: ${problem}`, ['metadata', 'name']);
  const labels = decodeLabels(ctx, metadata.labels, ['metadata', 'labels']);
  const addresses: IpAddress[] = [];
  (status?.addresses ?? []).forEach((entry, i) => {
    if (!IP_ADDRESS_TYPES.has(entry.type)) return;
    const ip = parseIp(entry.address);
    if (!ip.ok) {
      ctx.report('IP_INVALID', `node address "${entry.address}" is not an IP address`, [
        'status',
        'addresses',
        i,
        'address',
      ]);
    } else if (!addresses.some((a) => a.value === ip.value.value && a.family === ip.value.family)) {
      addresses.push(ip.value);
    }
  });
  if (ctx.failed) return undefined;
  return { name: metadata.name, labels, addresses, declared: true };
}
