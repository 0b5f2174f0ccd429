/**
 * Peers of AdminNetworkPolicy, BaselineAdminNetworkPolicy and ClusterNetworkPolicy rules.
 * Exactly one field per peer. The v0.1.1 shapes of v1alpha1 (`namespaces: {namespaceSelector,
 * sameLabels, notSameLabels}`, `pods: {namespaces: …, podSelector}`) are still read, with a
 * deprecation warning. A peer with no known field fails closed, as the API requires.
 */
import type { z } from 'zod';
import { parseCidr, type Cidr } from '../net/ip.ts';
import type { ClusterPeer, NamespaceMatch } from '../model/cluster-policy.ts';
import type { DecodeContext } from './decode-context.ts';
import { decodeSelector } from './decode-labels.ts';
import {
  legacyNamespacedPodSchema,
  namespacedPodSchema,
  namespaceSetSchema,
  stringListSchema,
} from './cluster-policy-schemas.ts';
import { labelSelectorSchema } from './schemas.ts';
import type { FieldPath } from './types.ts';
import { labelKeyProblem } from './validate-names.ts';
import { decodeReportingAll, fieldNamesOf, type Reading } from './prune-mistyped.ts';

const INGRESS_FIELDS = ['namespaces', 'pods'] as const;
const EGRESS_FIELDS = ['namespaces', 'pods', 'nodes', 'networks', 'domainNames'] as const;
const MAX_NETWORKS = 25;
const MAX_DOMAIN_NAMES = 25;
const LEGACY_NAMESPACE_FIELDS = ['namespaceSelector', 'sameLabels', 'notSameLabels'];
const DOMAIN_NAME =
  /^(\*\.)?([a-zA-Z0-9]([-a-zA-Z0-9_]*[a-zA-Z0-9])?\.)+[a-zA-Z0-9]([-a-zA-Z0-9_]*[a-zA-Z0-9])?\.?$/;

const SELECTOR = reading(labelSelectorSchema);
const NAMESPACED_POD = reading(namespacedPodSchema);
const LEGACY_NAMESPACED_POD = reading(legacyNamespacedPodSchema);
const NAMESPACE_SET = reading(namespaceSetSchema);
const STRING_LIST = reading(stringListSchema);

interface PeerOptions {
  readonly direction: 'ingress' | 'egress';
  /** The v0.1.1 peer shapes exist only in v1alpha1. */
  readonly legacyShapes: boolean;
}

/** A decoded peer; `unknown` when it has no field Palisade knows (fail closed); undefined after an error. */
export function decodeClusterPeer(
  ctx: DecodeContext,
  raw: Record<string, unknown>,
  path: FieldPath,
  options: PeerOptions,
): ClusterPeer | 'unknown' | undefined {
  const allowed: readonly string[] = options.direction === 'ingress' ? INGRESS_FIELDS : EGRESS_FIELDS;
  const present = Object.keys(raw).filter((key) => raw[key] !== null && raw[key] !== undefined);
  const known = present.filter((key) => (EGRESS_FIELDS as readonly string[]).includes(key));
  const misplaced = known.filter((key) => !allowed.includes(key));
  if (misplaced.length > 0) {
    ctx.report(
      'PEER_INVALID',
      `${options.direction} peers cannot use "${misplaced.join('", "')}" (only ${allowed.join(', ')})`,
      [...path, misplaced[0] as string],
      true,
    );
    return undefined;
  }
  if (known.length > 1) {
    ctx.report('PEER_INVALID', `a peer sets exactly one field, not ${known.join(' and ')}`, path);
    return undefined;
  }
  const field = known[0];
  if (field === undefined) {
    const what = present.length ? `unknown field(s) ${present.map((k) => `"${k}"`).join(', ')}` : 'no field';
    ctx.report('PEER_FAIL_CLOSED', `peer has ${what}; the rule fails closed`, path);
    return 'unknown';
  }
  const value = raw[field];
  const at = [...path, field];
  switch (field) {
    case 'namespaces':
      return decodeNamespacesPeer(ctx, value, at, options);
    case 'pods':
      return decodePodsPeer(ctx, value, at, options);
    case 'nodes':
      return parse(ctx, SELECTOR, value, at, (selector) => {
        const decoded = decodeSelector(ctx, selector, at);
        return decoded ? { type: 'nodes', selector: decoded } : undefined;
      });
    case 'networks':
      return decodeNetworks(ctx, value, at);
    case 'domainNames':
      return decodeDomainNames(ctx, value, at);
  }
  return undefined;
}

