/**
 * Hand-written checks that a raw Calico NetworkPolicy or GlobalNetworkPolicy, or a Cilium
 * CiliumNetworkPolicy or CiliumClusterwideNetworkPolicy, has a structure its strict zod schema
 * (calico-schemas.ts, cilium-schemas.ts) accepts — as decode-shapes.ts does for Kubernetes'
 * NetworkPolicy. These schemas have no defaults and no transforms: what zod gives back for an
 * accepted object is an equal copy, so the object itself is decoded and the parse is skipped
 * (10,000 Calico or Cilium policies spent 0.15–0.3 s in it). A check only ever answers
 * "certainly accepted": anything it does not vouch for — an unknown field, a wrong type, a field
 * it leaves to zod (Cilium's L7 and TLS parts, ICMP rules) — goes through zod as before, so every
 * diagnostic comes from where it always did. test/ingest/engine-shapes.test.ts holds them to zod.
 */
import type { RawCalicoPolicy } from './calico-schemas.ts';
import type { RawCiliumPolicy } from './cilium-schemas.ts';
import {
  isAbsent,
  isLabelSelector,
  isMetadata,
  isNumber,
  isPlainObject,
  isStringList,
} from './decode-shapes.ts';

type Check = (value: unknown) => boolean;

/**
 * A strict object: a plain object whose every own key is one of `fields`, each value passing its
 * check, with every `required` key present. Keys are looked up in a Map (an object's `toString`
 * or `constructor` would be found on its prototype).
 */
function strictObject(fields: Record<string, Check>, required: readonly string[] = []): Check {
  const checks = new Map(Object.entries(fields));
  return (value) => {
    if (!isPlainObject(value)) return false;
    for (const key in value) {
      if (!Object.hasOwn(value, key)) continue;
      const check = checks.get(key);
      if (!check || !check(value[key])) return false;
    }
    for (const key of required) if (value[key] === undefined) return false;
    return true;
  };
}

const nullish =
  (check: Check): Check =>
  (value) =>
    isAbsent(value) || check(value);
const isString: Check = (value) => typeof value === 'string';
const optionalString = nullish(isString);
const optionalNumber = nullish(isNumber);
const optionalBoolean = nullish((value) => typeof value === 'boolean');
const isNumberOrString: Check = (value) => isNumber(value) || typeof value === 'string';
const listOf =
  (item: Check): Check =>
  (value) => {
    if (isAbsent(value)) return true;
    if (!Array.isArray(value)) return false;
    for (let i = 0; i < value.length; i++) if (!item(value[i])) return false;
    return true;
  };
/** A label selector where one is required (not nullish): inside a list. */
const isSelector: Check = (value) => isPlainObject(value) && isLabelSelector(value);
/** `z.looseObject({})`: any object (JSON's: a plain one). */
const optionalLoose = nullish(isPlainObject);
/** `status: z.unknown().optional()`: anything. */
const anything: Check = () => true;

// Calico (calico-schemas.ts). ICMP matches are left to zod: rare, and reported by the decoder.
const calicoEntityRule = strictObject({
  nets: isStringList,
  notNets: isStringList,
  selector: optionalString,
  notSelector: optionalString,
  namespaceSelector: optionalString,
  ports: listOf(isNumberOrString),
  notPorts: listOf(isNumberOrString),
  serviceAccounts: nullish(strictObject({ names: isStringList, selector: optionalString })),
  services: nullish(strictObject({ name: optionalString, namespace: optionalString })),
});
const calicoRule = strictObject(
  {
    action: isString,
    protocol: nullish(isNumberOrString),
    notProtocol: nullish(isNumberOrString),
    ipVersion: optionalNumber,
    source: nullish(calicoEntityRule),
    destination: nullish(calicoEntityRule),
    http: optionalLoose,
    metadata: optionalLoose,
  },
  ['action'],
);
const calicoPolicySpec = {
  order: optionalNumber,
  tier: optionalString,
  selector: optionalString,
  types: isStringList,
  ingress: listOf(calicoRule),
  egress: listOf(calicoRule),
  serviceAccountSelector: optionalString,
  performanceHints: isStringList,
};
const calicoTop = (kind: string, spec: Check): Check =>
  strictObject(
    {
      apiVersion: isString,
      kind: (value) => value === kind,
      metadata: isMetadata,
      spec: nullish(spec),
      status: anything,
    },
    ['apiVersion', 'kind', 'metadata'],
  );
