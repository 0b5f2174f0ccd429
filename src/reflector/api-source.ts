/**
 * The Kubernetes API as the reflector's source: one informer per kind (per namespace with -n;
 * cluster-scoped kinds always whole), each resuming from the resourceVersion the writer recorded
 * for it. `once` lists every stream a single time and stops (a one-shot reconcile).
 */
import {
  discover,
  Informer,
  listAll,
  listPages,
  KubeApiError,
  POLICY_RESOURCES,
  WORKLOAD_RESOURCES,
  collectionPath,
  type ListOptions,
} from '../kube/index.ts';
import type { KubeApi, NamespaceScope, ServedResource } from '../kube/types.ts';
import type { PageEncoder } from './encode-pool.ts';
import type { EncodedPage, SourceSink, StreamId } from './types.ts';

interface ApiSourceOptions {
  readonly scope: NamespaceScope;
  /** Where each stream resumes from (the writer's recorded versions). */
  readonly resumeFrom: (stream: StreamId) => string | undefined;
  readonly pageSize?: number;
  /** Told about kinds the cluster does not serve, and failures being retried. */
  readonly log: (line: string) => void;
  /** Each stream's contact with the API: the failure being retried, or undefined once it answers again. */
  readonly health?: (stream: string, failure: string | undefined) => void;
  /** Parses and encodes list pages off the main thread (when the API gives pages as text). */
  readonly encoder?: PageEncoder;
}

interface RunningSource {
  /** Resolves when every stream holds the whole state once. */
  readonly synced: Promise<void>;
  stop(): void;
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
        retrying: (error, wait) => {
          options.health?.(describeStream(stream), error.message);
          options.log(`${describeStream(stream)}: ${error.message}; retrying in ${Math.round(wait)} ms`);
        },
        connected: () => options.health?.(describeStream(stream), undefined),
      },
      {
        ...(resumeFrom !== undefined ? { resumeFrom } : {}),
        ...(options.pageSize ? { pageSize: options.pageSize } : {}),
        ...(encodedLister(api, options.encoder, sink, stream) ?? {}),
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
  options: Pick<ApiSourceOptions, 'scope' | 'pageSize' | 'encoder'>,
): Promise<void> {
  await Promise.all(
    streamsOf(served, options.scope).map(async ({ served: s, stream }) => {
      sink.listStart(stream);
      const path = collectionPath(s, stream.namespace);
      const restart = (): void => {
        sink.listAbort(stream);
        sink.listStart(stream);
      };
      const listOptions = options.pageSize ? { pageSize: options.pageSize } : {};
      const encoded = encodedLister(api, options.encoder, sink, stream);
      try {
        const rv = encoded
          ? await encoded.lister(path, restart, listOptions)
          : await listAll(
              api,
              path,
              { onPage: (items) => sink.listObjects(stream, items), onRestart: restart },
              listOptions,
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

/**
 * A lister whose pages are fetched as text and parsed and encoded by the encoder's workers, then
 * handed to the sink encoded; undefined when the API or the sink cannot take that path.
 */
function encodedLister(
  api: KubeApi,
  encoder: PageEncoder | undefined,
  sink: SourceSink,
  stream: StreamId,
): { lister: (path: string, onRestart: () => void, options: ListOptions) => Promise<string> } | undefined {
  const listText = api.listText?.bind(api);
  const listEncoded = sink.listEncoded?.bind(sink);
  if (!encoder || !listText || !listEncoded) return undefined;
  return {
    lister: (path, onRestart, options) =>
      listPages<EncodedPage>(
        async (p, o, signal) => encoder.encode(await listText(p, o, signal), p),
        path,
        { onPage: (page) => listEncoded(stream, page.items), onRestart },
        options,
      ),
  };
}

function describeStream(stream: StreamId): string {
  return stream.namespace === undefined ? stream.kind : `${stream.kind} in ${stream.namespace}`;
}
