/**
 * CiliumNetworkPolicy and CiliumClusterwideNetworkPolicy (cilium.io/v2) at L3/L4, as ordered
 * policies in the tier NetworkPolicy sits in (docs/CALICO-CILIUM.md). What the docs say each part
 * means (docs.cilium.io, security/policy: language, layer3, layer4, deny, kubernetes):
 *
 * - a rule of `ingress`/`egress` allows; of `ingressDeny`/`egressDeny` denies, whatever allows it
 *   ("deny policies take precedence over allow policies");
 * - a policy puts the pods it selects in default deny for each direction it has rules for, unless
 *   `enableDefaultDeny` says otherwise for that direction;
 * - within a rule the L3 members (`fromEndpoints`, `fromCIDR(Set)`, `fromEntities`, `fromNodes`)
 *   are one list of peers, any of which matches (Cilium merges them: utils.go
 *   mergeEndpointSelectors), and the ports must match too; a rule with no L3 member and with ports
 *   allows from anywhere ("to any layer 3 destination"), an empty rule (`{}`) allows nothing, and
 *   an L3 member given as an empty list selects nothing;
 * - CIDR rules select only addresses outside the cluster ("CIDR rules do not apply to traffic
 *   where both sides of the connection are either managed by Cilium or use an IP belonging to a
 *   node in the cluster");
 * - `toPorts` ports are numbers, ranges (`endPort`), named ports, on TCP, UDP, SCTP or ANY; `icmps`
 *   are ICMP only, so they allow none of TCP, UDP and SCTP.
 *
 * L7 rules, TLS, listeners, authentication, `toFQDNs`, `toServices`, `toGroups`, `toRequires` and
 * CIDR groups are reported as not analysed (RULE_NOT_ANALYSED, with what is assumed instead);
 * `nodeSelector` policies (host policies) are left out (POLICY_NOT_ANALYSED).
 */
import type { z } from 'zod';
import { subtractCidrsCached } from '../net/subtract.ts';
import { cidrCovers } from '../net/ip.ts';
import {
  DEFAULT_TIER,
  type ClusterPeer,
  type ClusterPolicy,
  type ClusterRule,
} from '../model/cluster-policy.ts';
import { makeSelector, type LabelSelector } from '../model/selector.ts';
import { NAMESPACE_NAME_LABEL } from '../model/types.ts';
import { ciliumSchemas, type RawCiliumPolicy, type RawCiliumRule } from './cilium-schemas.ts';
import { readCiliumSelector, type CiliumSelector } from './cilium-selectors.ts';
import { EVERYWHERE } from './calico-rules.ts';
import type { DecodeContext } from './decode-context.ts';
import { decodeMetadataName } from './decode-metadata.ts';
import { plainCiliumPolicy } from './engine-shapes.ts';
import { decodeCidr } from './decode-policy.ts';
import { decodeToPorts } from './cilium-ports.ts';
import { decodeReportingAll, fieldNamesOf, type Reading } from './prune-mistyped.ts';
import type { RawLabelSelector } from './schemas.ts';
import type { FieldPath } from './types.ts';
import { dnsSubdomainProblem } from './validate-names.ts';
import { exactArray } from '../util/exact-array.ts';
import type { Writable } from '../util/writable.ts';

const CILIUM_API_VERSION = 'cilium.io/v2';

function reading<S extends z.ZodType>(schema: S): Reading<S> {
  return { schema, knownFields: fieldNamesOf(schema) };
}
const READINGS = {
  CiliumNetworkPolicy: reading(ciliumSchemas.cnp),
  CiliumClusterwideNetworkPolicy: reading(ciliumSchemas.ccnp),
};

type Kind = 'CiliumNetworkPolicy' | 'CiliumClusterwideNetworkPolicy';
type Direction = 'ingress' | 'egress';

/** The policy's rules (`spec` and each of `specs`) as ordered policies; undefined when invalid. */
export function decodeCilium(
  ctx: DecodeContext,
  kind: Kind,
  apiVersion: string,
): ClusterPolicy[] | undefined {
  if (apiVersion !== CILIUM_API_VERSION) {
    ctx.report('API_VERSION_UNKNOWN', `${kind} apiVersion "${apiVersion}" is not ${CILIUM_API_VERSION}`, [
      'apiVersion',
    ]);
    return undefined;
  }
  // A well-formed policy is read as it is: the strict schema would give back an equal copy.
  const plain = plainCiliumPolicy(ctx.raw.value, kind);
  if (plain) return decodeParsed(ctx, kind, apiVersion, plain);
  return decodeReportingAll(ctx, ctx.raw.value, READINGS[kind], (raw) =>
    decodeParsed(ctx, kind, apiVersion, raw),
  );
}

