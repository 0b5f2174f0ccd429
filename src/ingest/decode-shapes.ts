/**
 * Hand-written checks that a raw NetworkPolicy, Pod or Namespace has a structure its zod schema
 * (schemas.ts) accepts, for the common case of a well-formed object: then the object itself is
 * what the schema would give back (these schemas have no defaults and no transforms, so their
 * output is a copy equal to their input, loose objects keeping their other keys), and zod's parse
 * is skipped — for the strict NetworkPolicy schema about a third of decoding a policy, and a
 * generated shape (a) has 75,000 policies and 100,000 pods. Anything a check does not vouch for
 * (an unknown field of a strict object, a wrong type, an object that is not a plain one, a
 * `__proto__` key) goes through zod as before, so every diagnostic comes from where it always did.
 *
 * A check only ever answers "certainly accepted": a false answer costs the zod parse, never a
 * result. test/ingest/decode-shapes.test.ts holds them to zod on random objects.
 */
import type { z } from 'zod';
import type { namespaceSchema, networkPolicySchema, podSchema } from './schemas.ts';

/** The strict schema's output type: what decodeNetworkPolicy reads. */
export type RawNetworkPolicy = z.infer<typeof networkPolicySchema>;
type RawPod = z.infer<typeof podSchema>;
type RawNamespace = z.infer<typeof namespaceSchema>;

/** `value` itself when the strict NetworkPolicy schema certainly accepts it; undefined otherwise. */
export function plainNetworkPolicy(value: unknown): RawNetworkPolicy | undefined {
  return isNetworkPolicy(value) ? (value as RawNetworkPolicy) : undefined;
}

/** `value` itself when the Pod schema certainly accepts it; undefined otherwise. */
export function plainPod(value: unknown): RawPod | undefined {
  return isPod(value) ? (value as RawPod) : undefined;
}

/** `value` itself when the Namespace schema certainly accepts it; undefined otherwise. */
export function plainNamespace(value: unknown): RawNamespace | undefined {
  return isPlainObject(value) && isMetadata(value.metadata) ? (value as RawNamespace) : undefined;
}

/** A plain object (as JSON and YAML give) with no `__proto__` key. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) && !Object.hasOwn(value, '__proto__');
}

// Written out field by field rather than composed from closures: this runs for every policy of
// a large input, and straight code is about twice as fast as the composed checks were.

export function isAbsent(value: unknown): boolean {
  return value === undefined || value === null;
}

/** zod's `z.number()`: a finite number (JSON's `1e400` is Infinity, which zod rejects). */
export function isNumber(value: unknown): boolean {
  return typeof value === 'number' && Number.isFinite(value);
}

/** How many own keys an object has (strict objects: no key beyond the schema's). */
function keyCount(value: Record<string, unknown>): number {
  let keys = 0;
  for (const key in value) if (Object.hasOwn(value, key)) keys++;
  return keys;
}

/** `.nullish()` of `z.array(z.string())`. */
export function isStringList(value: unknown): boolean {
  if (isAbsent(value)) return true;
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) if (typeof value[i] !== 'string') return false;
  return true;
}

/** `.nullish()` of `z.record(z.string(), z.string())`. */
function isStringMap(value: unknown): boolean {
  if (isAbsent(value)) return true;
  if (!isPlainObject(value)) return false;
  for (const key in value) if (Object.hasOwn(value, key) && typeof value[key] !== 'string') return false;
  return true;
}

function isRequirement(value: unknown): boolean {
  if (!isPlainObject(value)) return false;
  const { key, operator, values } = value;
  if (typeof key !== 'string' || typeof operator !== 'string' || !isStringList(values)) return false;
  return keyCount(value) === 2 + (values === undefined ? 0 : 1);
}

/** `.nullish()` of the label selector. */
export function isLabelSelector(value: unknown): boolean {
  if (isAbsent(value)) return true;
  if (!isPlainObject(value)) return false;
  const { matchLabels, matchExpressions } = value;
  if (!isStringMap(matchLabels)) return false;
  if (!isAbsent(matchExpressions)) {
    if (!Array.isArray(matchExpressions)) return false;
    for (let i = 0; i < matchExpressions.length; i++) if (!isRequirement(matchExpressions[i])) return false;
  }
  return keyCount(value) === present(matchLabels) + present(matchExpressions);
}

/** 1 when a field is in the object (a key holding undefined does not come out of JSON or YAML). */
function present(value: unknown): number {
  return value === undefined ? 0 : 1;
}

function isIpBlock(value: unknown): boolean {
  if (isAbsent(value)) return true;
  if (!isPlainObject(value)) return false;
  const { cidr, except } = value;
  return typeof cidr === 'string' && isStringList(except) && keyCount(value) === 1 + present(except);
}

function isPeer(value: unknown): boolean {
  if (!isPlainObject(value)) return false;
  const { podSelector, namespaceSelector, ipBlock } = value;
  return (
    isLabelSelector(podSelector) &&
    isLabelSelector(namespaceSelector) &&
    isIpBlock(ipBlock) &&
    keyCount(value) === present(podSelector) + present(namespaceSelector) + present(ipBlock)
  );
}

