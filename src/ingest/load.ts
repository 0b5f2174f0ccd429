/**
 * The manifest pipeline in one call: read paths, parse documents, decode objects, assemble the
 * cluster, and add the diagnostics that depend on the chosen semantics.
 */
import { makeDiagnostic, sortDiagnostics, type Diagnostic } from '../model/diagnostics.ts';
import type { RejectedPolicy, Semantics } from '../model/types.ts';
import { buildCluster, type IdentifiedObject } from './build-cluster.ts';
import { decodeObject, type DecodeOptions } from './decode-object.ts';
import { parseDocuments } from './parse-documents.ts';
import { readInputs } from './read-inputs.ts';
import { DiagnosticSink } from './diagnostic-sink.ts';
import { semanticsDiagnostics } from './semantics-diagnostics.ts';
import type { InputFile, LoadResult, RawObject } from './types.ts';

export interface LoadClusterOptions extends DecodeOptions {
  /** Default v1; `deferred` adds no semantics diagnostics (the caller decides, see `semanticsDiagnostics`). */
  readonly semantics?: Semantics | 'deferred';
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
  const result = loadFromTexts(files, options.semantics ?? 'v1', options);
  return { ...result, diagnostics: sortDiagnostics([...diagnostics, ...result.diagnostics]) };
}

/** Same as loadCluster for texts already in memory (tests, benchmarks, stdin). */
export function loadFromTexts(
  files: readonly InputFile[],
  semantics: Semantics | 'deferred' = 'v1',
  options: DecodeOptions = {},
): LoadResult {
  const diagnostics: Diagnostic[] = [];
  const rawObjects: RawObject[] = [];
  for (const file of files) {
    const parsed = parseDocuments(file);
    // One at a time: a spread into push passes every element as an argument, and a file of
    // 125,000 objects overflows the stack.
    for (const d of parsed.diagnostics) diagnostics.push(d);
    for (const object of parsed.objects) rawObjects.push(object);
  }
  return decodeAll(rawObjects, diagnostics, semantics, options);
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
function decodeAll(
  rawObjects: RawObject[],
  parsing: Diagnostic[],
  semantics: Semantics | 'deferred',
  options: DecodeOptions = {},
): LoadResult {
  // Bounded: a List of a million broken items keeps a thousand diagnostics per code, not millions.
  const diagnostics = new DiagnosticSink();
  diagnostics.addAll(parsing);
  const decoded: IdentifiedObject[] = [];
  const rejected: RejectedPolicy[] = [];
  for (const raw of rawObjects) {
    const outcome = decodeObject(raw, options);
    diagnostics.addAll(outcome.diagnostics);
    if (outcome.object && outcome.identity)
      decoded.push({ identity: outcome.identity, object: outcome.object });
    else if (outcome.rejected) rejected.push(outcome.rejected);
  }
  const built = buildCluster(decoded, rejected);
  diagnostics.addAll(built.diagnostics);
  if (semantics !== 'deferred') diagnostics.addAll(semanticsDiagnostics(built.cluster, semantics));
  return { cluster: built.cluster, diagnostics: sortDiagnostics(diagnostics.list()), rawObjects };
}
