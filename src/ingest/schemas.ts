/**
 * Structural schemas (zod) for the raw objects Palisade reads. NetworkPolicy specs are strict:
 * an unknown field there is almost always a typo that silently changes the policy's meaning, and
 * kubectl's default strict validation rejects it. Pods and workloads are loose: `kubectl get`
 * output carries many fields Palisade has no use for.
 */
import * as z from 'zod';

const stringMap = z.record(z.string(), z.string());

/** Kept loose: an owner reference Palisade cannot follow is ignored, not an error. */
const ownerReferenceSchema = z.looseObject({
  kind: z.string().nullish(),
  name: z.string().nullish(),
  controller: z.boolean().nullish(),
});
export type RawOwnerReference = z.infer<typeof ownerReferenceSchema>;

export const metadataSchema = z.looseObject({
  name: z.string(),
  namespace: z.string().nullish(),
  labels: stringMap.nullish(),
  annotations: stringMap.nullish(),
  ownerReferences: z.array(ownerReferenceSchema).nullish(),
});
export type RawMetadata = z.infer<typeof metadataSchema>;

/**
 * NetworkPolicy schemas are strict: an unknown field is an issue (decodeReportingAll reports it,
 * then checks the rest without it, so every problem in the object is reported at once).
 */
function networkPolicySchemas() {
  const object = z.strictObject;
  const labelSelector = object({
    matchLabels: stringMap.nullish(),
    matchExpressions: z
      .array(object({ key: z.string(), operator: z.string(), values: z.array(z.string()).nullish() }))
      .nullish(),
  });
  const peer = object({
    podSelector: labelSelector.nullish(),
    namespaceSelector: labelSelector.nullish(),
    ipBlock: object({ cidr: z.string(), except: z.array(z.string()).nullish() }).nullish(),
  });
  const ports = z
    .array(
      object({
        protocol: z.string().nullish(),
        port: z.union([z.number(), z.string()]).nullish(),
        endPort: z.number().nullish(),
      }),
    )
    .nullish();
  const networkPolicy = object({
    apiVersion: z.string(),
    kind: z.literal('NetworkPolicy'),
    metadata: metadataSchema,
    spec: object({
      podSelector: labelSelector.nullish(),
      policyTypes: z.array(z.string()).nullish(),
      ingress: z.array(object({ from: z.array(peer).nullish(), ports })).nullish(),
      egress: z.array(object({ to: z.array(peer).nullish(), ports })).nullish(),
    }).nullish(),
    status: z.unknown().optional(),
  });
  return { labelSelector, peer, ports, networkPolicy };
}

const strictSchemas = networkPolicySchemas();
export const labelSelectorSchema = strictSchemas.labelSelector;
export const networkPolicySchema = strictSchemas.networkPolicy;

export type RawLabelSelector = z.infer<typeof labelSelectorSchema>;
export type RawPeer = z.infer<typeof strictSchemas.peer>;
export type RawPolicyPort = NonNullable<z.infer<typeof strictSchemas.ports>>[number];

const containerSchema = z.looseObject({
  ports: z
    .array(
      z.looseObject({
        name: z.string().nullish(),
        containerPort: z.number(),
        protocol: z.string().nullish(),
      }),
    )
    .nullish(),
  restartPolicy: z.string().nullish(),
});

const podSpecSchema = z.looseObject({
  containers: z.array(containerSchema).nullish(),
  initContainers: z.array(containerSchema).nullish(),
  hostNetwork: z.boolean().nullish(),
  nodeName: z.string().nullish(),
  serviceAccountName: z.string().nullish(),
  /** The deprecated alias of serviceAccountName, still filled in by the API server. */
  serviceAccount: z.string().nullish(),
});
export type RawPodSpec = z.infer<typeof podSpecSchema>;

const ipEntry = z.looseObject({ ip: z.string() });

export const podSchema = z.looseObject({
  metadata: metadataSchema,
  spec: podSpecSchema.nullish(),
  status: z
    .looseObject({
      phase: z.string().nullish(),
      podIP: z.string().nullish(),
      podIPs: z.array(ipEntry).nullish(),
      hostIP: z.string().nullish(),
      hostIPs: z.array(ipEntry).nullish(),
    })
    .nullish(),
});

const podTemplateSchema = z.looseObject({
  metadata: z.looseObject({ labels: stringMap.nullish() }).nullish(),
  spec: podSpecSchema.nullish(),
});
export type RawPodTemplate = z.infer<typeof podTemplateSchema>;

/** Deployment, StatefulSet, DaemonSet, ReplicaSet, ReplicationController and Job. */
export const workloadSchema = z.looseObject({
  metadata: metadataSchema,
  spec: z.looseObject({ template: podTemplateSchema.nullish() }).nullish(),
});

export const cronJobSchema = z.looseObject({
  metadata: metadataSchema,
  spec: z
    .looseObject({
      jobTemplate: z
        .looseObject({ spec: z.looseObject({ template: podTemplateSchema.nullish() }).nullish() })
        .nullish(),
    })
    .nullish(),
});

export const namespaceSchema = z.looseObject({ metadata: metadataSchema });

export const nodeSchema = z.looseObject({
  metadata: metadataSchema,
  status: z
    .looseObject({
      addresses: z.array(z.looseObject({ type: z.string(), address: z.string() })).nullish(),
    })
    .nullish(),
});
