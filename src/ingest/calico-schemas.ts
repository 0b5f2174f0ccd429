/**
 * Structural schemas for Calico's policy objects — NetworkPolicy, GlobalNetworkPolicy, Tier and
 * Profile of projectcalico.org/v3 (and the same specs as crd.projectcalico.org/v1 stores them) —
 * after libcalico-go's api types (api/pkg/apis/projectcalico/v3). Strict, like every policy kind
 * Palisade reads: a field the API does not have is reported (kubectl's strict validation
 * rejects it), with a "did you mean" hint. Fields Palisade knows but does not analyse (HTTP
 * matches, rule metadata, performance hints) are read loosely and reported by the decoder.
 */
import * as z from 'zod';
import { metadataSchema } from './schemas.ts';

function schemas() {
  const object = z.strictObject;
  const portOrName = z.union([z.number(), z.string()]);
  const icmp = object({ type: z.number().nullish(), code: z.number().nullish() });
  const entityRule = object({
    nets: z.array(z.string()).nullish(),
    notNets: z.array(z.string()).nullish(),
    selector: z.string().nullish(),
    notSelector: z.string().nullish(),
    namespaceSelector: z.string().nullish(),
    ports: z.array(portOrName).nullish(),
    notPorts: z.array(portOrName).nullish(),
    serviceAccounts: object({
      names: z.array(z.string()).nullish(),
      selector: z.string().nullish(),
    }).nullish(),
    services: object({ name: z.string().nullish(), namespace: z.string().nullish() }).nullish(),
  });
  const rule = object({
    action: z.string(),
    protocol: portOrName.nullish(),
    notProtocol: portOrName.nullish(),
    icmp: icmp.nullish(),
    notICMP: icmp.nullish(),
    ipVersion: z.number().nullish(),
    source: entityRule.nullish(),
    destination: entityRule.nullish(),
    http: z.looseObject({}).nullish(),
    metadata: z.looseObject({}).nullish(),
  });
  const policySpec = {
    order: z.number().nullish(),
    tier: z.string().nullish(),
    selector: z.string().nullish(),
    types: z.array(z.string()).nullish(),
    ingress: z.array(rule).nullish(),
    egress: z.array(rule).nullish(),
    serviceAccountSelector: z.string().nullish(),
    performanceHints: z.array(z.string()).nullish(),
  };
  const top = <S extends z.ZodType>(kind: string, spec: S) =>
    object({
      apiVersion: z.string(),
      kind: z.literal(kind),
      metadata: metadataSchema,
      spec: spec.nullish(),
      status: z.unknown().optional(),
    });
  return {
    rule,
    entityRule,
    networkPolicy: top('NetworkPolicy', object(policySpec)),
    globalNetworkPolicy: top(
      'GlobalNetworkPolicy',
      object({
        ...policySpec,
        namespaceSelector: z.string().nullish(),
        doNotTrack: z.boolean().nullish(),
        preDNAT: z.boolean().nullish(),
        applyOnForward: z.boolean().nullish(),
      }),
    ),
    tier: top('Tier', object({ order: z.number().nullish(), defaultAction: z.string().nullish() })),
    profile: top(
      'Profile',
      object({
        ingress: z.array(rule).nullish(),
        egress: z.array(rule).nullish(),
        labelsToApply: z.record(z.string(), z.string()).nullish(),
      }),
    ),
  };
}

export const calicoSchemas = schemas();

type Parsed<S extends z.ZodType> = z.infer<S>;
export type RawCalicoRule = Parsed<typeof calicoSchemas.rule>;
export type RawEntityRule = Parsed<typeof calicoSchemas.entityRule>;
export type RawCalicoPolicy = Parsed<typeof calicoSchemas.globalNetworkPolicy>;
export type RawCalicoTier = Parsed<typeof calicoSchemas.tier>;
export type RawCalicoProfile = Parsed<typeof calicoSchemas.profile>;
