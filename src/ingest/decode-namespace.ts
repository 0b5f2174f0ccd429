/**
 * Namespaces: labels (plus the `kubernetes.io/metadata.name` label the API server always sets)
 * and the seed proposal's ingress-isolation annotation.
 */
import { LEGACY_ISOLATION_ANNOTATION, NAMESPACE_NAME_LABEL, type Namespace } from '../model/types.ts';
import type { DecodeContext } from './decode-context.ts';
import { decodeLabels } from './decode-labels.ts';
import { decodeMetadataName } from './decode-metadata.ts';
import { namespaceSchema } from './schemas.ts';
import { plainNamespace } from './decode-shapes.ts';
import { decodeReportingAll } from './prune-mistyped.ts';
import type { z } from 'zod';

const NAMESPACE_READING = { schema: namespaceSchema };

export function decodeNamespace(ctx: DecodeContext): Namespace | undefined {
  // A well-formed namespace is read as it is: the schema would give back an equal copy.
  const plain = plainNamespace(ctx.raw.value);
  if (plain) return decodeParsed(ctx, plain);
  // A mistyped field does not hide the rest (a bad name beside labels that are not a mapping).
  return decodeReportingAll(ctx, ctx.raw.value, NAMESPACE_READING, (raw) => decodeParsed(ctx, raw));
}

function decodeParsed(
  ctx: DecodeContext,
  { metadata }: z.output<typeof namespaceSchema>,
): Namespace | undefined {
  const { name } = decodeMetadataName(ctx, metadata, false);
  const labels = decodeLabels(ctx, metadata.labels, ['metadata', 'labels']);
  const annotation = metadata.annotations?.[LEGACY_ISOLATION_ANNOTATION];
  const isolation = annotation === undefined ? undefined : decodeIsolation(ctx, annotation);
  if (ctx.failed) return undefined;
  // Copied key by key, not spread with a computed key (which gives each namespace's labels their
  // own hidden class): label maps with the same keys share one.
  const effective: Record<string, string> = {};
  for (const key of Object.keys(labels)) effective[key] = labels[key] as string;
  effective[NAMESPACE_NAME_LABEL] = name;
  return {
    name,
    labels: effective,
    implicit: false,
    ...(isolation ? { legacyIngressIsolation: isolation } : {}),
    location: ctx.raw.locator.valueAt(ctx.raw.basePath),
  };
}

/** `{"ingress": {"isolation": "DefaultDeny"}}` → DefaultDeny; anything else is reported and ignored. */
function decodeIsolation(ctx: DecodeContext, text: string): 'DefaultDeny' | undefined {
  const path = ['metadata', 'annotations', LEGACY_ISOLATION_ANNOTATION];
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    ctx.report(
      'LEGACY_ANNOTATION_INVALID',
      `annotation ${LEGACY_ISOLATION_ANNOTATION} is not valid JSON`,
      path,
    );
    return undefined;
  }
  const ingress = (value as { ingress?: { isolation?: unknown } } | null)?.ingress;
  if (ingress === undefined) return undefined;
  if (ingress?.isolation === 'DefaultDeny') return 'DefaultDeny';
  if (ingress?.isolation === undefined) return undefined;
  ctx.report(
    'LEGACY_ANNOTATION_INVALID',
    `annotation ${LEGACY_ISOLATION_ANNOTATION}: ingress.isolation must be "DefaultDeny", not ${JSON.stringify(ingress.isolation)}`,
    path,
  );
  return undefined;
}
