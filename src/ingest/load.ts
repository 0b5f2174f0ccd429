/**
 * The manifest pipeline in one call: read paths, parse documents, decode objects, assemble the
 * cluster, and add the diagnostics that depend on the chosen semantics.
 */
import { makeDiagnostic, sortDiagnostics, type Diagnostic } from '../model/diagnostics.ts';
import { LEGACY_ISOLATION_ANNOTATION, type Cluster, type Semantics } from '../model/types.ts';
import { buildCluster, type IdentifiedObject } from './build-cluster.ts';
import { decodeObject } from './decode-object.ts';
import { parseDocuments } from './parse-documents.ts';
import { readInputs } from './read-inputs.ts';
import type { InputFile, LoadResult, RawObject } from './types.ts';

export interface LoadClusterOptions {
  readonly semantics?: Semantics;
  readonly maxFileBytes?: number;
  readonly readStdin?: () => Promise<string>;
}

export async function loadCluster(
  paths: readonly string[],
  options: LoadClusterOptions = {},
): Promise<LoadResult> {
  const { files, diagnostics } = await readInputs(paths, {
    ...(options.maxFileBytes !== undefined ? { maxFileBytes: options.maxFileBytes } : {}),
    ...(options.readStdin ? { readStdin: options.readStdin } : {}),
  });
  const result = loadFromTexts(files, options.semantics ?? 'v1');
  return { ...result, diagnostics: sortDiagnostics([...diagnostics, ...result.diagnostics]) };
}

/** Same as loadCluster for texts already in memory (tests, benchmarks, stdin). */
export function loadFromTexts(files: readonly InputFile[], semantics: Semantics = 'v1'): LoadResult {
  const diagnostics: Diagnostic[] = [];
  const rawObjects: RawObject[] = [];
  for (const file of files) {
    const parsed = parseDocuments(file);
    // One at a time: a spread into push passes every element as an argument, and a file of
    // 125,000 objects overflows the stack.
    for (const d of parsed.diagnostics) diagnostics.push(d);
    for (const object of parsed.objects) rawObjects.push(object);
  }
  return decodeAll(rawObjects, diagnostics, semantics);
}

/**
 * Same as loadFromTexts for objects already parsed (generated clusters, API lists): validated
 * and decoded the same way; diagnostics name `source` and the object's index, without lines.
 */
export function loadFromObjects(
  objects: readonly unknown[],
  source = '<objects>',
  semantics: Semantics = 'v1',
): LoadResult {
  const rawObjects: RawObject[] = [];
  const diagnostics: Diagnostic[] = [];
  const nowhere = { file: source, line: 0, column: 0 };
  const locator = { valueAt: () => nowhere, keyAt: () => nowhere };
  objects.forEach((value, index) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      diagnostics.push(
        makeDiagnostic('NOT_AN_OBJECT', `object ${index} is not a Kubernetes object`, nowhere),
      );
      return;
    }
    rawObjects.push({ value, file: source, basePath: [], locator });
  });
  return decodeAll(rawObjects, diagnostics, semantics);
}

/**
 * Same as loadFromObjects for objects that each carry their own locator (objects read from the
 * Kubernetes API, named by their API path): validated and decoded exactly as files are.
 */
export function loadFromRawObjects(
  rawObjects: readonly RawObject[],
  semantics: Semantics = 'v1',
): LoadResult {
  return decodeAll([...rawObjects], [], semantics);
}

/** Decodes every raw object, assembles the cluster, and adds the semantics' diagnostics. */
function decodeAll(rawObjects: RawObject[], diagnostics: Diagnostic[], semantics: Semantics): LoadResult {
  const decoded: IdentifiedObject[] = [];
  for (const raw of rawObjects) {
    const outcome = decodeObject(raw);
    for (const d of outcome.diagnostics) diagnostics.push(d);
    if (outcome.object && outcome.identity)
      decoded.push({ identity: outcome.identity, object: outcome.object });
  }
  const built = buildCluster(decoded);
  for (const d of built.diagnostics) diagnostics.push(d);
  for (const d of semanticsDiagnostics(built.cluster, semantics)) diagnostics.push(d);
  return { cluster: built.cluster, diagnostics: sortDiagnostics(diagnostics), rawObjects };
}

function semanticsDiagnostics(cluster: Cluster, semantics: Semantics): Diagnostic[] {
  const result: Diagnostic[] = [];
  if (semantics === 'v1') {
    for (const ns of cluster.namespaces.values()) {
      if (!ns.legacyIngressIsolation) continue;
      result.push(
        makeDiagnostic(
          'LEGACY_ANNOTATION_IGNORED',
          `namespace ${ns.name} sets ${LEGACY_ISOLATION_ANNOTATION} (DefaultDeny), which v1 semantics ignore; use --semantics v1beta1-proposal, or 'palisade convert --to v1' to turn it into a default-deny policy`,
          { ...(ns.location ?? { file: '<input>' }), object: `Namespace ${ns.name}` },
        ),
      );
    }
    return result;
  }
  for (const policy of cluster.policies) {
    if (!policy.affectsEgress) continue;
    result.push(
      makeDiagnostic(
        'LEGACY_EGRESS_IGNORED',
        `NetworkPolicy ${policy.namespace}/${policy.name} has egress rules, which the v1beta1 proposal does not have; they are ignored`,
        {
          ...(policy.location ?? { file: '<input>' }),
          object: `NetworkPolicy ${policy.namespace}/${policy.name}`,
        },
      ),
    );
  }
  return result;
}
