/**
 * Calico's policy objects (projectcalico.org/v3, and crd.projectcalico.org/v1 as Calico stores
 * them): NetworkPolicy and GlobalNetworkPolicy become ordered policies in their tier, a Tier its
 * order and default action, a Profile with rules an ordered policy after every tier. How each
 * field is read is what docs.tigera.io's reference pages say (reference/resources/networkpolicy,
 * globalnetworkpolicy, tier, profile); docs/CALICO-CILIUM.md lists it.
 */
import {
  ADMIN_TIER,
  BASELINE_TIER,
  BUILT_IN_TIERS,
  DEFAULT_TIER,
  PROFILES_TIER,
  type ClusterPolicy,
  type ClusterPolicyKind,
  type ClusterRule,
  type ClusterSubject,
  type TierSpec,
} from '../model/cluster-policy.ts';
import type { z } from 'zod';
import { makeSelector } from '../model/selector.ts';
import { decodeReportingAll, fieldNamesOf, type Reading } from './prune-mistyped.ts';
import {
  calicoSchemas,
  type RawCalicoPolicy,
  type RawCalicoProfile,
  type RawCalicoRule,
  type RawCalicoTier,
} from './calico-schemas.ts';
import { decodeCalicoRule } from './calico-rules.ts';
import {
  bothConjunctions,
  conjunctionSelectors,
  readCalicoSelector,
  type EndpointConjunction,
} from './calico-selectors.ts';
import type { DecodeContext } from './decode-context.ts';
import { CALICO_SERVICE_ACCOUNT_LABEL } from '../model/identity-labels.ts';
import { decodeMetadataName } from './decode-metadata.ts';
import { plainCalicoPolicy } from './engine-shapes.ts';
import { dnsSubdomainProblem } from './validate-names.ts';
import type { FieldPath } from './types.ts';
import { exactArray } from '../util/exact-array.ts';
import type { Writable } from '../util/writable.ts';

export const CALICO_API_VERSIONS = ['projectcalico.org/v3', 'crd.projectcalico.org/v1'] as const;

/** Calico's own names for the built-in tiers (and the names they had before v3.30). */
const TIER_NAMES: Readonly<Record<string, string>> = {
  default: DEFAULT_TIER,
  'kube-admin': ADMIN_TIER,
  adminnetworkpolicy: ADMIN_TIER,
  'kube-baseline': BASELINE_TIER,
  baselineadminnetworkpolicy: BASELINE_TIER,
};

/** A Calico tier name as the model names tiers. */
function modelTierName(name: string): string {
  return TIER_NAMES[name] ?? name;
}

function reading<S extends z.ZodType>(schema: S): Reading<S> {
  return { schema, knownFields: fieldNamesOf(schema) };
}
const READINGS = {
  NetworkPolicy: reading(calicoSchemas.networkPolicy),
  GlobalNetworkPolicy: reading(calicoSchemas.globalNetworkPolicy),
  Tier: reading(calicoSchemas.tier),
  Profile: reading(calicoSchemas.profile),
};

type CalicoDecoded =
  | { readonly kind: 'ClusterPolicy'; readonly policy: ClusterPolicy }
  | { readonly kind: 'Tier'; readonly tier: TierSpec };

/** Decodes a Calico kind; undefined when invalid (reported) or left out on purpose (reported). */
export function decodeCalico(
  ctx: DecodeContext,
  kind: 'NetworkPolicy' | 'GlobalNetworkPolicy' | 'Tier' | 'Profile',
  apiVersion: string,
): CalicoDecoded | undefined {
  const value = ctx.raw.value;
  if (kind === 'Tier') return decodeReportingAll(ctx, value, READINGS.Tier, (raw) => decodeTier(ctx, raw));
  if (kind === 'Profile')
    return decodeReportingAll(ctx, value, READINGS.Profile, (raw) => decodeProfile(ctx, apiVersion, raw));
  // A well-formed policy is read as it is: the strict schema would give back an equal copy.
  const plain = plainCalicoPolicy(value, kind);
  if (plain) return decodePolicy(ctx, kind, apiVersion, plain);
  return decodeReportingAll(ctx, value, READINGS[kind], (raw) => decodePolicy(ctx, kind, apiVersion, raw));
}

