/**
 * The manifest pipeline in one call: read paths, parse documents, decode objects, assemble the
 * cluster, and add the diagnostics that depend on the chosen semantics.
 *
 * Decoded objects are not copied between threads: tried (each worker reading, parsing and decoding
 * its share of the files), copying them back to the main thread by structured clone took about as
 * long as decoding them (docs/BENCHMARKS.md). What is done instead, without the parsed objects
 * kept: one large file at a time is decoded in a worker while this thread decodes the others, and
 * only a file of pods comes back, in a compact form (decode-offload.ts, compact-pods.ts).
 */
import { makeDiagnostic, sortDiagnostics, type Diagnostic } from '../model/diagnostics.ts';
import type { RejectedPolicy, Semantics, UnevaluatedPolicy } from '../model/types.ts';
import { buildCluster, type IdentifiedObject } from './build-cluster.ts';
import { decodeObject, type DecodeOptions, type DecodeOutcome } from './decode-object.ts';
import { readDocuments } from './parse-documents.ts';
import { visitInputs } from './read-inputs.ts';
import { DiagnosticSink } from './diagnostic-sink.ts';
import { DecodeOffload, type OffloadResult } from './decode-offload.ts';
import { podRunPieces } from './pod-run.ts';
import { semanticsDiagnostics } from './semantics-diagnostics.ts';
import type { InputFile, LoadResult, RawObject } from './types.ts';

export interface LoadClusterOptions extends DecodeOptions {
  /** Default v1; `deferred` adds no semantics diagnostics (the caller decides, see `semanticsDiagnostics`). */
  readonly semantics?: Semantics | 'deferred';
  readonly maxFileBytes?: number;
  /** See read-inputs.ts: undefined when standard input holds more than `maxBytes`. */
  readonly readStdin?: (maxBytes: number) => Promise<string | undefined>;
  /** How the command takes a pod written after -f by mistake (read-inputs.ts). */
  readonly podOption?: (name: string) => string;
  /**
   * Keep every parsed object in `rawObjects` (default true: `convert`, `lint`, `serve` and the
   * lab read them). False parses and decodes each file as soon as it is read and drops its text
   * and parsed documents before the next (`rawObjects` is then empty), with the same cluster and
   * diagnostics: shape (a) ×1 from files peaks at 1.42 GB instead of 1.84 GB.
   */
  readonly keepRawObjects?: boolean;
  /**
   * Without `keepRawObjects`: files from this many characters on may be decoded in a worker
   * thread while the main thread decodes the others (decode-offload.ts); Infinity never does.
   */
  readonly offloadBytes?: number;
  /**
   * Progress of what takes long on large inputs: each file read and decoded (`reading NAME`, how
   * far into it), then `building the cluster`. Called now and then, from this thread.
   */
  readonly onProgress?: (phase: string, done: number, total: number) => void;
}

export async function loadCluster(
  paths: readonly string[],
  options: LoadClusterOptions = {},
): Promise<LoadResult> {
  const keep = options.keepRawObjects ?? true;
  const decoding = new Decoding(
    options,
    keep ? undefined : DecodeOffload.create(options.offloadBytes),
    options.onProgress,
  );
  const { diagnostics } = await visitInputs(
    paths,
    {
      ...(options.maxFileBytes !== undefined ? { maxFileBytes: options.maxFileBytes } : {}),
      ...(options.readStdin ? { readStdin: options.readStdin } : {}),
      ...(options.podOption ? { podOption: options.podOption } : {}),
    },
    (file) => decoding.addFile(file, keep),
  );
  options.onProgress?.('decoding', 0, 0);
  await decoding.settle();
  const result = decoding.finish(options.semantics ?? 'v1');
  return { ...result, diagnostics: sortDiagnostics([...diagnostics, ...result.diagnostics]) };
}

/** Same as loadCluster for texts already in memory (tests, benchmarks, stdin). */
export function loadFromTexts(
  files: readonly InputFile[],
  semantics: Semantics | 'deferred' = 'v1',
  options: DecodeOptions = {},
): LoadResult {
  const decoding = new Decoding(options);
  for (const file of files) decoding.addFile(file, true);
  return decoding.finish(semantics);
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
  const decoding = new Decoding();
  decoding.addDiagnostics(diagnostics);
  for (const raw of rawObjects) decoding.addObject(raw, true);
  return decoding.finish(semantics);
}

/**
 * Same as loadFromObjects for objects that each carry their own locator (objects read from the
 * Kubernetes API, named by their API path): validated and decoded exactly as files are.
 */
export function loadFromRawObjects(
  rawObjects: readonly RawObject[],
  semantics: Semantics = 'v1',
): LoadResult {
  const decoding = new Decoding();
  for (const raw of rawObjects) decoding.addObject(raw, true);
  return decoding.finish(semantics);
}

/**
 * Objects decoded as they come — whole files or single raw objects — then assembled into the
 * cluster with the semantics' diagnostics. Each object is decoded when added, so a caller that
 * does not keep the raw objects holds only what was decoded.
 */
