/**
 * NetworkPolicy (networking.k8s.io/v1 and extensions/v1beta1): structural check, then the API
 * server's semantic validation, then the normalized model (protocols defaulted, policyTypes
 * resolved, selectors canonical, CIDRs parsed and masked).
 */
import { parseCidr, cidrCovers, type Cidr } from '../net/ip.ts';
import { MATCH_ALL } from '../model/selector.ts';
import type {
  NetworkPolicy,
  NetworkPolicyApiVersion,
  Peer,
  PolicyPort,
  PolicyRule,
  Protocol,
} from '../model/types.ts';
import type { DecodeContext } from './decode-context.ts';
import { plainNetworkPolicy, type RawNetworkPolicy } from './decode-shapes.ts';
import { decodeReportingAll } from './prune-mistyped.ts';
import { decodeSelector } from './decode-labels.ts';
import { networkPolicySchema, type RawPeer, type RawPolicyPort } from './schemas.ts';
import type { FieldPath } from './types.ts';
import { portNameProblem } from './validate-names.ts';
import { decodeMetadataName, metadataIdentity } from './decode-metadata.ts';
import { exactArray } from '../util/exact-array.ts';

const API_VERSIONS: readonly NetworkPolicyApiVersion[] = ['networking.k8s.io/v1', 'extensions/v1beta1'];
const POLICY_READING = { schema: networkPolicySchema };

export function decodeNetworkPolicy(ctx: DecodeContext): NetworkPolicy | undefined {
  // A well-formed policy is read as it is: the strict schema would give back an equal copy.
  const plain = plainNetworkPolicy(ctx.raw.value);
  if (plain) return decodeParsed(ctx, plain);
  return decodeReportingAll(ctx, ctx.raw.value, POLICY_READING, (raw) => decodeParsed(ctx, raw));
}

function decodeParsed(ctx: DecodeContext, raw: RawNetworkPolicy): NetworkPolicy | undefined {
  const apiVersion = API_VERSIONS.find((v) => v === raw.apiVersion);
  if (!apiVersion) {
    ctx.report(
      'API_VERSION_UNKNOWN',
      `NetworkPolicy apiVersion "${raw.apiVersion}" is not one of ${API_VERSIONS.join(', ')}`,
      ['apiVersion'],
    );
  }
  const { name, namespace } = decodeMetadataName(ctx, raw.metadata, true);
  const spec = raw.spec ?? {};
  const podSelector = decodeSelector(ctx, spec.podSelector, ['spec', 'podSelector']);
  const policyTypes = decodePolicyTypes(ctx, spec.policyTypes);
  const ingress = (spec.ingress ?? []).map((rule, index) =>
    decodeRule(ctx, index, rule.from, rule.ports, ['spec', 'ingress', index], 'from'),
  );
  const egress = (spec.egress ?? []).map((rule, index) =>
    decodeRule(ctx, index, rule.to, rule.ports, ['spec', 'egress', index], 'to'),
  );
  if (ctx.failed || !apiVersion) return undefined;
  const explicit = policyTypes !== undefined;
  return {
    apiVersion,
    namespace,
    name,
    podSelector: podSelector ?? MATCH_ALL,
    // Defaulting, as the API server does: Ingress always, Egress when there are egress rules.
    affectsIngress: explicit ? policyTypes.has('Ingress') : true,
    affectsEgress: explicit ? policyTypes.has('Egress') : egress.length > 0,
    policyTypesExplicit: explicit,
    ingress,
    egress,
    ...metadataIdentity(raw.metadata),
    location: ctx.raw.locator.valueAt(ctx.raw.basePath),
  };
}

function decodePolicyTypes(
  ctx: DecodeContext,
  raw: readonly string[] | null | undefined,
): Set<string> | undefined {
  if (raw === null || raw === undefined) return undefined;
  const seen = new Set<string>();
  raw.forEach((type, index) => {
    const path = ['spec', 'policyTypes', index];
    if (type !== 'Ingress' && type !== 'Egress') {
      ctx.report('POLICY_TYPE_INVALID', `policyTypes entry "${type}" is not Ingress or Egress`, path);
    } else if (seen.has(type)) {
      ctx.report('POLICY_TYPE_DUPLICATE', `policyTypes names ${type} twice`, path);
    }
    seen.add(type);
  });
  return seen;
}

function decodeRule(
  ctx: DecodeContext,
  index: number,
  rawPeers: readonly RawPeer[] | null | undefined,
  rawPorts: readonly RawPolicyPort[] | null | undefined,
  path: FieldPath,
  peersField: 'from' | 'to',
): PolicyRule {
  const peers = rawPeers?.map((peer, i) => decodePeer(ctx, peer, [...path, peersField, i]));
  const ports = rawPorts?.map((port, i) => decodePort(ctx, port, [...path, 'ports', i]));
  return {
    index,
    peers: peers && exactArray(peers.filter((p): p is Peer => p !== undefined)),
    ports: ports && exactArray(ports.filter((p): p is PolicyPort => p !== undefined)),
  };
}