function decodeTier(ctx: DecodeContext, raw: RawCalicoTier): CalicoDecoded | undefined {
  const { name } = decodeMetadataName(ctx, raw.metadata, false);
  const spec = raw.spec ?? {};
  const action = spec.defaultAction ?? 'Deny';
  if (action !== 'Deny' && action !== 'Pass') {
    ctx.report('ACTION_INVALID', `defaultAction "${action}" is not Deny or Pass`, ['spec', 'defaultAction']);
    return undefined;
  }
  if (ctx.failed) return undefined;
  const model = modelTierName(name);
  const builtIn = BUILT_IN_TIERS.find((t) => t.name === model);
  const tier: TierSpec = {
    name: model,
    order: spec.order ?? Infinity,
    defaultAction: action === 'Deny' ? 'deny' : 'pass',
    ...(ctx.raw.locator ? { location: ctx.raw.locator.valueAt(ctx.raw.basePath) } : {}),
  };
  if (builtIn) {
    if (builtIn.order !== tier.order || builtIn.defaultAction !== tier.defaultAction)
      ctx.report(
        'TIER_ORDER_FIXED',
        `tier ${name} has order ${builtIn.order} and default action ${builtIn.defaultAction === 'deny' ? 'Deny' : 'Pass'} in Calico, whatever the object says`,
        ['spec'],
      );
    return { kind: 'Tier', tier: { ...builtIn, ...(tier.location ? { location: tier.location } : {}) } };
  }
  return { kind: 'Tier', tier };
}

function decodePolicy(
  ctx: DecodeContext,
  kind: 'NetworkPolicy' | 'GlobalNetworkPolicy',
  apiVersion: string,
  raw: RawCalicoPolicy,
): CalicoDecoded | undefined {
  const global = kind === 'GlobalNetworkPolicy';
  // Policy names are DNS subdomains (`security.allow-dns`), global or not.
  const meta = global ? undefined : decodeMetadataName(ctx, raw.metadata, true);
  const name = raw.metadata.name;
  const nameProblem = global ? dnsSubdomainProblem(name) : undefined;
  if (nameProblem)
    ctx.report('NAME_INVALID', `name "${name}" is invalid: ${nameProblem}`, ['metadata', 'name']);
  const namespace = meta?.namespace;
  const spec = raw.spec ?? {};
  const hostOnly = spec.doNotTrack === true || spec.preDNAT === true;
  if (hostOnly) {
    ctx.report(
      'POLICY_NOT_ANALYSED',
      `${spec.doNotTrack ? 'doNotTrack' : 'preDNAT'} policy applies to host endpoints only (before connection tracking or DNAT); Palisade models no host endpoints, so it applies to no pod and is left out`,
      ['spec', spec.doNotTrack ? 'doNotTrack' : 'preDNAT'],
    );
  } else if (spec.applyOnForward === true) {
    ctx.report(
      'RULE_NOT_ANALYSED',
      'applyOnForward (host endpoints’ forwarded traffic) is not analysed; the policy applies to pods as any policy does',
      ['spec', 'applyOnForward'],
    );
  }
  const types = decodeTypes(ctx, spec.types, spec.ingress, spec.egress);
  // A namespace's policies repeat their selectors: subjects read well once are shared.
  const subjectKey = JSON.stringify([
    global ? null : (namespace ?? ''),
    spec.selector ?? null,
    global ? (spec.namespaceSelector ?? null) : null,
    spec.serviceAccountSelector ?? null,
  ]);
  const known = knownSubjects.get(subjectKey);
  if (known) {
    const ingress = decodeRules(ctx, types.ingress ? (spec.ingress ?? []) : [], namespace, 'ingress');
    const egress = decodeRules(ctx, types.egress ? (spec.egress ?? []) : [], namespace, 'egress');
    if (ctx.failed || hostOnly) return undefined;
    return calicoPolicy(ctx, kind, apiVersion, raw, namespace, known, { ingress, egress, types });
  }
  const before = ctx.diagnostics.length;
  const selector = readCalicoSelector(ctx, spec.selector, ['spec', 'selector'], 'endpoint');
  const namespaces = global
    ? readCalicoSelector(ctx, spec.namespaceSelector, ['spec', 'namespaceSelector'], 'namespace')
    : readCalicoSelector(
        ctx,
        `projectcalico.org/namespace == '${namespace ?? ''}'`,
        ['spec', 'selector'],
        'endpoint',
      );
  const accounts = readCalicoSelector(
    ctx,
    spec.serviceAccountSelector,
    ['spec', 'serviceAccountSelector'],
    'serviceAccount',
  );
  const selectorsRead = ctx.diagnostics.length === before;
  const ingress = decodeRules(ctx, types.ingress ? (spec.ingress ?? []) : [], namespace, 'ingress');
  const egress = decodeRules(ctx, types.egress ? (spec.egress ?? []) : [], namespace, 'egress');
  if (ctx.failed || !selector || !namespaces || !accounts || hostOnly) return undefined;
  const subjects = calicoSubjects(ctx, [selector, namespaces, accounts]);
  if (!subjects) return undefined;
  if (selectorsRead) {
    if (knownSubjects.size >= MAX_KNOWN_SUBJECTS) knownSubjects.clear();
    knownSubjects.set(subjectKey, subjects);
  }
  return calicoPolicy(ctx, kind, apiVersion, raw, namespace, subjects, { ingress, egress, types });
}

