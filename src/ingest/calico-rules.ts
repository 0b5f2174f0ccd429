/**
 * One Calico rule (projectcalico.org/v3 `Rule`) as the model's ordered rule: its action, the
 * remote side's entity rule as peers, the destination's ports as ports. What the docs say each
 * field means (docs.tigera.io, reference/resources/networkpolicy, "Rule" and "EntityRule"):
 *
 * - every criterion of a rule must match; `nets` and `notNets` match addresses (pods' too),
 *   `selector`, `namespaceSelector` and `serviceAccounts` match endpoints only, scoped to the
 *   policy's namespace unless a namespaceSelector is given;
 * - `notSelector` negates the packet match: alone, it matches every address but those of the
 *   endpoints it selects (outside the cluster too);
 * - `ports` and `notPorts` need a protocol that has ports (TCP, UDP, SCTP, UDPLite), unless every
 *   port is named; `Log` changes nothing and evaluation goes on.
 *
 * What the model cannot say — endpoints restricted by address too (`selector` with `nets`), the
 * local side's own criteria, source ports, Service matches — is reported (RULE_NOT_ANALYSED)
 * and the rule fails closed: an Allow matches nothing, a Deny or Pass denies everything.
 */
import { makeCidr, parseIp, type Cidr, type IpFamily } from '../net/ip.ts';
import { subtractCidrsCached } from '../net/subtract.ts';
import type { ClusterPeer, ClusterPort, ClusterRule, ClusterRuleAction } from '../model/cluster-policy.ts';
import type { Protocol } from '../model/types.ts';
import { PROTOCOLS } from '../model/types.ts';
import { makeSelector } from '../model/selector.ts';
import type { RawCalicoRule, RawEntityRule } from './calico-schemas.ts';
import {
  bothConjunctions,
  conjunctionSelectors,
  readCalicoSelector,
  type EndpointConjunction,
} from './calico-selectors.ts';
import type { DecodeContext } from './decode-context.ts';
import { CALICO_SERVICE_ACCOUNT_LABEL } from '../model/identity-labels.ts';
import { decodeCidr } from './decode-policy.ts';
import { readPortList, subtractRanges } from './calico-ports.ts';
import type { FieldPath } from './types.ts';
import { exactArray } from '../util/exact-array.ts';

/** Where a rule sits: its policy's namespace (NetworkPolicy) or none (global), and its direction. */
interface CalicoRuleScope {
  readonly namespace: string | undefined;
  readonly direction: 'ingress' | 'egress';
}

const ACTIONS: Readonly<Record<string, ClusterRuleAction | 'log'>> = {
  Allow: 'allow',
  Deny: 'deny',
  Pass: 'pass',
  Log: 'log',
};

export const EVERYWHERE: readonly Cidr[] = [makeCidr(4, 0n, 0), makeCidr(6, 0n, 0)];

/** A rule as the model holds it; `log` for a Log rule (it decides nothing); undefined when invalid. */
export function decodeCalicoRule(
  ctx: DecodeContext,
  raw: RawCalicoRule,
  index: number,
  scope: CalicoRuleScope,
  path: FieldPath,
): ClusterRule | 'log' | undefined {
  const before = ctx.diagnostics.length;
  const action = ACTIONS[raw.action];
  if (action === undefined)
    ctx.report('ACTION_INVALID', `action "${raw.action}" is not Allow, Deny, Pass or Log`, [
      ...path,
      'action',
    ]);
  // Field paths are made where a field is given or a problem reported: every rule made eight,
  // whatever it held.
  const protocol = decodeProtocolField(ctx, raw.protocol, path, 'protocol');
  const notProtocol = decodeProtocolField(ctx, raw.notProtocol, path, 'notProtocol');
  const [remoteField, localField] =
    scope.direction === 'ingress'
      ? (['source', 'destination'] as const)
      : (['destination', 'source'] as const);
  const remote = raw[remoteField] ?? {};
  const local = raw[localField] ?? {};
  const destination = raw.destination ?? {};
  checkIcmp(ctx, raw, protocol, path);
  checkPortsNeedProtocol(ctx, raw, protocol, path);
  const family = decodeIpVersion(ctx, raw.ipVersion, path);
  const unsupported: string[] = [];
  for (const field of LOCAL_CRITERIA)
    if (local[field] !== null && local[field] !== undefined)
      unsupported.push(`${localField}.${field} (criteria on the policy's own endpoint)`);
  const sourcePorts = raw.source ?? {};
  if ((sourcePorts.ports?.length ?? 0) > 0 || (sourcePorts.notPorts?.length ?? 0) > 0)
    unsupported.push('source.ports (source ports)');
  const peers = remotePeers(ctx, remote, scope, family, path, remoteField, unsupported);
  const ports = rulePorts(ctx, protocol, notProtocol, destination, path, unsupported);
  if (raw.http) {
    ctx.report(
      'RULE_NOT_ANALYSED',
      'an HTTP match (application layer policy) is not analysed: the rule is read as matching every request of the connections it matches',
      [...path, 'http'],
    );
  }
  if (action === undefined || ctx.errorSince(before)) return undefined;
  if (action === 'log') return 'log';
  if (unsupported.length > 0 || peers === undefined || ports === undefined) {
    ctx.report(
      'RULE_NOT_ANALYSED',
      `${unsupported.join('; ') || 'this rule'} cannot be analysed: the rule fails closed (${action === 'allow' ? 'it allows nothing' : 'it denies everything'})`,
      path,
    );
    return { index, action, peers: [], failClosed: true };
  }
  // Two literals, not a conditional spread (the runtime's slow copy, for every rule).
  return ports !== 'all' ? { index, action, peers, ports } : { index, action, peers };
}