class Decoding {
  // Bounded: a List of a million broken items keeps a thousand diagnostics per code and file,
  // not millions. The bound is per file and code, so files added one at a time keep the same.
  private readonly diagnostics = new DiagnosticSink();
  private readonly decoded: IdentifiedObject[] = [];
  private readonly rejected: RejectedPolicy[] = [];
  private readonly rawObjects: RawObject[] = [];
  /** A large file waiting to be handed to the worker, and how much has followed it since. */
  private held:
    | { readonly file: InputFile; readonly decodedAt: number; readonly rejectedAt: number; since: number }
    | undefined;
  /**
   * Files handed to the worker, and pieces of a file cut around its pods (pod-run.ts) decoded
   * here (`result` undefined), with where their objects go among the others'.
   */
  private readonly offloaded: {
    file: InputFile | undefined;
    readonly decodedAt: number;
    readonly rejectedAt: number;
    readonly result?: Promise<OffloadResult>;
    apart?: { readonly decoded: IdentifiedObject[]; readonly rejected: RejectedPolicy[] };
  }[] = [];

  constructor(
    private readonly options: DecodeOptions = {},
    private readonly offload?: DecodeOffload,
    private readonly onProgress?: (phase: string, done: number, total: number) => void,
  ) {}

  addDiagnostics(diagnostics: readonly Diagnostic[]): void {
    this.diagnostics.addAll(diagnostics);
  }

  /**
   * Parses and decodes one file; its parsed documents are kept only when `keep`. Each object is
   * decoded as soon as it is parsed, so that without `keep` its parsed document dies young; the
   * outcomes are held until the file is read whole, since the file may still be read another
   * way or skipped (readDocuments' `discard`), and then added in the file's order.
   */
  addFile(file: InputFile, keep: boolean, here = false): void {
    if (!keep && !here && this.offload) {
      // A large file is held until files enough for this thread to decode meanwhile follow it
      // (a quarter of its size); one left held at the end is decoded here, so a lone large
      // file never waits on a thread.
      if (this.held) {
        this.held.since += file.text.length;
        if (this.held.since >= this.held.file.text.length / 4) this.sendHeld();
      }
      if (!this.held && this.offload.takes(file)) {
        this.held = { file, decodedAt: this.decoded.length, rejectedAt: this.rejected.length, since: 0 };
        this.offload.warm();
        return;
      }
    }
    // The parsed object is staged only when kept: holding it would keep it alive to the end.
    const staged: { raw: RawObject | undefined; outcome: DecodeOutcome | Diagnostic }[] = [];
    let diagnostics: Diagnostic[];
    const report = this.onProgress;
    const phase = `reading ${file.name}`;
    report?.(phase, 0, 1000);
    try {
      diagnostics = readDocuments(file, {
        object: (raw) => staged.push({ raw: keep ? raw : undefined, outcome: this.decode(raw) }),
        discard: () => (staged.length = 0),
        ...(report
          ? { progress: (fraction: number) => report(phase, Math.round(fraction * 1000), 1000) }
          : {}),
      });
    } catch (error) {
      // Parsing reports what is wrong with the input as diagnostics; a throw is a fault of ours.
      // Said as such, with the file named, and the other files are still read.
      this.diagnostics.add(processingFailed(`cannot parse ${file.name}`, error, { file: file.name }));
      return;
    }
    this.diagnostics.addAll(diagnostics);
    // One at a time: a spread into push passes every element as an argument, and a file of
    // 125,000 objects overflows the stack.
    for (const { raw, outcome } of staged) this.adopt(raw, outcome);
  }

  /**
   * Waits for the files handed to the worker and puts their objects where the file's order puts
   * them; a file the worker gave back is decoded here, as any other.
   */
  async settle(): Promise<void> {
    // A file still held had no other file to overlap with: its pods, if it holds many among other
    // objects, are decoded by the worker while this thread decodes the rest; else decoded here.
    const held = this.held;
    this.held = undefined;
    if (held && !this.handOver(held, true)) this.offloaded.push({ ...held });
    if (this.offloaded.length === 0) {
      await this.offload?.close();
      return;
    }
    const decoded = this.decoded.splice(0);
    const rejected = this.rejected.splice(0);
    // The pieces decoded here first, while the worker decodes its own; each is put in its place below.
    for (const entry of this.offloaded)
      if (!entry.result && entry.file) {
        this.addFile(entry.file, false, true);
        entry.apart = { decoded: this.decoded.splice(0), rejected: this.rejected.splice(0) };
        entry.file = undefined;
      }
    let d = 0;
    let r = 0;
    for (const entry of this.offloaded) {
      for (; d < entry.decodedAt; d++) this.decoded.push(decoded[d] as IdentifiedObject);
      for (; r < entry.rejectedAt; r++) this.rejected.push(rejected[r] as RejectedPolicy);
      if (entry.apart) {
        for (const object of entry.apart.decoded) this.decoded.push(object);
        for (const policy of entry.apart.rejected) this.rejected.push(policy);
        continue;
      }
      const pods = await entry.result;
      if (pods) for (const pod of pods) this.decoded.push(pod);
      else if (entry.file) this.addFile(entry.file, false, true);
      entry.file = undefined;
    }
    for (; d < decoded.length; d++) this.decoded.push(decoded[d] as IdentifiedObject);
    for (; r < rejected.length; r++) this.rejected.push(rejected[r] as RejectedPolicy);
    this.offloaded.length = 0;
    await this.offload?.close();
  }