function decodeNamespacesPeer(
  ctx: DecodeContext,
  value: unknown,
  at: FieldPath,
  options: PeerOptions,
): ClusterPeer | undefined {
  if (options.legacyShapes && hasAnyKey(value, LEGACY_NAMESPACE_FIELDS)) {
    deprecated(ctx, at);
    const namespaces = decodeNamespaceSet(ctx, value, at);
    return namespaces ? { type: 'pods', namespaces } : undefined;
  }
  return parse(ctx, SELECTOR, value, at, (selector) => {
    const decoded = decodeSelector(ctx, selector, at);
    return decoded ? { type: 'pods', namespaces: { selector: decoded } } : undefined;
  });
}

function decodePodsPeer(
  ctx: DecodeContext,
  value: unknown,
  at: FieldPath,
  options: PeerOptions,
): ClusterPeer | undefined {
  if (options.legacyShapes && hasAnyKey(value, ['namespaces'])) {
    deprecated(ctx, at);
    return parse(ctx, LEGACY_NAMESPACED_POD, value, at, (raw) => {
      const namespaces = decodeNamespaceSet(ctx, raw.namespaces, [...at, 'namespaces']);
      const podSelector = decodeSelector(ctx, raw.podSelector, [...at, 'podSelector']);
      return namespaces && podSelector ? { type: 'pods', namespaces, podSelector } : undefined;
    });
  }
  return parse(ctx, NAMESPACED_POD, value, at, (raw) => {
    const selector = decodeSelector(ctx, raw.namespaceSelector, [...at, 'namespaceSelector']);
    const podSelector = decodeSelector(ctx, raw.podSelector, [...at, 'podSelector']);
    return selector && podSelector ? { type: 'pods', namespaces: { selector }, podSelector } : undefined;
  });
}

/** v0.1.1: exactly one of namespaceSelector, sameLabels, notSameLabels. */
function decodeNamespaceSet(ctx: DecodeContext, value: unknown, at: FieldPath): NamespaceMatch | undefined {
  return parse(ctx, NAMESPACE_SET, value, at, (raw) => decodeParsedNamespaceSet(ctx, raw, at));
}

function decodeParsedNamespaceSet(
  ctx: DecodeContext,
  raw: z.output<typeof namespaceSetSchema>,
  at: FieldPath,
): NamespaceMatch | undefined {
  const set = LEGACY_NAMESPACE_FIELDS.filter((k) => (raw as Record<string, unknown>)[k] != null);
  if (set.length !== 1) {
    ctx.report(
      'PEER_INVALID',
      `namespaces sets exactly one of namespaceSelector, sameLabels, notSameLabels (found ${set.length})`,
      at,
    );
    return undefined;
  }
  if (raw.namespaceSelector) {
    const selector = decodeSelector(ctx, raw.namespaceSelector, [...at, 'namespaceSelector']);
    return selector ? { selector } : undefined;
  }
  const field = raw.sameLabels ? 'sameLabels' : 'notSameLabels';
  const keys = raw.sameLabels ?? raw.notSameLabels ?? [];
  let ok = true;
  keys.forEach((key, i) => {
    const problem = labelKeyProblem(key);
    if (problem) {
      ctx.report('LABEL_KEY_INVALID', `label key "${key}" is invalid: ${problem}`, [...at, field, i]);
      ok = false;
    }
  });
  if (!ok) return undefined;
  return field === 'sameLabels' ? { sameLabels: [...keys] } : { notSameLabels: [...keys] };
}