/**
 * A rule side's fields that, on the local side (the policy's own endpoint), would be criteria on
 * that endpoint: not analysed.
 */
const LOCAL_CRITERIA = [
  'nets',
  'notNets',
  'selector',
  'notSelector',
  'namespaceSelector',
  'serviceAccounts',
  'services',
] as const satisfies readonly (keyof RawEntityRule)[];

type ProtocolField = { readonly ours?: Protocol; readonly hasPorts: boolean; readonly icmp: boolean };

const PROTOCOL_NUMBERS: Readonly<Record<number, Protocol>> = { 6: 'TCP', 17: 'UDP', 132: 'SCTP' };

/** A protocol name or number (Calico's: TCP, UDP, ICMP, ICMPv6, SCTP, UDPLite, 1–255). */
function decodeProtocolField(
  ctx: DecodeContext,
  raw: string | number | null | undefined,
  rule: FieldPath,
  field: 'protocol' | 'notProtocol',
): ProtocolField | undefined {
  if (raw === null || raw === undefined) return undefined;
  if (typeof raw === 'number') {
    if (!Number.isInteger(raw) || raw < 1 || raw > 255) {
      ctx.report('PROTOCOL_INVALID', `protocol ${raw} is not a name or a number from 1 to 255`, [
        ...rule,
        field,
      ]);
      return undefined;
    }
    const ours = PROTOCOL_NUMBERS[raw];
    return {
      ...(ours ? { ours } : {}),
      hasPorts: ours !== undefined || raw === 136,
      icmp: raw === 1 || raw === 58,
    };
  }
  const upper = raw.toUpperCase();
  if (upper === 'TCP' || upper === 'UDP' || upper === 'SCTP')
    return { ours: upper, hasPorts: true, icmp: false };
  if (upper === 'UDPLITE') return { hasPorts: true, icmp: false };
  if (upper === 'ICMP' || upper === 'ICMPV6') return { hasPorts: false, icmp: true };
  ctx.report('PROTOCOL_INVALID', `protocol "${raw}" is not TCP, UDP, ICMP, ICMPv6, SCTP, UDPLite or 1-255`, [
    ...rule,
    field,
  ]);
  return undefined;
}

function checkIcmp(
  ctx: DecodeContext,
  raw: RawCalicoRule,
  protocol: ProtocolField | undefined,
  path: FieldPath,
): void {
  // Not said when the protocol given is invalid (PROTOCOL_INVALID says so), as for ports below.
  const invalid = raw.protocol !== null && raw.protocol !== undefined && protocol === undefined;
  for (const field of ['icmp', 'notICMP'] as const) {
    if (!raw[field] || protocol?.icmp || invalid) continue;
    ctx.report('RULE_INVALID', `${field} needs protocol ICMP or ICMPv6`, [...path, field]);
  }
}