/** Subjects read without a problem, by the selectors they are made of (shared: never changed). */
const knownSubjects = new Map<string, Subjects>();
const MAX_KNOWN_SUBJECTS = 50_000;
type Subjects = { readonly subject: ClusterSubject; readonly moreSubjects?: ClusterSubject[] };

function calicoPolicy(
  ctx: DecodeContext,
  kind: 'NetworkPolicy' | 'GlobalNetworkPolicy',
  apiVersion: string,
  raw: RawCalicoPolicy,
  namespace: string | undefined,
  subjects: Subjects,
  rules: {
    readonly ingress: ClusterRule[];
    readonly egress: ClusterRule[];
    readonly types: { readonly ingress: boolean; readonly egress: boolean };
  },
): CalicoDecoded {
  const global = kind === 'GlobalNetworkPolicy';
  const { ingress, egress, types } = rules;
  const spec = raw.spec ?? {};
  const modelKind: ClusterPolicyKind = global ? 'CalicoGlobalNetworkPolicy' : 'CalicoNetworkPolicy';
  // Field by field in the order readers and JSON output have always seen, not with conditional
  // spreads (the runtime's slow copy, for every policy).
  const policy = { kind: modelKind, apiVersion, name: raw.metadata.name } as Writable<ClusterPolicy>;
  if (namespace !== undefined) policy.namespace = namespace;
  policy.tier = modelTierName(spec.tier ?? 'default');
  policy.priority = spec.order ?? Infinity;
  policy.subject = subjects.subject;
  if (subjects.moreSubjects) policy.moreSubjects = subjects.moreSubjects;
  policy.ingress = ingress;
  policy.egress = egress;
  policy.isolates = types;
  policy.location = ctx.raw.locator.valueAt(ctx.raw.basePath);
  return { kind: 'ClusterPolicy', policy };
}

/**
 * A Profile with rules: `kns.<namespace>` applies to that namespace's pods, `ksa.<ns>.<account>`
 * to that service account's (Calico's Kubernetes profiles). A Profile without rules only applies
 * labels, which pods here do not take from it.
 */
function decodeProfile(
  ctx: DecodeContext,
  apiVersion: string,
  raw: RawCalicoProfile,
): CalicoDecoded | undefined {
  const name = raw.metadata.name;
  const spec = raw.spec ?? {};
  const ingress = decodeRules(ctx, spec.ingress ?? [], undefined, 'ingress');
  const egress = decodeRules(ctx, spec.egress ?? [], undefined, 'egress');
  if (ctx.failed) return undefined;
  let subject: ClusterSubject | undefined;
  const nameLabel = (ns: string) => makeSelector({ 'kubernetes.io/metadata.name': ns }, []);
  const ksa = /^ksa\.([^.]+)\.(.+)$/.exec(name);
  if (name.startsWith('kns.')) subject = { namespaceSelector: nameLabel(name.slice(4)) };
  else if (ksa)
    subject = {
      namespaceSelector: nameLabel(ksa[1] as string),
      podSelector: makeSelector({ [CALICO_SERVICE_ACCOUNT_LABEL]: ksa[2] as string }, []),
    };
  if (spec.labelsToApply && Object.keys(spec.labelsToApply).length > 0)
    ctx.report(
      'RULE_NOT_ANALYSED',
      'labelsToApply is not analysed: pods do not take labels from profiles here',
      ['spec', 'labelsToApply'],
    );
  if (spec.ingress == null && spec.egress == null) return undefined;
  if (!subject) {
    ctx.report(
      'POLICY_NOT_ANALYSED',
      `profile ${name} is not a Kubernetes namespace's (kns.<namespace>) or service account's (ksa.<namespace>.<name>): which pods use it is not in the input, so it is left out`,
      ['metadata', 'name'],
    );
    return undefined;
  }
  return {
    kind: 'ClusterPolicy',
    policy: {
      kind: 'CalicoProfile',
      apiVersion,
      name,
      tier: PROFILES_TIER,
      priority: name.startsWith('kns.') ? 0 : 1,
      subject,
      ingress,
      egress,
      isolates: { ingress: true, egress: true },
      location: ctx.raw.locator.valueAt(ctx.raw.basePath),
    },
  };
}