function decodePeer(ctx: DecodeContext, raw: RawPeer, path: FieldPath): Peer | undefined {
  const hasSelector = isPresent(raw.podSelector) || isPresent(raw.namespaceSelector);
  if (isPresent(raw.ipBlock)) {
    if (hasSelector) {
      ctx.report(
        'PEER_IPBLOCK_WITH_SELECTOR',
        'a peer with ipBlock must not also set podSelector or namespaceSelector',
        [...path, 'ipBlock'],
        true,
      );
      return undefined;
    }
    const cidr = decodeCidr(ctx, raw.ipBlock.cidr, [...path, 'ipBlock', 'cidr']);
    const except: Cidr[] = [];
    (raw.ipBlock.except ?? []).forEach((text, i) => {
      const at = [...path, 'ipBlock', 'except', i];
      const parsed = decodeCidr(ctx, text, at);
      if (!parsed || !cidr) return;
      if (!cidrCovers(cidr, parsed) || parsed.prefix <= cidr.prefix) {
        ctx.report(
          'EXCEPT_NOT_IN_CIDR',
          `except "${text}" must be a strict subset of cidr "${cidr.text}"`,
          at,
        );
        return;
      }
      except.push(parsed);
    });
    return cidr ? { type: 'ipBlock', cidr, except: exactArray(except) } : undefined;
  }
  if (!hasSelector) {
    ctx.report('PEER_EMPTY', 'a peer must set podSelector, namespaceSelector or ipBlock', path);
    return undefined;
  }
  const podSelector = isPresent(raw.podSelector)
    ? decodeSelector(ctx, raw.podSelector, [...path, 'podSelector'])
    : undefined;
  const namespaceSelector = isPresent(raw.namespaceSelector)
    ? decodeSelector(ctx, raw.namespaceSelector, [...path, 'namespaceSelector'])
    : undefined;
  return {
    type: 'selector',
    ...(podSelector ? { podSelector } : {}),
    ...(namespaceSelector ? { namespaceSelector } : {}),
  };
}

/** A CIDR field: parsed, its problems reported (host bits masked with a warning). */
export function decodeCidr(ctx: DecodeContext, text: string, path: FieldPath): Cidr | undefined {
  const parsed = parseCidr(text);
  for (const problem of parsed.problems) {
    if (problem.fatal) ctx.report('CIDR_INVALID', problem.message, path);
    else if (problem.kind === 'host-bits') ctx.report('CIDR_HOST_BITS', problem.message, path);
    else ctx.report('CIDR_NON_CANONICAL', problem.message, path);
  }
  return parsed.ok ? parsed.value : undefined;
}

function decodePort(ctx: DecodeContext, raw: RawPolicyPort, path: FieldPath): PolicyPort | undefined {
  const before = ctx.diagnostics.length;
  const protocol = decodeProtocol(ctx, raw.protocol, [...path, 'protocol']);
  const port = raw.port ?? undefined;
  if (typeof port === 'number') checkPortNumber(ctx, port, [...path, 'port']);
  else if (typeof port === 'string') {
    const problem = portNameProblem(port);
    if (problem)
      ctx.report('PORT_NAME_INVALID', `named port "${port}" is invalid: ${problem}`, [...path, 'port']);
  }
  const endPort = raw.endPort ?? undefined;
  if (endPort !== undefined) {
    if (typeof port !== 'number') {
      ctx.report('END_PORT_WITHOUT_NUMERIC_PORT', 'endPort may only be set together with a numeric port', [
        ...path,
        'endPort',
      ]);
    } else {
      checkPortNumber(ctx, endPort, [...path, 'endPort']);
      if (endPort < port) {
        ctx.report(
          'END_PORT_BEFORE_PORT',
          `endPort ${endPort} must be greater than or equal to port ${port}`,
          [...path, 'endPort'],
        );
      }
    }
  }
  if (ctx.errorSince(before) || !protocol) return undefined;
  return {
    protocol,
    ...(port !== undefined ? { port } : {}),
    ...(endPort !== undefined ? { endPort } : {}),
  };
}

export function decodeProtocol(
  ctx: DecodeContext,
  raw: string | null | undefined,
  path: FieldPath,
): Protocol | undefined {
  if (raw === null || raw === undefined) return 'TCP';
  if (raw === 'TCP' || raw === 'UDP' || raw === 'SCTP') return raw;
  const hint = ['TCP', 'UDP', 'SCTP'].includes(raw.toUpperCase())
    ? ` (protocols are upper case: "${raw.toUpperCase()}")`
    : '';
  ctx.report('PROTOCOL_INVALID', `protocol "${raw}" is not TCP, UDP or SCTP${hint}`, path);
  return undefined;
}

export function checkPortNumber(ctx: DecodeContext, port: number, path: FieldPath): void {
  // YAML reads 80.0, 0x50 and 8e1 as the number 80; the API server's integer fields take only
  // decimal integers, so say so rather than accept what it would reject.
  const form = ctx.numberFormAt(path);
  if (form !== undefined) {
    ctx.report(
      'PORT_NOT_INTEGER',
      `port ${form} is not written as a decimal integer (the API server rejects it; write ${Number.isInteger(port) ? port : 'an integer'})`,
      path,
    );
    return;
  }
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    ctx.report('PORT_OUT_OF_RANGE', `port ${port} is not an integer between 1 and 65535`, path);
  }
}

function isPresent<T>(value: T | null | undefined): value is T {
  return value !== null && value !== undefined;
}
