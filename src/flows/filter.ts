/**
 * Flow filters: what `/flows?…` and `palisade flows --from/--to/…` select, parsed once from
 * query parameters (the CLI sends its flags as the same parameters), matched per record.
 */
import { PROTOCOLS } from '../model/types.ts';
import type { FlowFilter, FlowRecord, FlowEndpoint } from './types.ts';

/** The filter's fields as query parameters, in the order the usage lists them. */
export const FLOW_FILTER_PARAMETERS = [
  'from',
  'to',
  'pod',
  'namespace',
  'verdict',
  'protocol',
  'port',
  'policy',
  'node',
  'staged',
] as const;

/** Parses query parameters into a filter, or says which one is wrong. */
export function parseFlowFilter(params: URLSearchParams): FlowFilter | { readonly error: string } {
  const filter: Record<string, string | number | boolean> = {};
  for (const name of FLOW_FILTER_PARAMETERS) {
    const value = params.get(name);
    if (value === null || value === '') continue;
    if (name === 'staged') {
      if (value !== 'true' && value !== 'false')
        return { error: `staged must be true or false, not "${value}"` };
      if (value === 'true') filter[name] = true;
      continue;
    } else if (name === 'verdict') {
      if (value !== 'allowed' && value !== 'denied')
        return { error: `verdict must be allowed or denied, not "${value}"` };
    } else if (name === 'protocol') {
      const upper = value.toUpperCase();
      if (!(PROTOCOLS as readonly string[]).includes(upper))
        return { error: `protocol must be one of ${PROTOCOLS.join(', ')}, not "${value}"` };
      filter[name] = upper;
      continue;
    } else if (name === 'port') {
      const port = Number(value);
      if (!Number.isInteger(port) || port < 1 || port > 65535)
        return { error: `port must be 1-65535, not "${value}"` };
      filter[name] = port;
      continue;
    }
    filter[name] = value;
  }
  return filter;
}

/** The filter as query parameters (what the CLI asks an agent for). */
export function flowFilterParameters(filter: FlowFilter): URLSearchParams {
  const params = new URLSearchParams();
  for (const name of FLOW_FILTER_PARAMETERS) {
    const value = filter[name];
    if (value !== undefined) params.set(name, String(value));
  }
  return params;
}

/** `ns/name` matches that pod, `ns/` or `ns` every pod of the namespace, an address itself. */
function endpointMatches(endpoint: FlowEndpoint, pattern: string): boolean {
  if (endpoint.ip === pattern) return true;
  if (!endpoint.pod) return false;
  if (endpoint.pod === pattern) return true;
  const namespace = pattern.endsWith('/')
    ? pattern.slice(0, -1)
    : pattern.includes('/')
      ? undefined
      : pattern;
  return namespace !== undefined && endpoint.pod.startsWith(`${namespace}/`);
}

export function matchesFlow(record: FlowRecord, filter: FlowFilter): boolean {
  if (filter.from !== undefined && !endpointMatches(record.src, filter.from)) return false;
  if (filter.to !== undefined && !endpointMatches(record.dst, filter.to)) return false;
  if (
    filter.pod !== undefined &&
    !endpointMatches(record.src, filter.pod) &&
    !endpointMatches(record.dst, filter.pod)
  )
    return false;
  if (
    filter.namespace !== undefined &&
    !endpointMatches(record.src, `${filter.namespace}/`) &&
    !endpointMatches(record.dst, `${filter.namespace}/`)
  )
    return false;
  if (filter.verdict !== undefined && record.verdict !== filter.verdict) return false;
  if (filter.protocol !== undefined && record.protocol !== filter.protocol) return false;
  if (filter.port !== undefined && record.port !== filter.port) return false;
  if (filter.policy !== undefined && !record.decidedBy.some((d) => d.policy === filter.policy)) return false;
  if (filter.node !== undefined && record.node !== filter.node) return false;
  if (filter.staged === true && record.staged === undefined) return false;
  return true;
}
