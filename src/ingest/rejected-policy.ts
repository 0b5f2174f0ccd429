/**
 * What can still be read of a NetworkPolicy dropped as invalid: its name, the pods it selects and
 * the directions it would isolate. `check` and `explain` say so when such a policy would have
 * selected the endpoint they answer for (issue 19 §1.5): the verdict ignores it — the API server
 * would have refused it — but a user who wrote it expects it to apply.
 */
import type { RejectedPolicy } from '../model/types.ts';
import { DecodeContext } from './decode-context.ts';
import { decodeSelector } from './decode-labels.ts';
import { labelSelectorSchema } from './schemas.ts';

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The rejected policy as far as the raw object says, read leniently (its problems were already
 * reported); undefined when it has no usable name.
 */
export function rejectedPolicy(ctx: DecodeContext): RejectedPolicy | undefined {
  const value = ctx.raw.value;
  if (!isRecord(value)) return undefined;
  const metadata = isRecord(value.metadata) ? value.metadata : {};
  if (typeof metadata.name !== 'string' || metadata.name === '') return undefined;
  const namespace = typeof metadata.namespace === 'string' ? metadata.namespace : ctx.defaultNamespace;
  const spec = isRecord(value.spec) ? value.spec : {};
  const error = ctx.diagnostics.find((d) => d.severity === 'error');
  const types = Array.isArray(spec.policyTypes) ? spec.policyTypes : undefined;
  const hasEgressRules = Array.isArray(spec.egress) && spec.egress.length > 0;
  return {
    namespace,
    name: metadata.name,
    podSelector: lenientSelector(ctx, spec.podSelector),
    affectsIngress: types ? types.includes('Ingress') : true,
    affectsEgress: types ? types.includes('Egress') : hasEgressRules,
    problem: error ? `${error.path ? `${error.path}: ` : ''}${error.message}` : 'invalid',
    // Where the problem is (the diagnostic's place), else where the object starts.
    location: error
      ? { file: error.file, line: error.line, column: error.column }
      : ctx.raw.locator.valueAt(ctx.raw.basePath),
  };
}

/** The pod selector when it is valid on its own (absent means all pods); otherwise undefined. */
function lenientSelector(ctx: DecodeContext, raw: unknown): RejectedPolicy['podSelector'] {
  const parsed = labelSelectorSchema.nullish().safeParse(raw);
  if (!parsed.success) return undefined;
  // A scratch context: the selector's problems, if any, were reported with the policy's.
  const scratch = new DecodeContext(ctx.raw, ctx.objectName, ctx.defaultNamespace);
  const selector = decodeSelector(scratch, parsed.data, ['spec', 'podSelector']);
  return scratch.failed ? undefined : selector;
}
