/**
 * Structural schemas for CiliumNetworkPolicy and CiliumClusterwideNetworkPolicy (cilium.io/v2),
 * after Cilium's policy API (pkg/policy/api: Rule, IngressRule, IngressDenyRule, EgressRule,
 * EgressDenyRule, PortRule, CIDRRule). Strict where Palisade reads the fields, so a typo is
 * reported as on every policy kind; the parts it does not analyse (L7 rules, TLS, listeners,
 * FQDN and group selectors, authentication) are read loosely and reported by the decoder.
 */
import * as z from 'zod';
import { labelSelectorSchema, metadataSchema } from './schemas.ts';

function schemas() {
  const object = z.strictObject;
  const selector = labelSelectorSchema;
  const loose = z.looseObject({});
  const cidrRule = object({
    cidr: z.string().nullish(),
    cidrGroupRef: z.string().nullish(),
    cidrGroupSelector: selector.nullish(),
    except: z.array(z.string()).nullish(),
  });
  const portProtocol = object({
    port: z.union([z.string(), z.number()]).nullish(),
    endPort: z.number().nullish(),
    protocol: z.string().nullish(),
  });
  const portRule = object({
    ports: z.array(portProtocol).nullish(),
    rules: loose.nullish(),
    terminatingTLS: loose.nullish(),
    originatingTLS: loose.nullish(),
    serverNames: z.array(z.string()).nullish(),
    listener: loose.nullish(),
  });
  const portDenyRule = object({ ports: z.array(portProtocol).nullish() });
  const icmpRule = object({
    fields: z
      .array(object({ family: z.string().nullish(), type: z.union([z.string(), z.number()]) }))
      .nullish(),
  });
  const peers = (prefix: 'from' | 'to') => ({
    [`${prefix}Endpoints`]: z.array(selector).nullish(),
    [`${prefix}Requires`]: z.array(selector).nullish(),
    [`${prefix}CIDR`]: z.array(z.string()).nullish(),
    [`${prefix}CIDRSet`]: z.array(cidrRule).nullish(),
    [`${prefix}Entities`]: z.array(z.string()).nullish(),
    [`${prefix}Groups`]: z.array(loose).nullish(),
    [`${prefix}Nodes`]: z.array(selector).nullish(),
    icmps: z.array(icmpRule).nullish(),
  });
  const ingress = object({
    ...peers('from'),
    toPorts: z.array(portRule).nullish(),
    authentication: loose.nullish(),
  });
  const ingressDeny = object({ ...peers('from'), toPorts: z.array(portDenyRule).nullish() });
  const egress = object({
    ...peers('to'),
    toServices: z.array(loose).nullish(),
    toFQDNs: z.array(loose).nullish(),
    toPorts: z.array(portRule).nullish(),
    authentication: loose.nullish(),
  });
  const egressDeny = object({
    ...peers('to'),
    toServices: z.array(loose).nullish(),
    toPorts: z.array(portDenyRule).nullish(),
  });
  const rule = object({
    endpointSelector: selector.nullish(),
    nodeSelector: selector.nullish(),
    ingress: z.array(ingress).nullish(),
    ingressDeny: z.array(ingressDeny).nullish(),
    egress: z.array(egress).nullish(),
    egressDeny: z.array(egressDeny).nullish(),
    enableDefaultDeny: object({ ingress: z.boolean().nullish(), egress: z.boolean().nullish() }).nullish(),
    labels: z.array(loose).nullish(),
    description: z.string().nullish(),
    log: loose.nullish(),
  });
  const top = (kind: string) =>
    object({
      apiVersion: z.string(),
      kind: z.literal(kind),
      metadata: metadataSchema,
      spec: rule.nullish(),
      specs: z.array(rule).nullish(),
      status: z.unknown().optional(),
    });
  return {
    rule,
    cnp: top('CiliumNetworkPolicy'),
    ccnp: top('CiliumClusterwideNetworkPolicy'),
    cidrGroup: object({
      apiVersion: z.string(),
      kind: z.literal('CiliumCIDRGroup'),
      metadata: metadataSchema,
      spec: object({ externalCIDRs: z.array(z.string()).nullish() }).nullish(),
      status: z.unknown().optional(),
    }),
  };
}

export const ciliumSchemas = schemas();

export type RawCiliumRule = z.infer<typeof ciliumSchemas.rule>;
export type RawCiliumPolicy = z.infer<typeof ciliumSchemas.cnp>;