const CALICO: Readonly<Record<'NetworkPolicy' | 'GlobalNetworkPolicy', Check>> = {
  NetworkPolicy: calicoTop('NetworkPolicy', strictObject(calicoPolicySpec)),
  GlobalNetworkPolicy: calicoTop(
    'GlobalNetworkPolicy',
    strictObject({
      ...calicoPolicySpec,
      namespaceSelector: optionalString,
      doNotTrack: optionalBoolean,
      preDNAT: optionalBoolean,
      applyOnForward: optionalBoolean,
    }),
  ),
};

/** `value` itself when the strict schema of this Calico policy kind certainly accepts it. */
export function plainCalicoPolicy(
  value: unknown,
  kind: 'NetworkPolicy' | 'GlobalNetworkPolicy',
): RawCalicoPolicy | undefined {
  return CALICO[kind](value) ? (value as RawCalicoPolicy) : undefined;
}

// Cilium (cilium-schemas.ts). L7 rules, TLS, listeners, authentication, ICMP rules, groups,
// services and FQDNs are left to zod: the decoder reports them, and they are rare.
const ciliumCidrRule = strictObject({
  cidr: optionalString,
  cidrGroupRef: optionalString,
  cidrGroupSelector: isLabelSelector,
  except: isStringList,
});
const ciliumPorts = listOf(
  strictObject({ port: nullish(isNumberOrString), endPort: optionalNumber, protocol: optionalString }),
);
const ciliumPortRule = strictObject({ ports: ciliumPorts });
const ciliumPeers = (prefix: 'from' | 'to'): Record<string, Check> => ({
  [`${prefix}Endpoints`]: listOf(isSelector),
  [`${prefix}Requires`]: listOf(isSelector),
  [`${prefix}CIDR`]: isStringList,
  [`${prefix}CIDRSet`]: listOf(ciliumCidrRule),
  [`${prefix}Entities`]: isStringList,
  [`${prefix}Nodes`]: listOf(isSelector),
});
const ciliumIngress = strictObject({ ...ciliumPeers('from'), toPorts: listOf(ciliumPortRule) });
const ciliumEgress = strictObject({ ...ciliumPeers('to'), toPorts: listOf(ciliumPortRule) });
const ciliumRule = strictObject({
  endpointSelector: isLabelSelector,
  nodeSelector: isLabelSelector,
  ingress: listOf(ciliumIngress),
  ingressDeny: listOf(ciliumIngress),
  egress: listOf(ciliumEgress),
  egressDeny: listOf(ciliumEgress),
  enableDefaultDeny: nullish(strictObject({ ingress: optionalBoolean, egress: optionalBoolean })),
  description: optionalString,
});
const ciliumTop = (kind: string): Check =>
  strictObject(
    {
      apiVersion: isString,
      kind: (value) => value === kind,
      metadata: isMetadata,
      spec: nullish(ciliumRule),
      specs: listOf(ciliumRule),
      status: anything,
    },
    ['apiVersion', 'kind', 'metadata'],
  );
const CILIUM: Readonly<Record<'CiliumNetworkPolicy' | 'CiliumClusterwideNetworkPolicy', Check>> = {
  CiliumNetworkPolicy: ciliumTop('CiliumNetworkPolicy'),
  CiliumClusterwideNetworkPolicy: ciliumTop('CiliumClusterwideNetworkPolicy'),
};

/** `value` itself when the strict schema of this Cilium policy kind certainly accepts it. */
export function plainCiliumPolicy(
  value: unknown,
  kind: 'CiliumNetworkPolicy' | 'CiliumClusterwideNetworkPolicy',
): RawCiliumPolicy | undefined {
  return CILIUM[kind](value) ? (value as RawCiliumPolicy) : undefined;
}
