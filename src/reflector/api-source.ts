/**
 * The Kubernetes API as the reflector's source: one informer per kind (per namespace with -n;
 * cluster-scoped kinds always whole), each resuming from the resourceVersion the writer recorded
 * for it. `once` lists every stream a single time and stops (a one-shot reconcile).
 */
import {
  discover,
  Informer,
  listAll,
  KubeApiError,
  POLICY_RESOURCES,
  WORKLOAD_RESOURCES,
  collectionPath,
  objectPath,
} from '../kube/index.ts';
import type { KubeApi, NamespaceScope, RawApiObject, ServedResource } from '../kube/types.ts';
import type { SourceSink, StreamId } from './types.ts';

export interface ApiSourceOptions {
  readonly scope: NamespaceScope;
  /** Where each stream resumes from (the writer's recorded versions). */
  readonly resumeFrom: (stream: StreamId) => string | undefined;
  readonly pageSize?: number;
  /** Told about kinds the cluster does not serve, and failures being retried. */
  readonly log: (line: string) => void;
}

export interface RunningSource {
  /** Resolves when every stream holds the whole state once. */
  readonly synced: Promise<void>;
  stop(): void;
}

/** The object's API path, naming it in diagnostics. */
export function apiPathOf(served: readonly ServedResource[]): (object: RawApiObject) => string {
  const byKind = new Map(served.map((s) => [s.resource.kind, s]));
  return (object) => {
    const s = byKind.get(String(object.kind));
    const metadata = (object.metadata ?? {}) as { name?: unknown; namespace?: unknown };
    const name = typeof metadata.name === 'string' ? metadata.name : '?';
    const namespace = typeof metadata.namespace === 'string' ? metadata.namespace : undefined;
    return s ? objectPath(s, namespace, name) : `${String(object.kind)} ${name}`;
  };
}

export async function discoverReflected(
  api: KubeApi,
  log: (line: string) => void,
): Promise<readonly ServedResource[]> {
  const { served, absent } = await discover(api, [...POLICY_RESOURCES, ...WORKLOAD_RESOURCES]);
  for (const resource of absent)
    log(`${resource.kind}: not served by the cluster (CRD not installed); not reflected`);
  return served;
}

function streamsOf(
  served: readonly ServedResource[],
  scope: NamespaceScope,
): { served: ServedResource; stream: StreamId }[] {
  return served.flatMap((s) =>
    scope.all || !s.resource.namespaced
      ? [{ served: s, stream: { kind: s.resource.kind } }]
      : scope.namespaces.map((namespace) => ({ served: s, stream: { kind: s.resource.kind, namespace } })),
  );
}

/** Informers for every stream, feeding `sink` until stopped. */
export function startInformers(
  api: KubeApi,
  served: readonly ServedResource[],
  sink: SourceSink,
  options: ApiSourceOptions,
): RunningSource {
  const informers = streamsOf(served, options.scope).map(({ served: s, stream }) => {
    const resumeFrom = options.resumeFrom(stream);
    const informer = new Informer(
      api,
      s,
      stream.namespace,
      {
        listStart: () => sink.listStart(stream),
        listObjects: (objects) => sink.listObjects(stream, objects),
        listDone: (rv) => sink.listDone(stream, rv),
        listAbort: () => sink.listAbort(stream),
        upsert: (object, rv) => sink.upsert(stream, object, rv),
        remove: (object, rv) => sink.remove(stream, object, rv),
        progress: (rv) => sink.progress(stream, rv),
        retrying: (error, wait) =>
          options.log(`${describeStream(stream)}: ${error.message}; retrying in ${Math.round(wait)} ms`),
      },
      {
        ...(resumeFrom !== undefined ? { resumeFrom } : {}),
        ...(options.pageSize ? { pageSize: options.pageSize } : {}),
      },
    );
    void informer.run();
    return informer;
  });
  return {
    synced: Promise.all(informers.map((i) => i.synced)).then(() => undefined),
    stop: () => informers.forEach((i) => i.stop()),
  };
}

/** Lists every stream once (no watch) into `sink`; API failures reject. */
export async function listOnce(
  api: KubeApi,
  served: readonly ServedResource[],
  sink: SourceSink,
  options: Pick<ApiSourceOptions, 'scope' | 'pageSize'>,
): Promise<void> {
  await Promise.all(
    streamsOf(served, options.scope).map(async ({ served: s, stream }) => {
      sink.listStart(stream);
      try {
        const rv = await listAll(
          api,
          collectionPath(s, stream.namespace),
          {
            onPage: (items) => sink.listObjects(stream, items),
            onRestart: () => {
              sink.listAbort(stream);
              sink.listStart(stream);
            },
          },
          options.pageSize ? { pageSize: options.pageSize } : {},
        );
        sink.listDone(stream, rv);
      } catch (error) {
        sink.listAbort(stream);
        if (error instanceof KubeApiError && error.kind === 'not-found' && s.resource.optional) return;
        throw error;
      }
    }),
  );
}

function describeStream(stream: StreamId): string {
  return stream.namespace === undefined ? stream.kind : `${stream.kind} in ${stream.namespace}`;
}