function isPort(value: unknown): boolean {
  if (!isPlainObject(value)) return false;
  const { protocol, port, endPort } = value;
  return (
    (isAbsent(protocol) || typeof protocol === 'string') &&
    (isAbsent(port) || isNumber(port) || typeof port === 'string') &&
    (isAbsent(endPort) || isNumber(endPort)) &&
    keyCount(value) === present(protocol) + present(port) + present(endPort)
  );
}

/** A rule: its peers under `peersField` (`from` or `to`) and its ports. */
function isRule(value: unknown, peersField: 'from' | 'to'): boolean {
  if (!isPlainObject(value)) return false;
  const peers = value[peersField];
  const { ports } = value;
  if (!isAbsent(peers)) {
    if (!Array.isArray(peers)) return false;
    for (let i = 0; i < peers.length; i++) if (!isPeer(peers[i])) return false;
  }
  if (!isAbsent(ports)) {
    if (!Array.isArray(ports)) return false;
    for (let i = 0; i < ports.length; i++) if (!isPort(ports[i])) return false;
  }
  return keyCount(value) === present(peers) + present(ports);
}

function isRules(value: unknown, peersField: 'from' | 'to'): boolean {
  if (isAbsent(value)) return true;
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) if (!isRule(value[i], peersField)) return false;
  return true;
}

function isSpec(value: unknown): boolean {
  if (isAbsent(value)) return true;
  if (!isPlainObject(value)) return false;
  const { podSelector, policyTypes, ingress, egress } = value;
  return (
    isLabelSelector(podSelector) &&
    isStringList(policyTypes) &&
    isRules(ingress, 'from') &&
    isRules(egress, 'to') &&
    keyCount(value) === present(podSelector) + present(policyTypes) + present(ingress) + present(egress)
  );
}

function isOwnerReference(value: unknown): boolean {
  if (!isPlainObject(value)) return false;
  const { kind, name, controller } = value;
  return (
    (isAbsent(kind) || typeof kind === 'string') &&
    (isAbsent(name) || typeof name === 'string') &&
    (isAbsent(controller) || typeof controller === 'boolean')
  );
}

/** The metadata schema is loose: keys beyond its own are kept, as zod keeps them. */
export function isMetadata(value: unknown): boolean {
  if (!isPlainObject(value)) return false;
  const { name, namespace, labels, annotations, ownerReferences } = value;
  if (typeof name !== 'string' || !(isAbsent(namespace) || typeof namespace === 'string')) return false;
  if (!isStringMap(labels) || !isStringMap(annotations)) return false;
  if (isAbsent(ownerReferences)) return true;
  if (!Array.isArray(ownerReferences)) return false;
  for (let i = 0; i < ownerReferences.length; i++) if (!isOwnerReference(ownerReferences[i])) return false;
  return true;
}

function isNetworkPolicy(value: unknown): boolean {
  if (!isPlainObject(value)) return false;
  const { apiVersion, kind, metadata, spec, status } = value;
  return (
    typeof apiVersion === 'string' &&
    kind === 'NetworkPolicy' &&
    isMetadata(metadata) &&
    isSpec(spec) &&
    // `status` is `z.unknown().optional()`: anything.
    keyCount(value) === 3 + present(spec) + present(status)
  );
}

/** `.nullish()` of a string. */
function isOptionalString(value: unknown): boolean {
  return isAbsent(value) || typeof value === 'string';
}

/** `.nullish()` of `z.array(item)`. */
function isOptionalList(value: unknown, item: (value: unknown) => boolean): boolean {
  if (isAbsent(value)) return true;
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) if (!item(value[i])) return false;
  return true;
}

function isContainerPort(value: unknown): boolean {
  return (
    isPlainObject(value) &&
    isOptionalString(value.name) &&
    isNumber(value.containerPort) &&
    isOptionalString(value.protocol)
  );
}

function isContainer(value: unknown): boolean {
  return (
    isPlainObject(value) &&
    isOptionalList(value.ports, isContainerPort) &&
    isOptionalString(value.restartPolicy)
  );
}

function isPodSpec(value: unknown): boolean {
  if (isAbsent(value)) return true;
  if (!isPlainObject(value)) return false;
  const { containers, initContainers, hostNetwork, nodeName, serviceAccountName, serviceAccount } = value;
  return (
    isOptionalList(containers, isContainer) &&
    isOptionalList(initContainers, isContainer) &&
    (isAbsent(hostNetwork) || typeof hostNetwork === 'boolean') &&
    isOptionalString(nodeName) &&
    isOptionalString(serviceAccountName) &&
    isOptionalString(serviceAccount)
  );
}

function isIpEntry(value: unknown): boolean {
  return isPlainObject(value) && typeof value.ip === 'string';
}

function isPodStatus(value: unknown): boolean {
  if (isAbsent(value)) return true;
  if (!isPlainObject(value)) return false;
  return (
    isOptionalString(value.phase) &&
    isOptionalString(value.podIP) &&
    isOptionalList(value.podIPs, isIpEntry) &&
    isOptionalString(value.hostIP) &&
    isOptionalList(value.hostIPs, isIpEntry)
  );
}

/** The Pod schema and everything in it are loose: keys beyond their own are kept. */
function isPod(value: unknown): boolean {
  return (
    isPlainObject(value) && isMetadata(value.metadata) && isPodSpec(value.spec) && isPodStatus(value.status)
  );
}