function checkPortsNeedProtocol(
  ctx: DecodeContext,
  raw: RawCalicoRule,
  protocol: ProtocolField | undefined,
  path: FieldPath,
): void {
  // A protocol given but invalid is reported as such (PROTOCOL_INVALID); saying here that the
  // ports lack a protocol would send the reader looking for one that is there.
  const given = raw.protocol !== null && raw.protocol !== undefined;
  for (const side of ['source', 'destination'] as const) {
    for (const field of ['ports', 'notPorts'] as const) {
      const list = raw[side]?.[field];
      if (!list || list.length === 0) continue;
      const fieldPath = [...path, side, field];
      if (!given && !list.every((p) => typeof p === 'string' && !p.includes(':') && !/^[0-9]+$/.test(p)))
        ctx.report(
          'RULE_INVALID',
          `numeric ${field} need a protocol that has ports (TCP, UDP, SCTP or UDPLite)`,
          fieldPath,
        );
      else if (protocol !== undefined && !protocol.hasPorts)
        ctx.report(
          'RULE_INVALID',
          `${field} need a protocol that has ports (TCP, UDP, SCTP or UDPLite)`,
          fieldPath,
        );
    }
  }
}

function decodeIpVersion(
  ctx: DecodeContext,
  raw: number | null | undefined,
  rule: FieldPath,
): IpFamily | undefined {
  if (raw === null || raw === undefined) return undefined;
  if (raw === 4 || raw === 6) return raw;
  ctx.report('RULE_INVALID', `ipVersion ${raw} is not 4 or 6`, [...rule, 'ipVersion']);
  return undefined;
}

/** The remote side's criteria as peers; undefined when they cannot be expressed (`unsupported` says why). */
function remotePeers(
  ctx: DecodeContext,
  raw: RawEntityRule,
  scope: CalicoRuleScope,
  family: IpFamily | undefined,
  rule: FieldPath,
  side: 'source' | 'destination',
  unsupported: string[],
): readonly ClusterPeer[] | undefined {
  const nets = readNets(ctx, raw.nets, rule, side, 'nets', family);
  const notNets = readNets(ctx, raw.notNets, rule, side, 'notNets', family);
  if (nets === undefined || notNets === undefined) return undefined;
  if (raw.services) {
    unsupported.push(`${side}.services (a Service's endpoints)`);
    return undefined;
  }
  const endpointCriteria =
    raw.selector != null || raw.namespaceSelector != null || raw.serviceAccounts != null;
  const byAddress = raw.nets != null || raw.notNets != null;
  if (!endpointCriteria && raw.notSelector == null) {
    // Nothing: every endpoint and address — pods too when the input gives them no address (a
    // workload's template), which no block could match.
    if (!byAddress && family === undefined)
      return [
        { type: 'pods', namespaces: { selector: makeSelector({}, []) } },
        { type: 'networks', cidrs: EVERYWHERE },
      ];
    // Addresses only (or nothing: every address of the rule's family).
    const within = nets ?? familyBlocks(family);
    return [
      {
        type: 'networks',
        cidrs: exactArray(within.flatMap((cidr) => subtractCidrsCached(cidr, notNets ?? []))),
      },
    ];
  }
  if (byAddress) {
    unsupported.push(`${side}: endpoints by selector and addresses by nets together`);
    return undefined;
  }
  if (family !== undefined) {
    unsupported.push(`ipVersion with endpoint selectors`);
    return undefined;
  }
  const pods = endpointPeers(ctx, raw, scope, rule, side, endpointCriteria);
  if (!pods) return undefined;
  if (endpointCriteria) return pods;
  // notSelector alone: every address but the selected endpoints' — outside the cluster, and
  // nodes (Calico's endpoints here are pods; nodes are endpoints only with HostEndpoints).
  return [...pods, { type: 'outside', cidrs: EVERYWHERE }, { type: 'nodes', selector: makeSelector({}, []) }];
}

/**
 * Peers read without a problem, by what they are made of: a namespace's policies repeat their
 * remote sides (one selector in every rule), and each was parsed, multiplied out and made into
 * selectors again — half of reading a Calico policy. Shared: the model's peers are never changed.
 */
const knownPeers = new Map<string, readonly ClusterPeer[]>();
const MAX_KNOWN_PEERS = 50_000;

