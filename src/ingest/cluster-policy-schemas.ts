/**
 * Structural schemas for AdminNetworkPolicy, BaselineAdminNetworkPolicy (v1alpha1) and
 * ClusterNetworkPolicy (v1alpha2). Strict like NetworkPolicy's — except peers, which stay open:
 * the API says a peer with no field the implementation knows comes from a newer API version and
 * must fail closed, so an unknown peer field is a decision for the decoder, not a parse error.
 */
import * as z from 'zod';
import { labelSelectorSchema, metadataSchema } from './schemas.ts';

function schemas() {
  const object = z.strictObject;
  const selector = labelSelectorSchema;
  const subject = object({
    namespaces: selector.nullish(),
    pods: object({ namespaceSelector: selector.nullish(), podSelector: selector.nullish() }).nullish(),
  });
  // Peers: every field read as unknown first; the decoder tells the v0.1.1 shapes from the current ones.
  const peer = z.looseObject({});
  const anpPort = object({
    portNumber: object({ protocol: z.string().nullish(), port: z.number() }).nullish(),
    namedPort: z.string().nullish(),
    portRange: object({ protocol: z.string().nullish(), start: z.number(), end: z.number() }).nullish(),
  });
  const anpIngress = object({
    name: z.string().nullish(),
    action: z.string(),
    from: z.array(peer),
    ports: z.array(anpPort).nullish(),
  });
  const anpEgress = object({
    name: z.string().nullish(),
    action: z.string(),
    to: z.array(peer),
    ports: z.array(anpPort).nullish(),
  });
  const anpSpec = object({
    priority: z.number(),
    subject,
    ingress: z.array(anpIngress).nullish(),
    egress: z.array(anpEgress).nullish(),
  });
  const banpSpec = object({
    subject,
    ingress: z.array(anpIngress).nullish(),
    egress: z.array(anpEgress).nullish(),
  });
  const destinationPort = object({
    number: z.number().nullish(),
    range: object({ start: z.number(), end: z.number() }).nullish(),
  });
  const protocolMatch = object({ destinationPort: destinationPort.nullish() });
  const cnpProtocol = object({
    tcp: protocolMatch.nullish(),
    udp: protocolMatch.nullish(),
    sctp: protocolMatch.nullish(),
    destinationNamedPort: z.string().nullish(),
  });
  const cnpIngress = object({
    name: z.string().nullish(),
    action: z.string(),
    from: z.array(peer),
    protocols: z.array(cnpProtocol).nullish(),
  });
  const cnpEgress = object({
    name: z.string().nullish(),
    action: z.string(),
    to: z.array(peer),
    protocols: z.array(cnpProtocol).nullish(),
  });
  const cnpSpec = object({
    tier: z.string(),
    priority: z.number(),
    subject,
    ingress: z.array(cnpIngress).nullish(),
    egress: z.array(cnpEgress).nullish(),
  });
  const top = <S extends z.ZodType>(kind: string, spec: S) =>
    object({
      apiVersion: z.string(),
      kind: z.literal(kind),
      metadata: metadataSchema,
      spec,
      status: z.unknown().optional(),
    });
  return {
    anp: top('AdminNetworkPolicy', anpSpec),
    banp: top('BaselineAdminNetworkPolicy', banpSpec),
    cnp: top('ClusterNetworkPolicy', cnpSpec),
  };
}

export const clusterPolicySchemas = schemas();

/** Peer field shapes, parsed by the decoder once it knows which API version's shape it has. */
const selector = labelSelectorSchema;
export const namespaceSetSchema = z.strictObject({
  namespaceSelector: selector.nullish(),
  sameLabels: z.array(z.string()).nullish(),
  notSameLabels: z.array(z.string()).nullish(),
});
export const namespacedPodSchema = z.strictObject({
  namespaceSelector: selector.nullish(),
  podSelector: selector.nullish(),
});
export const legacyNamespacedPodSchema = z.strictObject({
  namespaces: namespaceSetSchema,
  podSelector: selector.nullish(),
});
export const stringListSchema = z.array(z.string());

type Parsed<S extends z.ZodType> = z.infer<S>;
type RawAnp = Parsed<typeof clusterPolicySchemas.anp>;
type RawCnp = Parsed<typeof clusterPolicySchemas.cnp>;
export type RawSubject = RawAnp['spec']['subject'];
export type RawAnpPort = NonNullable<NonNullable<RawAnp['spec']['ingress']>[number]['ports']>[number];
export type RawCnpProtocol = NonNullable<NonNullable<RawCnp['spec']['ingress']>[number]['protocols']>[number];
