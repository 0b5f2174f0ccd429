/**
 * AdminNetworkPolicy and BaselineAdminNetworkPolicy (policy.networking.k8s.io/v1alpha1) and
 * ClusterNetworkPolicy (v1alpha2): structure, the validation the API's CRDs carry (ranges,
 * limits, exactly-one-of fields, cross-field rules), then one normalized ClusterPolicy.
 */
import type { z } from 'zod';
import { BANP_PRIORITY } from '../model/precedence.ts';
import type {
  ClusterPeer,
  ClusterPolicy,
  NetworkPolicyApiKind,
  ClusterPort,
  ClusterRule,
  ClusterRuleAction,
  ClusterSubject,
  Tier,
} from '../model/cluster-policy.ts';
import type { DecodeContext } from './decode-context.ts';
import { checkCount, decodeClusterPeer } from './decode-cluster-peer.ts';
import { decodeAnpPort, decodeCnpProtocol } from './decode-cluster-ports.ts';
import { decodeSelector } from './decode-labels.ts';
import {
  clusterPolicySchemas,
  type RawAnpPort,
  type RawCnpProtocol,
  type RawSubject,
} from './cluster-policy-schemas.ts';
import type { FieldPath } from './types.ts';
import { dnsSubdomainProblem } from './validate-names.ts';
import { decodeReportingAll, fieldNamesOf, type Reading } from './prune-mistyped.ts';

const CLUSTER_POLICY_API_VERSIONS: Readonly<Record<NetworkPolicyApiKind, string>> = {
  AdminNetworkPolicy: 'policy.networking.k8s.io/v1alpha1',
  BaselineAdminNetworkPolicy: 'policy.networking.k8s.io/v1alpha1',
  ClusterNetworkPolicy: 'policy.networking.k8s.io/v1alpha2',
};

/** What differs between the kinds: limits and the spelling of actions. */
const KIND_RULES: Readonly<
  Record<
    NetworkPolicyApiKind,
    { maxRules: number; maxPeers: number; maxPorts: number; actions: readonly string[] }
  >
> = {
  AdminNetworkPolicy: { maxRules: 100, maxPeers: 100, maxPorts: 100, actions: ['Allow', 'Deny', 'Pass'] },
  BaselineAdminNetworkPolicy: { maxRules: 100, maxPeers: 100, maxPorts: 100, actions: ['Allow', 'Deny'] },
  ClusterNetworkPolicy: { maxRules: 25, maxPeers: 25, maxPorts: 25, actions: ['Accept', 'Deny', 'Pass'] },
};
const MAX_RULE_NAME = 100;
const READINGS: Readonly<Record<NetworkPolicyApiKind, Reading<z.ZodType>>> = {
  AdminNetworkPolicy: reading('anp'),
  BaselineAdminNetworkPolicy: reading('banp'),
  ClusterNetworkPolicy: reading('cnp'),
};

function reading(kind: keyof typeof clusterPolicySchemas): Reading<z.ZodType> {
  const schema = clusterPolicySchemas[kind];
  return { schema, knownFields: fieldNamesOf(schema) };
}

interface RawRule {
  readonly name?: string | null | undefined;
  readonly action: string;
  readonly from?: Record<string, unknown>[];
  readonly to?: Record<string, unknown>[];
  readonly ports?: readonly RawAnpPort[] | null | undefined;
  readonly protocols?: readonly RawCnpProtocol[] | null | undefined;
}

/** What the decoder reads of any of the three kinds (the schemas tell them apart). */
interface RawClusterPolicy {
  readonly metadata: { readonly name: string };
  readonly spec: RawSpec;
}

interface RawSpec {
  readonly priority?: number;
  readonly tier?: string;
  readonly subject: RawSubject;
  readonly ingress?: readonly RawRule[] | null | undefined;
  readonly egress?: readonly RawRule[] | null | undefined;
}

export function decodeClusterPolicy(
  ctx: DecodeContext,
  kind: NetworkPolicyApiKind,
  apiVersion: string,
): ClusterPolicy | undefined {
  const expected = CLUSTER_POLICY_API_VERSIONS[kind];
  if (apiVersion !== expected) {
    ctx.report('API_VERSION_UNKNOWN', `${kind} apiVersion "${apiVersion}" is not ${expected}`, [
      'apiVersion',
    ]);
    return undefined;
  }
  return decodeReportingAll(ctx, ctx.raw.value, READINGS[kind], (raw) =>
    decodeParsed(ctx, kind, apiVersion, raw as RawClusterPolicy),
  );
}