/** The endpoints the rule's selectors pick, as pods peers (see `endpointAlternatives`). */
function endpointPeers(
  ctx: DecodeContext,
  raw: RawEntityRule,
  scope: CalicoRuleScope,
  rule: FieldPath,
  side: 'source' | 'destination',
  endpointCriteria: boolean,
): readonly ClusterPeer[] | undefined {
  // Service accounts are rare: those rules are read each time.
  const key =
    raw.serviceAccounts == null
      ? JSON.stringify([
          // The policy's namespace scopes the selectors unless a namespaceSelector is given.
          raw.namespaceSelector == null || !endpointCriteria ? (scope.namespace ?? null) : null,
          raw.selector ?? null,
          raw.namespaceSelector ?? null,
          raw.notSelector ?? null,
          endpointCriteria,
        ])
      : undefined;
  const known = key === undefined ? undefined : knownPeers.get(key);
  if (known) return known;
  const before = ctx.diagnostics.length;
  const alternatives = endpointAlternatives(ctx, raw, scope, [...rule, side], endpointCriteria);
  if (!alternatives) return undefined;
  const pods: ClusterPeer[] = alternatives.map((conjunction) => {
    const { namespaceSelector, podSelector } = conjunctionSelectors(conjunction);
    return {
      type: 'pods',
      namespaces: { selector: namespaceSelector },
      ...(podSelector.key !== '' ? { podSelector } : {}),
    };
  });
  if (key !== undefined && ctx.diagnostics.length === before) {
    if (knownPeers.size >= MAX_KNOWN_PEERS) knownPeers.clear();
    knownPeers.set(key, pods);
  }
  return pods;
}

/**
 * The endpoints a rule's selectors pick, as alternatives: (selector ∧ namespaces ∧ service
 * accounts) ∧ ¬notSelector — or, for a notSelector alone, ¬(scope ∧ notSelector), scope being the
 * policy's namespace for a NetworkPolicy.
 */
function endpointAlternatives(
  ctx: DecodeContext,
  raw: RawEntityRule,
  scope: CalicoRuleScope,
  path: FieldPath,
  endpointCriteria: boolean,
): EndpointConjunction[] | undefined {
  const ownNamespace =
    scope.namespace !== undefined ? `projectcalico.org/namespace == '${scope.namespace}'` : '';
  const combine = (parts: (EndpointConjunction[] | undefined)[]): EndpointConjunction[] | undefined => {
    let out: EndpointConjunction[] | undefined = [{ namespace: [], pod: [] }];
    for (const part of parts) {
      if (!part || !out) return undefined;
      out = bothConjunctions(out, part);
    }
    if (!out)
      ctx.report('SELECTOR_TOO_COMPLEX', 'the rule’s selectors together have too many alternatives', path);
    return out;
  };
  const notText = raw.notSelector ?? undefined;
  if (!endpointCriteria) {
    // ¬(scope ∧ X): parsed as one expression so that negation reaches every alternative.
    const text = ownNamespace ? `!(${ownNamespace} && (${notText ?? 'all()'}))` : `!(${notText ?? 'all()'})`;
    if (!readCalicoSelector(ctx, notText, [...path, 'notSelector'], 'endpoint')) return undefined;
    return readCalicoSelector(ctx, text, [...path, 'notSelector'], 'endpoint');
  }
  const selector = readCalicoSelector(ctx, raw.selector, [...path, 'selector'], 'endpoint');
  const namespaces =
    raw.namespaceSelector != null
      ? readCalicoSelector(ctx, raw.namespaceSelector, [...path, 'namespaceSelector'], 'namespace')
      : ownNamespace
        ? readCalicoSelector(ctx, ownNamespace, [...path, 'selector'], 'endpoint')
        : [{ namespace: [], pod: [] }];
  const accounts = serviceAccountAlternatives(ctx, raw.serviceAccounts, [...path, 'serviceAccounts']);
  const negated =
    notText !== undefined
      ? readCalicoSelector(ctx, notText, [...path, 'notSelector'], 'endpoint') &&
        readCalicoSelector(ctx, `!(${notText})`, [...path, 'notSelector'], 'endpoint')
      : [{ namespace: [], pod: [] }];
  return combine([selector, namespaces, accounts, negated]);
}

/** `serviceAccounts`: names (any of them) and a selector over the accounts' labels, both when given. */
function serviceAccountAlternatives(
  ctx: DecodeContext,
  raw: RawEntityRule['serviceAccounts'],
  path: FieldPath,
): EndpointConjunction[] | undefined {
  if (!raw) return [{ namespace: [], pod: [] }];
  const byName: EndpointConjunction[] =
    raw.names && raw.names.length > 0
      ? [
          {
            namespace: [],
            pod: [
              { key: CALICO_SERVICE_ACCOUNT_LABEL, operator: 'In', values: [...new Set(raw.names)].sort() },
            ],
          },
        ]
      : [{ namespace: [], pod: [] }];
  const bySelector = readCalicoSelector(ctx, raw.selector, [...path, 'selector'], 'serviceAccount');
  return bySelector ? bothConjunctions(byName, bySelector) : undefined;
}

