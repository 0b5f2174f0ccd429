/**
 * ServiceAccounts: only their labels matter, which Calico's service-account selectors read
 * (`serviceAccountSelector`, `serviceAccounts.selector`).
 */
import type { DecodeContext } from './decode-context.ts';
import { decodeLabels } from './decode-labels.ts';
import { decodeMetadataName } from './decode-metadata.ts';
import { namespaceSchema } from './schemas.ts';
import { decodeReportingAll } from './prune-mistyped.ts';
import type { DecodedObject } from './types.ts';

const READING = { schema: namespaceSchema };

export function decodeServiceAccount(ctx: DecodeContext): DecodedObject | undefined {
  return decodeReportingAll(ctx, ctx.raw.value, READING, (raw) => {
    const { name, namespace } = decodeMetadataName(ctx, raw.metadata, true);
    const labels = decodeLabels(ctx, raw.metadata.labels, ['metadata', 'labels']);
    return ctx.failed ? undefined : { kind: 'ServiceAccount', namespace, name, labels };
  });
}