function decodeNetworks(ctx: DecodeContext, value: unknown, at: FieldPath): ClusterPeer | undefined {
  return parse(ctx, STRING_LIST, value, at, (texts) => decodeCidrs(ctx, texts, at));
}

function decodeCidrs(ctx: DecodeContext, texts: readonly string[], at: FieldPath): ClusterPeer | undefined {
  if (!checkCount(ctx, texts.length, MAX_NETWORKS, 'networks', at)) return undefined;
  const cidrs: Cidr[] = [];
  let ok = true;
  texts.forEach((text, i) => {
    const parsed = parseCidr(text);
    for (const problem of parsed.problems) {
      if (problem.fatal) ctx.report('CIDR_INVALID', problem.message, [...at, i]);
      else if (problem.kind === 'host-bits') ctx.report('CIDR_HOST_BITS', problem.message, [...at, i]);
      else ctx.report('CIDR_NON_CANONICAL', problem.message, [...at, i]);
    }
    if (parsed.ok) cidrs.push(parsed.value);
    else ok = false;
  });
  return ok ? { type: 'networks', cidrs } : undefined;
}

function decodeDomainNames(ctx: DecodeContext, value: unknown, at: FieldPath): ClusterPeer | undefined {
  return parse(ctx, STRING_LIST, value, at, (names) => decodeNames(ctx, names, at));
}

function decodeNames(ctx: DecodeContext, names: readonly string[], at: FieldPath): ClusterPeer | undefined {
  if (!checkCount(ctx, names.length, MAX_DOMAIN_NAMES, 'domainNames', at)) return undefined;
  let ok = true;
  names.forEach((name, i) => {
    if (!DOMAIN_NAME.test(name)) {
      ctx.report(
        'DOMAIN_NAME_INVALID',
        `"${name}" is not a domain name (a "*." prefix is the only wildcard allowed)`,
        [...at, i],
      );
      ok = false;
    }
  });
  // Names compare case-insensitively and without the root dot.
  return ok
    ? { type: 'domainNames', names: names.map((n) => n.toLowerCase().replace(/\.$/, '')) }
    : undefined;
}

/** Reports too few (none) or too many entries; true when the count is allowed. */
export function checkCount(
  ctx: DecodeContext,
  count: number,
  max: number,
  what: string,
  at: FieldPath,
): boolean {
  if (count === 0) {
    ctx.report('SCHEMA_REQUIRED', `${what} needs at least one entry`, at);
    return false;
  }
  if (count > max) {
    ctx.report('API_LIMIT_EXCEEDED', `${what} has ${count} entries; the API allows at most ${max}`, at);
    return false;
  }
  return true;
}

/** `decode` of the value at `at` read with `schema`; after a type error, the rest is still checked (see prune-mistyped.ts). */
function parse<S extends z.ZodType, R>(
  ctx: DecodeContext,
  reading: Reading<S>,
  value: unknown,
  at: FieldPath,
  decode: (data: z.output<S>) => R,
): R | undefined {
  return decodeReportingAll(ctx, value, reading, decode, at);
}

/** A peer field's schema, with its field names for typo hints. */
function reading<S extends z.ZodType>(schema: S): Reading<S> {
  return { schema, knownFields: fieldNamesOf(schema) };
}

function hasAnyKey(value: unknown, keys: readonly string[]): boolean {
  return typeof value === 'object' && value !== null && keys.some((k) => k in value);
}

function deprecated(ctx: DecodeContext, at: FieldPath): void {
  ctx.report(
    'PEER_SHAPE_DEPRECATED',
    'this is the v0.1.1 peer shape; since v0.1.5 `namespaces` is a label selector and `pods` has namespaceSelector and podSelector',
    at,
  );
}