/** `types` as given, or defaulted by the rules present (docs: Ingress unless only egress rules). */
function decodeTypes(
  ctx: DecodeContext,
  raw: readonly string[] | null | undefined,
  ingress: readonly unknown[] | null | undefined,
  egress: readonly unknown[] | null | undefined,
): { ingress: boolean; egress: boolean } {
  if (raw === null || raw === undefined) {
    const hasIngress = (ingress?.length ?? 0) > 0;
    const hasEgress = (egress?.length ?? 0) > 0;
    return { ingress: hasIngress || !hasEgress, egress: hasEgress };
  }
  const seen = new Set<string>();
  raw.forEach((type, i) => {
    if (type !== 'Ingress' && type !== 'Egress')
      ctx.report('POLICY_TYPE_INVALID', `type "${type}" is not Ingress or Egress`, ['spec', 'types', i]);
    else if (seen.has(type))
      ctx.report('POLICY_TYPE_DUPLICATE', `type "${type}" is given twice`, ['spec', 'types', i]);
    seen.add(type);
  });
  return { ingress: seen.has('Ingress'), egress: seen.has('Egress') };
}

function decodeRules(
  ctx: DecodeContext,
  raw: readonly RawCalicoRule[],
  namespace: string | undefined,
  direction: 'ingress' | 'egress',
): ClusterRule[] {
  const rules: ClusterRule[] = [];
  raw.forEach((rule, index) => {
    const path: FieldPath = ['spec', direction, index];
    const decoded = decodeCalicoRule(ctx, rule, index, { namespace, direction }, path);
    // A Log rule logs and evaluation goes on: it decides nothing.
    if (decoded && decoded !== 'log') rules.push(decoded);
  });
  return exactArray(rules);
}

/**
 * The policy's subjects: the conjunction of its selectors' alternatives (rejected-policy.ts reads
 * a dropped GlobalNetworkPolicy's with it too).
 */
export function calicoSubjects(
  ctx: DecodeContext,
  parts: readonly (readonly EndpointConjunction[])[],
): { subject: ClusterSubject; moreSubjects?: ClusterSubject[] } | undefined {
  let alternatives: EndpointConjunction[] | undefined = [{ namespace: [], pod: [] }];
  for (const part of parts) alternatives = alternatives && bothConjunctions(alternatives, part);
  if (!alternatives) {
    ctx.report('SELECTOR_TOO_COMPLEX', 'the policy’s selectors together have too many alternatives', [
      'spec',
      'selector',
    ]);
    return undefined;
  }
  const subjects: ClusterSubject[] = alternatives.map((conjunction) => {
    const { namespaceSelector, podSelector } = conjunctionSelectors(conjunction);
    return { namespaceSelector, ...(podSelector.key !== '' ? { podSelector } : {}) };
  });
  const [subject, ...more] = subjects;
  // A selector that selects nothing (`!all()`): a namespace selector no namespace matches.
  if (!subject)
    return {
      subject: {
        namespaceSelector: makeSelector({}, [
          { key: 'kubernetes.io/metadata.name', operator: 'Exists', values: [] },
          { key: 'kubernetes.io/metadata.name', operator: 'DoesNotExist', values: [] },
        ]),
      },
    };
  return more.length > 0 ? { subject, moreSubjects: more } : { subject };
}
