/**
 * Observed connections joined with the cluster: a flow's ends become the cluster's pods (by the
 * pod name the record carries, else by its address), so labels come from the cluster even when
 * the records lack them; an address no pod has stays an address (an ipBlock later). An
 * expectations file's entries are resolved as `assert` resolves them. What names a pod the
 * cluster does not have is reported (FLOW_ENDPOINT_UNKNOWN) and left out; the rest is used.
 */
import { formatIp, parseIp } from '../../net/ip.ts';
import { makeDiagnostic, type Diagnostic } from '../../model/diagnostics.ts';
import type { Cluster, Endpoint, SourceLocation } from '../../model/types.ts';
import type { FlowEndpoint, LocatedFlow } from '../../flows/index.ts';
import type { Address } from '../../semantics/types.ts';
import type { Expectation } from '../assertions.ts';
import { FILE_SPELLING, portAtDestination } from '../port-query.ts';
import { resolveAddress } from '../resolve-address.ts';
import type { Observation, ObservedSide, Prohibition } from './types.ts';

export interface Observed {
  readonly observations: readonly Observation[];
  readonly prohibitions: readonly Prohibition[];
  readonly diagnostics: readonly Diagnostic[];
  /** Records with verdict `denied`: not what a suggestion lets through. */
  readonly deniedSkipped: number;
}

/** Finds the cluster's pods by name and by address, once per cluster. */
class EndpointLookup {
  private readonly byName = new Map<string, Endpoint>();
  private readonly byIp = new Map<string, Endpoint>();

  constructor(cluster: Cluster) {
    for (const e of cluster.endpoints) {
      const key = `${e.namespace}/${e.name}`;
      // A pod wins over a template of the same name.
      if (e.kind === 'Pod' || !this.byName.has(key)) this.byName.set(key, e);
      if (e.hostNetwork) continue;
      for (const ip of e.ips) this.byIp.set(formatIp(ip), e);
    }
  }

  side(end: FlowEndpoint): ObservedSide | string {
    if (end.pod !== undefined) {
      const endpoint = this.byName.get(end.pod);
      if (!endpoint) return `pod ${end.pod} (${end.ip}) is not in the cluster`;
      return endpoint.hostNetwork ? this.address(end.ip) : { kind: 'endpoint', endpoint };
    }
    return this.address(end.ip);
  }

  private address(text: string): ObservedSide {
    const parsed = parseIp(text);
    // The reader has checked the address already.
    if (!parsed.ok) throw new Error(`unchecked flow address ${text}`);
    const canonical = formatIp(parsed.value);
    const endpoint = this.byIp.get(canonical);
    return endpoint ? { kind: 'endpoint', endpoint } : { kind: 'ip', ip: parsed.value, text: canonical };
  }
}

/** Flow records (read and checked by the flows layer) as observations of this cluster. */
export function observeFlows(cluster: Cluster, flows: readonly LocatedFlow[]): Observed {
  const lookup = new EndpointLookup(cluster);
  const observations: Observation[] = [];
  const diagnostics: Diagnostic[] = [];
  let deniedSkipped = 0;
  for (const { record, file, line } of flows) {
    if (record.verdict !== 'allowed') {
      deniedSkipped++;
      continue;
    }
    const src = lookup.side(record.src);
    const dst = lookup.side(record.dst);
    const unknown = [src, dst].filter((s): s is string => typeof s === 'string');
    if (unknown.length) {
      diagnostics.push(
        makeDiagnostic('FLOW_ENDPOINT_UNKNOWN', `${unknown.join('; ')}: flow left out`, {
          file,
          line,
          column: 1,
        }),
      );
      continue;
    }
    observations.push({
      src: src as ObservedSide,
      dst: dst as ObservedSide,
      protocol: record.protocol,
      port: record.port,
      count: record.count,
      location: { file, line, column: 1 },
    });
  }
  return { observations, prohibitions: [], diagnostics, deniedSkipped };
}

/**
 * An expectations file (`assert --expect`) as observations: `allowed: true` entries are what the
 * suggestion must allow, `allowed: false` ones what it must not. A workload named stands for
 * its first pod (the suggestion treats a workload's pods alike).
 */
export function observeExpectations(cluster: Cluster, expectations: readonly Expectation[]): Observed {
  const observations: Observation[] = [];
  const prohibitions: Prohibition[] = [];
  const diagnostics: Diagnostic[] = [];
  const unknown = (location: SourceLocation | undefined, message: string): void => {
    diagnostics.push(
      makeDiagnostic(
        'FLOW_ENDPOINT_UNKNOWN',
        `${message}: expectation left out`,
        location ?? { file: '<expect>' },
      ),
    );
  };
  for (const e of expectations) {
    const from = resolveAddress(cluster, e.from);
    const to = resolveAddress(cluster, e.to);
    if (!from.ok || !to.ok) {
      unknown(e.location, from.ok ? `to: ${(to as { message: string }).message}` : `from: ${from.message}`);
      continue;
    }
    const port = portAtDestination(
      to.address,
      { port: e.port, protocol: e.protocol },
      FILE_SPELLING,
      e.protocolApart === true,
    );
    if (!port.ok) {
      unknown(e.location, port.message);
      continue;
    }
    const connection = {
      src: sideOf(from.address),
      dst: sideOf(to.address),
      protocol: e.protocol,
      port: port.port,
      ...(e.location ? { location: e.location } : {}),
    };
    if (e.allowed) observations.push({ ...connection, count: 1 });
    else prohibitions.push(connection);
  }
  return { observations, prohibitions, diagnostics, deniedSkipped: 0 };
}

function sideOf(address: Address): ObservedSide {
  if (address.kind === 'endpoint' && !address.endpoint.hostNetwork) return address;
  if (address.kind === 'endpoint') {
    const ip = address.endpoint.ips[0];
    if (!ip) throw new Error(`host-network endpoint ${address.endpoint.id} without an address`);
    return { kind: 'ip', ip, text: formatIp(ip) };
  }
  return { kind: 'ip', ip: address.ip, text: formatIp(address.ip) };
}