function familyBlocks(family: IpFamily | undefined): readonly Cidr[] {
  return family === undefined ? EVERYWHERE : EVERYWHERE.filter((c) => c.family === family);
}

/** A list of CIDRs (a bare address is its host block); undefined when a problem was reported. */
function readNets(
  ctx: DecodeContext,
  raw: readonly string[] | null | undefined,
  rule: FieldPath,
  side: 'source' | 'destination',
  field: 'nets' | 'notNets',
  family: IpFamily | undefined,
): Cidr[] | null | undefined {
  if (raw === null || raw === undefined) return null;
  const path = [...rule, side, field];
  const negated = field === 'notNets';
  const out: Cidr[] = [];
  let failed = false;
  raw.forEach((text, i) => {
    // A bare address is its host block; one that is no address is said as written, not with the
    // /32 added.
    const address = text.includes('/') ? undefined : parseIp(text);
    if (address && !address.ok) {
      // Said as parseIp says it (leading zeros, an IPv4-mapped address), else as not an address.
      for (const problem of address.problems)
        if (problem.fatal)
          ctx.report(
            'CIDR_INVALID',
            problem.kind === 'invalid' ? `"${text}" is not a valid IP address or CIDR` : problem.message,
            [...path, i],
          );
      failed = true;
      return;
    }
    const cidr = decodeCidr(ctx, text.includes('/') ? text : `${text}/${text.includes(':') ? 128 : 32}`, [
      ...path,
      i,
    ]);
    if (!cidr) failed = true;
    else if (negated && cidr.prefix === 0) {
      ctx.report('RULE_INVALID', `${text} in notNets matches every address: the rule could never match`, [
        ...path,
        i,
      ]);
      failed = true;
    } else if (family !== undefined && cidr.family !== family) {
      ctx.report('RULE_INVALID', `${text} is not an IPv${family} block, as the rule's ipVersion says`, [
        ...path,
        i,
      ]);
      failed = true;
    } else out.push(cidr);
  });
  if (new Set(out.map((c) => c.family)).size > 1) {
    ctx.report('RULE_INVALID', 'a rule may not mix IPv4 and IPv6 blocks', path);
    failed = true;
  }
  return failed ? undefined : exactArray(out);
}

/**
 * The destination ports, per protocol the rule matches: `'all'` when the rule says nothing of
 * protocols or ports; an empty list when it matches none of TCP, UDP and SCTP (ICMP, UDPLite).
 */
function rulePorts(
  ctx: DecodeContext,
  protocol: ProtocolField | undefined,
  notProtocol: ProtocolField | undefined,
  destination: RawEntityRule,
  rule: FieldPath,
  unsupported: string[],
): readonly ClusterPort[] | 'all' | undefined {
  const ports = destination.ports ?? [];
  const notPorts = destination.notPorts ?? [];
  if (!protocol && !notProtocol && ports.length === 0 && notPorts.length === 0) return 'all';
  const path = [...rule, 'destination'];
  const protocols = PROTOCOLS.filter(
    (p) => (protocol === undefined || protocol.ours === p) && notProtocol?.ours !== p,
  );
  const included = readPortList(ctx, ports, [...path, 'ports']);
  const excluded = readPortList(ctx, notPorts, [...path, 'notPorts']);
  if (!included || !excluded) return undefined;
  if (excluded.named.length > 0) {
    unsupported.push('destination.notPorts with named ports');
    return undefined;
  }
  const out: ClusterPort[] = [];
  // A rule naming no protocol with only named ports: each name on whatever protocol it has.
  if (!protocol && !notProtocol && included.ranges.length === 0 && excluded.ranges.length === 0)
    return included.named.map((name) => ({ type: 'named', name }));
  for (const p of protocols) {
    for (const name of included.named) out.push({ type: 'named', name, protocol: p });
    const wanted =
      included.ranges.length > 0 || included.named.length > 0 ? included.ranges : [[1, 65535] as const];
    for (const [from, to] of subtractRanges(wanted, excluded.ranges))
      out.push(
        from === 1 && to === 65535
          ? { type: 'number', protocol: p }
          : { type: 'number', protocol: p, port: from, ...(to > from ? { endPort: to } : {}) },
      );
  }
  return exactArray(out);
}