function decodeParsed(
  ctx: DecodeContext,
  kind: NetworkPolicyApiKind,
  apiVersion: string,
  raw: RawClusterPolicy,
): ClusterPolicy | undefined {
  const name = raw.metadata.name;
  const nameProblem = dnsSubdomainProblem(name);
  if (nameProblem)
    ctx.report('NAME_INVALID', `name "${name}" is invalid: ${nameProblem}`, ['metadata', 'name']);
  if (kind === 'BaselineAdminNetworkPolicy' && name !== 'default') {
    ctx.report(
      'BANP_NAME_NOT_DEFAULT',
      `BaselineAdminNetworkPolicy is a singleton named "default", not "${name}"`,
      ['metadata', 'name'],
    );
  }
  const spec = raw.spec;
  const tier = decodeTier(ctx, kind, spec.tier);
  const priority = kind === 'BaselineAdminNetworkPolicy' ? BANP_PRIORITY : decodePriority(ctx, spec.priority);
  const subject = decodeSubject(ctx, spec.subject, ['spec', 'subject']);
  const ingress = decodeRules(ctx, kind, spec.ingress ?? [], 'ingress');
  const egress = decodeRules(ctx, kind, spec.egress ?? [], 'egress');
  if (ctx.failed || !tier || priority === undefined || !subject) return undefined;
  return {
    kind,
    apiVersion,
    name,
    tier,
    priority,
    subject,
    ingress,
    egress,
    location: ctx.raw.locator.valueAt(ctx.raw.basePath),
  };
}

function decodeTier(
  ctx: DecodeContext,
  kind: NetworkPolicyApiKind,
  raw: string | undefined,
): Tier | undefined {
  if (kind === 'AdminNetworkPolicy') return 'Admin';
  if (kind === 'BaselineAdminNetworkPolicy') return 'Baseline';
  if (raw === 'Admin' || raw === 'Baseline') return raw;
  ctx.report('TIER_INVALID', `tier "${raw}" is not Admin or Baseline`, ['spec', 'tier']);
  return undefined;
}

function decodePriority(ctx: DecodeContext, raw: number | undefined): number | undefined {
  if (raw !== undefined && Number.isInteger(raw) && raw >= 0 && raw <= 1000) return raw;
  ctx.report('PRIORITY_INVALID', `priority ${raw} is not an integer between 0 and 1000`, [
    'spec',
    'priority',
  ]);
  return undefined;
}

function decodeSubject(ctx: DecodeContext, raw: RawSubject, at: FieldPath): ClusterSubject | undefined {
  const set = (['namespaces', 'pods'] as const).filter((k) => raw[k] != null);
  if (set.length !== 1) {
    ctx.report(
      'SUBJECT_INVALID',
      `subject sets exactly one of namespaces and pods (found ${set.length ? set.join(' and ') : 'none'})`,
      at,
    );
    return undefined;
  }
  if (raw.namespaces) {
    const namespaceSelector = decodeSelector(ctx, raw.namespaces, [...at, 'namespaces']);
    return namespaceSelector ? { namespaceSelector } : undefined;
  }
  const pods = raw.pods ?? {};
  const namespaceSelector = decodeSelector(ctx, pods.namespaceSelector, [...at, 'pods', 'namespaceSelector']);
  const podSelector = decodeSelector(ctx, pods.podSelector, [...at, 'pods', 'podSelector']);
  return namespaceSelector && podSelector ? { namespaceSelector, podSelector } : undefined;
}

function decodeRules(
  ctx: DecodeContext,
  kind: NetworkPolicyApiKind,
  raw: readonly RawRule[],
  direction: 'ingress' | 'egress',
): ClusterRule[] {
  const limits = KIND_RULES[kind];
  if (raw.length > limits.maxRules) {
    ctx.report(
      'API_LIMIT_EXCEEDED',
      `${direction} has ${raw.length} rules; ${kind} allows at most ${limits.maxRules}`,
      ['spec', direction],
    );
  }
  return raw.flatMap((rule, index) => {
    const decoded = decodeRule(ctx, kind, rule, index, direction);
    return decoded ? [decoded] : [];
  });
}