function decodeParsed(
  ctx: DecodeContext,
  kind: Kind,
  apiVersion: string,
  raw: RawCiliumPolicy,
): ClusterPolicy[] | undefined {
  const clusterwide = kind === 'CiliumClusterwideNetworkPolicy';
  const meta = clusterwide ? undefined : decodeMetadataName(ctx, raw.metadata, true);
  const name = raw.metadata.name;
  const problem = clusterwide ? dnsSubdomainProblem(name) : undefined;
  if (problem) ctx.report('NAME_INVALID', `name "${name}" is invalid: ${problem}`, ['metadata', 'name']);
  const namespace = meta?.namespace;
  const rules: { rule: RawCiliumRule; path: FieldPath; suffix: string }[] = [];
  if (raw.spec) rules.push({ rule: raw.spec, path: ['spec'], suffix: '' });
  (raw.specs ?? []).forEach((rule, i) => rules.push({ rule, path: ['specs', i], suffix: `[${i}]` }));
  if (rules.length === 0)
    ctx.report('SCHEMA_REQUIRED', 'a Cilium policy needs spec or specs', ['spec'], true);
  const site = { clusterwide, namespace };
  const decoded: (DecodedRule & { path: FieldPath })[] = [];
  for (const { rule, path, suffix } of rules) {
    const one = decodeRule(ctx, site, rule, path, `${name}${suffix}`);
    if (one) decoded.push({ ...one, path });
  }
  if (ctx.failed) return undefined;
  const location = ctx.raw.locator.valueAt(ctx.raw.basePath);
  // Written field by field, in the order the model's readers (and its JSON) see: object spreads of
  // optional parts were a tenth of reading a Cilium policy.
  return decoded.map((p) => {
    const policy: Writable<ClusterPolicy> = { kind, apiVersion, name: p.name } as Writable<ClusterPolicy>;
    if (namespace !== undefined) policy.namespace = namespace;
    policy.tier = DEFAULT_TIER;
    policy.priority = 0;
    policy.subject = p.subject;
    policy.ingress = p.ingress;
    policy.egress = p.egress;
    policy.isolates = p.isolates;
    if (p.path[0] === 'specs') policy.specPath = p.path;
    policy.location = location;
    return policy;
  });
}

interface Site {
  readonly clusterwide: boolean;
  /** A CiliumNetworkPolicy's namespace. */
  readonly namespace: string | undefined;
}

type DecodedRule = Pick<ClusterPolicy, 'name' | 'subject' | 'ingress' | 'egress' | 'isolates'>;