  /** Hands the held file to the worker, keeping its place among the others. */
  private sendHeld(): void {
    const held = this.held;
    if (!held || !this.offload) return;
    this.held = undefined;
    this.handOver(held, false);
  }

  /**
   * Hands a large file to the worker in its place among the others: whole, or — when it holds
   * many pods among other objects — its run of pods, the pieces before and after it left to this
   * thread (pod-run.ts). With `onlyCut`, a file that is not cut is not handed over (false).
   */
  private handOver(
    held: { readonly file: InputFile; readonly decodedAt: number; readonly rejectedAt: number },
    onlyCut: boolean,
  ): boolean {
    if (!this.offload) return false;
    const at = { decodedAt: held.decodedAt, rejectedAt: held.rejectedAt };
    const pieces = podRunPieces(held.file, this.offload.minBytes / 2);
    if (!pieces) {
      if (onlyCut) return false;
      this.offloaded.push({ file: held.file, ...at, result: this.offload.decode(held.file, this.options) });
      return true;
    }
    if (pieces.head) this.offloaded.push({ file: pieces.head, ...at });
    this.offloaded.push({ file: pieces.pods, ...at, result: this.offload.decode(pieces.pods, this.options) });
    if (pieces.tail) this.offloaded.push({ file: pieces.tail, ...at });
    return true;
  }

  addObject(raw: RawObject, keep: boolean): void {
    this.adopt(keep ? raw : undefined, this.decode(raw));
  }

  /** The object decoded, or what says that our decoder failed on it. */
  private decode(raw: RawObject): DecodeOutcome | Diagnostic {
    try {
      return decodeObject(raw, this.options);
    } catch (error) {
      // As for a file: one object that our decoder fails on never stops the others.
      return processingFailed('cannot decode this object', error, raw.locator.valueAt(raw.basePath));
    }
  }

  /** Adds a decoded object (and the parsed one, when it is kept). */
  private adopt(raw: RawObject | undefined, outcome: DecodeOutcome | Diagnostic): void {
    if (raw) this.rawObjects.push(raw);
    if ('code' in outcome) {
      this.diagnostics.add(outcome);
      return;
    }
    this.diagnostics.addAll(outcome.diagnostics);
    if (outcome.object && outcome.identity)
      this.decoded.push({ identity: outcome.identity, object: outcome.object });
    else if (outcome.rejected) this.rejected.push(outcome.rejected);
  }

  finish(semantics: Semantics | 'deferred'): LoadResult {
    this.onProgress?.('building the cluster', 0, 0);
    const built = buildCluster(this.decoded, this.rejected);
    this.diagnostics.addAll(built.diagnostics);
    if (semantics !== 'deferred') this.diagnostics.addAll(semanticsDiagnostics(built.cluster, semantics));
    const diagnostics = sortDiagnostics(this.diagnostics.list());
    const unevaluated = notEvaluated(diagnostics);
    return {
      cluster: unevaluated.length > 0 ? { ...built.cluster, unevaluated } : built.cluster,
      diagnostics,
      rawObjects: this.rawObjects,
    };
  }
}

/**
 * What the input holds that answers leave out, from the diagnostics that say so: other engines'
 * policy objects, and Calico's and Cilium's policies and rules Palisade cannot analyse.
 */
function notEvaluated(diagnostics: readonly Diagnostic[]): UnevaluatedPolicy[] {
  return diagnostics
    .filter((d) => NOT_EVALUATED_CODES.has(d.code))
    .map((d) => ({
      object: d.object ?? d.file,
      reason: d.message,
      location: { file: d.file, line: d.line, column: d.column },
      ...(d.code === 'RULE_NOT_ANALYSED' ? { part: true as const } : {}),
    }));
}

const NOT_EVALUATED_CODES: ReadonlySet<string> = new Set([
  'POLICY_KIND_NOT_EVALUATED',
  'POLICY_NOT_ANALYSED',
  'RULE_NOT_ANALYSED',
]);

/** A fault of ours while reading input: what failed, the error's own words, and where. */
function processingFailed(
  what: string,
  error: unknown,
  where: Parameters<typeof makeDiagnostic>[2],
): Diagnostic {
  const reason = error instanceof Error ? error.message : String(error);
  return makeDiagnostic(
    'PROCESSING_FAILED',
    `${what}: ${reason} (a fault in Palisade, not in the input: please report it); skipped`,
    where,
  );
}