function decodeRule(
  ctx: DecodeContext,
  kind: NetworkPolicyApiKind,
  raw: RawRule,
  index: number,
  direction: 'ingress' | 'egress',
): ClusterRule | undefined {
  const at: FieldPath = ['spec', direction, index];
  const limits = KIND_RULES[kind];
  const before = ctx.diagnostics.length;
  if (raw.name != null && raw.name.length > MAX_RULE_NAME) {
    ctx.report('API_LIMIT_EXCEEDED', `rule name is ${raw.name.length} characters; at most ${MAX_RULE_NAME}`, [
      ...at,
      'name',
    ]);
  }
  const action = decodeAction(ctx, raw.action, limits.actions, [...at, 'action']);
  const peersField = direction === 'ingress' ? 'from' : 'to';
  const rawPeers = raw[peersField] ?? [];
  checkCount(ctx, rawPeers.length, limits.maxPeers, peersField, [...at, peersField]);
  const peers: ClusterPeer[] = [];
  let unknownPeer = false;
  rawPeers.forEach((peer, i) => {
    const decoded = decodeClusterPeer(ctx, peer, [...at, peersField, i], {
      direction,
      legacyShapes: kind !== 'ClusterNetworkPolicy',
    });
    if (decoded === 'unknown') unknownPeer = true;
    else if (decoded) peers.push(decoded);
  });
  const ports = decodeRulePorts(ctx, kind, raw, at);
  checkCrossField(ctx, action, peers, ports, at, peersField);
  const failed = ctx.errorSince(before);
  if (failed || !action) return undefined;
  return {
    index,
    ...(raw.name ? { name: raw.name } : {}),
    action,
    peers,
    ...(ports ? { ports } : {}),
    ...(unknownPeer ? { failClosed: true } : {}),
  };
}

function decodeAction(
  ctx: DecodeContext,
  raw: string,
  allowed: readonly string[],
  at: FieldPath,
): ClusterRuleAction | undefined {
  if (!allowed.includes(raw)) {
    ctx.report('ACTION_INVALID', `action "${raw}" is not one of ${allowed.join(', ')}`, at);
    return undefined;
  }
  return raw === 'Allow' || raw === 'Accept' ? 'allow' : raw === 'Deny' ? 'deny' : 'pass';
}

function decodeRulePorts(
  ctx: DecodeContext,
  kind: NetworkPolicyApiKind,
  raw: RawRule,
  at: FieldPath,
): ClusterPort[] | undefined {
  const field = kind === 'ClusterNetworkPolicy' ? 'protocols' : 'ports';
  const list = kind === 'ClusterNetworkPolicy' ? raw.protocols : raw.ports;
  if (list == null) return undefined;
  if (!checkCount(ctx, list.length, KIND_RULES[kind].maxPorts, field, [...at, field])) return undefined;
  const ports: ClusterPort[] = [];
  list.forEach((entry, i) => {
    const where = [...at, field, i];
    const decoded =
      kind === 'ClusterNetworkPolicy'
        ? decodeCnpProtocol(ctx, entry as RawCnpProtocol, where)
        : decodeAnpPort(ctx, entry as RawAnpPort, where);
    if (decoded) ports.push(decoded);
  });
  return ports;
}

/** The CRDs' cross-field rules: named ports need pod peers; domain names only in Accept rules. */
function checkCrossField(
  ctx: DecodeContext,
  action: ClusterRuleAction | undefined,
  peers: readonly ClusterPeer[],
  ports: readonly ClusterPort[] | undefined,
  at: FieldPath,
  peersField: string,
): void {
  const nonPod = peers.find((p) => p.type !== 'pods');
  if (nonPod && ports?.some((p) => p.type === 'named')) {
    ctx.report(
      'NAMED_PORT_NON_POD_PEER',
      `a named port cannot be used in a rule with a ${nonPod.type} peer (only pods have named ports)`,
      at,
    );
  }
  if (action && action !== 'allow' && peers.some((p) => p.type === 'domainNames')) {
    ctx.report('DOMAIN_NAME_INVALID', 'domainNames peers are only allowed in Accept/Allow rules', [
      ...at,
      peersField,
    ]);
  }
}