function decodeRule(
  ctx: DecodeContext,
  site: Site,
  raw: RawCiliumRule,
  path: FieldPath,
  name: string,
): DecodedRule | undefined {
  if (raw.nodeSelector && raw.endpointSelector) {
    ctx.report('RULE_INVALID', 'endpointSelector and nodeSelector cannot both be set', [
      ...path,
      'nodeSelector',
    ]);
    return undefined;
  }
  if (raw.nodeSelector) {
    if (!site.clusterwide)
      ctx.report('RULE_INVALID', 'nodeSelector can only be used in a CiliumClusterwideNetworkPolicy', [
        ...path,
        'nodeSelector',
      ]);
    else
      ctx.report(
        'POLICY_NOT_ANALYSED',
        'a nodeSelector policy (a host policy) applies to nodes, which Palisade does not police: it is left out',
        [...path, 'nodeSelector'],
      );
    return undefined;
  }
  if (!raw.endpointSelector) {
    ctx.report(
      'SCHEMA_REQUIRED',
      'a Cilium rule needs endpointSelector (or nodeSelector)',
      [...path, 'endpointSelector'],
      true,
    );
    return undefined;
  }
  const selector = readCiliumSelector(ctx, raw.endpointSelector, [...path, 'endpointSelector'], site);
  const lists = {
    ingress: decodeList(ctx, site, raw.ingress, 'ingress', 'allow', [...path, 'ingress']),
    ingressDeny: decodeList(ctx, site, raw.ingressDeny, 'ingress', 'deny', [...path, 'ingressDeny']),
    egress: decodeList(ctx, site, raw.egress, 'egress', 'allow', [...path, 'egress']),
    egressDeny: decodeList(ctx, site, raw.egressDeny, 'egress', 'deny', [...path, 'egressDeny']),
  };
  if (!selector) return undefined;
  if (selector.entities.length > 0) {
    ctx.report(
      'POLICY_NOT_ANALYSED',
      `an endpointSelector naming reserved:${selector.entities.join(', reserved:')} selects no pod: it is left out`,
      [...path, 'endpointSelector'],
    );
    return undefined;
  }
  // A CiliumNetworkPolicy applies in its namespace only, whatever its selector says of namespaces.
  const subjectNamespace =
    site.namespace !== undefined ? namespaceSelector(site.namespace) : selector.namespace;
  if (site.namespace !== undefined && selector.scoped)
    ctx.report(
      'SELECTOR_KEY_IGNORED',
      'a CiliumNetworkPolicy’s endpointSelector always applies in the policy’s namespace: its namespace match is left out, as Cilium does',
      [...path, 'endpointSelector'],
    );
  const defaultDeny = raw.enableDefaultDeny ?? {};
  const has = (list: unknown[] | null | undefined): boolean => (list?.length ?? 0) > 0;
  return {
    name,
    subject: {
      namespaceSelector: subjectNamespace,
      ...(selector.pod.key !== '' ? { podSelector: selector.pod } : {}),
    },
    // Deny lists first (deny wins); `concat` makes lists of the exact size (util/exact-array.ts).
    ingress: lists.ingressDeny.concat(lists.ingress),
    egress: lists.egressDeny.concat(lists.egress),
    isolates: {
      ingress: defaultDeny.ingress ?? (has(raw.ingress) || has(raw.ingressDeny)),
      egress: defaultDeny.egress ?? (has(raw.egress) || has(raw.egressDeny)),
    },
  };
}

function decodeList(
  ctx: DecodeContext,
  site: Site,
  raw: readonly Record<string, unknown>[] | null | undefined,
  direction: Direction,
  action: 'allow' | 'deny',
  path: FieldPath,
): ClusterRule[] {
  const field = path[path.length - 1] as string;
  const rules: ClusterRule[] = [];
  (raw ?? []).forEach((rule, index) => {
    const decoded = decodePeerRule(ctx, site, rule, direction, action, [...path, index]);
    if (!decoded) return;
    const clusterRule: Writable<ClusterRule> = { index, action } as Writable<ClusterRule>;
    if (field !== direction) clusterRule.field = field;
    clusterRule.peers = decoded.peers;
    if (decoded.ports !== undefined) clusterRule.ports = decoded.ports;
    if (decoded.failClosed !== undefined) clusterRule.failClosed = decoded.failClosed;
    rules.push(clusterRule);
  });
  return rules;
}

const L3_FIELDS = ['Endpoints', 'CIDR', 'CIDRSet', 'Entities', 'Nodes', 'Groups'] as const;
const FIELD_PREFIX = { ingress: 'from', egress: 'to' } as const;
/** Per direction, written once: a rule's fields are looked up by these names for every rule read. */
const L3_FIELDS_OF: Record<Direction, readonly string[]> = {
  ingress: L3_FIELDS.map((f) => `from${f}`),
  egress: [...L3_FIELDS.map((f) => `to${f}`), 'toServices', 'toFQDNs'],
};
const NOT_ANALYSED_FIELDS_OF: Record<Direction, readonly string[]> = {
  ingress: ['fromRequires', 'fromGroups', 'toServices', 'toFQDNs'],
  egress: ['toRequires', 'toGroups', 'toServices', 'toFQDNs'],
};

