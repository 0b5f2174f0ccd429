/**
 * A live cluster's changes, as "something changed" calls — for `serve`, which reads the cluster
 * again a moment after each: one informer per kind Palisade reads (per namespace with -n), each
 * listing and then watching with the API server's list/watch protocol (bookmarks, resumption,
 * relisting after `410 Gone`). The informers' first lists are the state, not changes; once
 * every one is complete there is one more reading, so that nothing changed between the first
 * reading and the watches is missed.
 */
import type { InformerHandler } from '../kube/index.ts';
import { ClusterAccessError, kubeconfigRequest, type ClusterInput } from './cluster-input.ts';
import type { CliIo } from './io.ts';

/** Starts watching the cluster; resolves with the function that stops every watch. */
export async function watchClusterChanges(
  input: ClusterInput,
  io: CliIo,
  changed: () => void,
): Promise<() => void> {
  const kube = await import('../kube/index.ts');
  try {
    const api = await kube.connect(kubeconfigRequest(input, io));
    const { served } = await kube.discover(api, kube.ALL_RESOURCES);
    const { scope } = input;
    const informers = served.flatMap((s) => {
      // As the reading: namespaced kinds per namespace with -n; the rest cluster-wide.
      const namespaces: (string | undefined)[] =
        scope.all || !s.resource.namespaced ? [undefined] : [...scope.namespaces];
      return namespaces.map((namespace) => {
        let listed = false;
        const handler: InformerHandler = {
          listStart: () => undefined,
          listObjects: () => undefined,
          listAbort: () => undefined,
          // A list after the first (the watch's version was gone) may hold anything new.
          listDone: () => {
            if (listed) changed();
            listed = true;
          },
          upsert: () => changed(),
          remove: () => changed(),
          progress: () => undefined,
        };
        return new kube.Informer(api, s, namespace, handler);
      });
    });
    for (const informer of informers) void informer.run().catch(() => undefined);
    void Promise.all(informers.map((i) => i.synced)).then(changed);
    return () => {
      for (const informer of informers) informer.stop();
    };
  } catch (error) {
    if (error instanceof kube.KubeApiError) throw new ClusterAccessError(error.message);
    throw error;
  }
}
