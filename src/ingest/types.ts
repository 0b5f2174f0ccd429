/**
 * Contracts of the ingest layer: raw documents with a way back to their source position, decoded
 * objects, and what a load returns. (Live sources feed the pipeline with its own `PipelineChange`s.)
 */
import type {
  Cluster,
  ClusterPolicy,
  Labels,
  TierSpec,
  NodeInfo,
  Diagnostic,
  Namespace,
  Endpoint,
  NetworkPolicy,
  IngressRoute,
  Service,
  SourceLocation,
  WorkloadRef,
} from '../model/types.ts';

export type FieldPath = readonly (string | number)[];

/** Maps a field path inside a parsed document back to a line and column in its file. */
export interface Locator {
  /** Position of the value at `path`, or of its nearest existing ancestor. */
  valueAt(path: FieldPath): SourceLocation;
  /** Position of the key naming the last element of `path` (for unknown fields). */
  keyAt(path: FieldPath): SourceLocation;
  /**
   * The source of the number at `path` when it was written otherwise than as a decimal integer
   * (`80.0`, `0x50`, `8e1`: YAML reads them as numbers, the API server takes no such integer);
   * undefined for plain integers, non-numbers, and sources without text.
   */
  numberFormAt?(path: FieldPath): string | undefined;
  /**
   * Position of character `index` of the string at `path` (a selector's mistake), when the
   * string is written on one line without escapes before it; else undefined.
   */
  stringCharAt?(path: FieldPath, index: number): SourceLocation | undefined;
}

/** One Kubernetes object as parsed, before decoding. */
export interface RawObject {
  readonly value: unknown;
  readonly file: string;
  /** Where the object sits in its document (`[]`, or `['items', 3]` inside a List). */
  readonly basePath: FieldPath;
  readonly locator: Locator;
}

/** A decoded, validated object, ready to be assembled into a Cluster. */
export type DecodedObject =
  | { readonly kind: 'Namespace'; readonly namespace: Namespace }
  | {
      readonly kind: 'Endpoint';
      readonly endpoint: Omit<Endpoint, 'id'>;
      readonly hostIps: readonly string[];
      /** The object's controller (`metadata.ownerReferences`), followed to find its workload. */
      readonly owner?: WorkloadRef;
    }
  | { readonly kind: 'NetworkPolicy'; readonly policy: NetworkPolicy }
  | { readonly kind: 'ClusterPolicy'; readonly policy: ClusterPolicy }
  /** A Cilium policy with `specs`: one ordered policy per rule of it. */
  | { readonly kind: 'ClusterPolicies'; readonly policies: readonly ClusterPolicy[] }
  /** A Calico Tier. */
  | { readonly kind: 'Tier'; readonly tier: TierSpec }
  /** A ServiceAccount: its labels are what Calico's service-account selectors read. */
  | {
      readonly kind: 'ServiceAccount';
      readonly namespace: string;
      readonly name: string;
      readonly labels: Labels;
    }
  | { readonly kind: 'Service'; readonly service: Service }
  /** An Ingress or OpenShift Route: what the ingress controller forwards to. */
  | { readonly kind: 'Ingress'; readonly ingress: IngressRoute }
  | { readonly kind: 'Node'; readonly node: NodeInfo }
  /**
   * A policy marked staged (`STAGED_ANNOTATION`): decoded like any other, but wrapped so that
   * nothing that enforces or answers about the cluster can take it for an enforced one.
   */
  | { readonly kind: 'Staged'; readonly object: StageableObject };

/** The decoded kinds a staged mark applies to. */
export type StageableObject = Extract<DecodedObject, { readonly kind: 'NetworkPolicy' | 'ClusterPolicy' }>;

/** An input file's text, with the name diagnostics should use for it. */
export interface InputFile {
  readonly name: string;
  readonly text: string;
  /**
   * Found by walking a directory rather than named: a file with no Kubernetes object in it
   * (no document with a `kind`) is then skipped with an info, not reported as broken.
   */
  readonly discovered?: true;
  /**
   * A piece of a file cut to be decoded in two threads (pod-run.ts): what is judged of a file
   * whole (empty, no Kubernetes object) was judged of the file, not of its pieces.
   */
  readonly piece?: true;
}

export interface LoadResult {
  readonly cluster: Cluster;
  readonly diagnostics: readonly Diagnostic[];
  /** Objects as decoded, in input order (used by `convert`). */
  readonly rawObjects: readonly RawObject[];
}