/** One rule's peers and ports (and whether it fails closed). */
function decodePeerRule(
  ctx: DecodeContext,
  site: Site,
  raw: Record<string, unknown>,
  direction: Direction,
  action: 'allow' | 'deny',
  path: FieldPath,
): Omit<ClusterRule, 'index' | 'action' | 'field'> | undefined {
  const before = ctx.diagnostics.length;
  const prefix = FIELD_PREFIX[direction];
  const present = (field: string): boolean =>
    Array.isArray(raw[field]) && (raw[field] as unknown[]).length > 0;
  const l3Fields = L3_FIELDS_OF[direction];
  const l3 = l3Fields.filter(present);
  // "Explicitly check for empty non-nil slices, it should not result in any identity being selected."
  const emptyGiven = l3Fields.some((f) => Array.isArray(raw[f]) && (raw[f] as unknown[]).length === 0);
  const ports = decodeToPorts(ctx, raw, action, path);
  const icmps = present('icmps');
  const notAnalysed: string[] = [];
  for (const field of NOT_ANALYSED_FIELDS_OF[direction]) if (present(field)) notAnalysed.push(field);
  if (raw.authentication)
    ctx.report(
      'RULE_NOT_ANALYSED',
      'authentication (mutual authentication) is not analysed: read as not required',
      [...path, 'authentication'],
    );
  const peers: ClusterPeer[] = [];
  for (const field of l3) {
    const list = raw[field] as unknown[];
    const at = [...path, field];
    if (field === `${prefix}Endpoints`)
      list.forEach((selector, i) =>
        peers.push(...endpointPeers(ctx, site, selector as RawLabelSelector, [...at, i], notAnalysed)),
      );
    else if (field === `${prefix}Entities`)
      list.forEach((entity, i) => peers.push(...entityPeers(ctx, String(entity), [...at, i], notAnalysed)));
    else if (field === `${prefix}Nodes`)
      list.forEach((selector, i) => {
        const read = readCiliumSelector(ctx, selector as RawLabelSelector, [...at, i], { clusterwide: true });
        if (read) peers.push({ type: 'nodes', selector: read.pod });
      });
    else if (field === `${prefix}CIDR`)
      list.forEach((text, i) =>
        peers.push(...cidrPeers(ctx, { cidr: String(text) }, [...at, i], notAnalysed, false)),
      );
    else if (field === `${prefix}CIDRSet`)
      list.forEach((entry, i) =>
        peers.push(...cidrPeers(ctx, entry as CidrRule, [...at, i], notAnalysed, true)),
      );
  }
  if (ctx.errorSince(before)) return undefined;
  if (notAnalysed.length > 0) {
    const unresolved = l3.every((f) => notAnalysed.some((n) => f === n || n.startsWith(`${f}`)));
    if (action === 'deny' || notAnalysed.some((n) => n.endsWith('Requires'))) {
      ctx.report(
        'RULE_NOT_ANALYSED',
        `${notAnalysed.join(', ')} ${notAnalysed.length === 1 ? 'is' : 'are'} not analysed: the rule fails closed (${action === 'allow' ? 'it allows nothing' : 'it denies everything'})`,
        path,
      );
      return { peers: [], failClosed: true };
    }
    ctx.report(
      'RULE_NOT_ANALYSED',
      `${notAnalysed.join(', ')} ${notAnalysed.length === 1 ? 'is' : 'are'} not analysed: ${unresolved ? 'the rule allows nothing here' : 'those peers match nothing here'}`,
      path,
    );
  }
  if (emptyGiven) return { peers: [] };
  // No L3 member: with ports (or ICMP), from anywhere; an empty rule allows nothing.
  if (l3.length === 0) {
    if (ports === 'none' && !icmps) return { peers: [] };
    peers.push({ type: 'networks', cidrs: EVERYWHERE });
  }
  const portList = ports === 'none' ? (icmps ? [] : undefined) : ports;
  return portList !== undefined
    ? { peers: exactArray(peers), ports: portList }
    : { peers: exactArray(peers) };
}

/** The selector of one namespace by name, made once per name (bounded; cleared when full). */
const namespaceSelectors = new Map<string, LabelSelector>();
function namespaceSelector(name: string): LabelSelector {
  let selector = namespaceSelectors.get(name);
  if (!selector) {
    if (namespaceSelectors.size >= 10_000) namespaceSelectors.clear();
    selector = makeSelector({ [NAMESPACE_NAME_LABEL]: name }, []);
    namespaceSelectors.set(name, selector);
  }
  return selector;
}

function endpointPeers(
  ctx: DecodeContext,
  site: Site,
  raw: RawLabelSelector,
  path: FieldPath,
  notAnalysed: string[],
): ClusterPeer[] {
  const selector: CiliumSelector | undefined = readCiliumSelector(ctx, raw, path, site);
  if (!selector) return [];
  if (selector.entities.length > 0)
    return selector.entities.flatMap((e) => entityPeers(ctx, e, path, notAnalysed));
  // Without a namespace of its own: the policy's namespace (clusterwide: every namespace).
  const namespaces =
    selector.scoped || site.namespace === undefined ? selector.namespace : namespaceSelector(site.namespace);
  // Two literals, not a conditional spread (the runtime's slow copy, for every peer).
  return selector.pod.key !== ''
    ? [{ type: 'pods', namespaces: { selector: namespaces }, podSelector: selector.pod }]
    : [{ type: 'pods', namespaces: { selector: namespaces } }];
}

/** What each entity is in Palisade's model (docs/CALICO-CILIUM.md has the table). */
function entityPeers(
  ctx: DecodeContext,
  entity: string,
  path: FieldPath,
  notAnalysed: string[],
): ClusterPeer[] {
  const all = makeSelector({}, []);
  switch (entity) {
    case 'all':
      // Every address, and every pod — also one the input gives no address (a template).
      return [
        { type: 'pods', namespaces: { selector: all } },
        { type: 'networks', cidrs: EVERYWHERE },
      ];
    case 'world':
      return [{ type: 'outside', cidrs: EVERYWHERE }];
    case 'world-ipv4':
      return [{ type: 'outside', cidrs: EVERYWHERE.filter((c) => c.family === 4) }];
    case 'world-ipv6':
      return [{ type: 'outside', cidrs: EVERYWHERE.filter((c) => c.family === 6) }];
    case 'cluster':
      return [
        { type: 'pods', namespaces: { selector: all } },
        { type: 'nodes', selector: all },
      ];
    case 'host':
      return [{ type: 'nodes', selector: all, only: 'own' }];
    case 'remote-node':
      return [{ type: 'nodes', selector: all, only: 'others' }];
    case 'init':
    case 'health':
    case 'unmanaged':
    case 'none':
      // Endpoints the input has none of (bootstrapping, health checks, not managed by Cilium).
      return [];
    case 'kube-apiserver':
    case 'ingress':
      notAnalysed.push(
        `entity ${entity} (${entity === 'ingress' ? "Cilium's Envoy" : 'the API server'}: its address is not in the input)`,
      );
      return [];
    default:
      ctx.report(
        'RULE_INVALID',
        `entity "${entity}" is not one of all, world, world-ipv4, world-ipv6, cluster, host, remote-node, kube-apiserver, ingress, init, health, unmanaged, none`,
        path,
      );
      return [];
  }
}

interface CidrRule {
  readonly cidr?: string | null;
  readonly cidrGroupRef?: string | null;
  readonly cidrGroupSelector?: unknown;
  readonly except?: readonly string[] | null;
}

/** A `fromCIDR` entry (a string, at `path`) or a `fromCIDRSet` entry (its `cidr` under `path`). */
function cidrPeers(
  ctx: DecodeContext,
  raw: CidrRule,
  path: FieldPath,
  notAnalysed: string[],
  inSet: boolean,
): ClusterPeer[] {
  if (raw.cidrGroupRef != null || raw.cidrGroupSelector != null) {
    notAnalysed.push(`${raw.cidrGroupRef != null ? 'cidrGroupRef' : 'cidrGroupSelector'} (CiliumCIDRGroup)`);
    return [];
  }
  if (raw.cidr == null) {
    ctx.report('SCHEMA_REQUIRED', 'a CIDR rule needs cidr (or cidrGroupRef)', [...path, 'cidr'], true);
    return [];
  }
  const cidr = decodeCidr(ctx, raw.cidr, inSet ? [...path, 'cidr'] : path);
  const except = (raw.except ?? []).flatMap((text, i) => {
    const parsed = decodeCidr(ctx, text, [...path, 'except', i]);
    // Cilium refuses the policy ("allow CIDR prefix … does not contain exclude CIDR prefix …"):
    // an except must lie inside its cidr (the cidr itself is allowed, unlike an ipBlock's).
    if (parsed && cidr && !cidrCovers(cidr, parsed)) {
      ctx.report(
        'EXCEPT_NOT_IN_CIDR',
        `except "${text}" is not inside cidr "${cidr.text}": Cilium refuses the policy`,
        [...path, 'except', i],
      );
      return [];
    }
    return parsed ? [parsed] : [];
  });
  if (!cidr) return [];
  return [{ type: 'outside', cidrs: subtractCidrsCached(cidr, except) }];
}
