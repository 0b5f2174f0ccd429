/**
 * Reads a cluster once, for the analysis commands: every kind Palisade analyses, in the given
 * namespaces or all of them, paginated, kinds listed concurrently. Objects come back raw, each
 * named by its API path (diagnostics have no file and line for them); a missing CRD is an info.
 */
import { makeDiagnostic, type Diagnostic } from '../model/diagnostics.ts';
import { discover } from './discovery.ts';
import { KubeApiError } from './errors.ts';
import { listAll } from './list.ts';
import { ALL_RESOURCES, collectionPath, objectPath } from './resources.ts';
import type { KubeApi, NamespaceScope, ProgressListener, RawApiObject, ServedResource } from './types.ts';

/** An object read from the API and the path that names it. */
export interface ApiObject {
  readonly value: RawApiObject;
  readonly path: string;
}

interface ClusterRead {
  readonly objects: readonly ApiObject[];
  readonly diagnostics: readonly Diagnostic[];
}

export async function readCluster(
  api: KubeApi,
  scope: NamespaceScope,
  options: { onProgress?: ProgressListener; pageSize?: number } = {},
): Promise<ClusterRead> {
  const { served, absent } = await discover(api, ALL_RESOURCES);
  const diagnostics: Diagnostic[] = absent.map((resource) =>
    makeDiagnostic(
      'API_RESOURCE_ABSENT',
      `the cluster does not serve ${resource.kind} (${resource.group}): its CRD is not installed, so there are none`,
      { file: api.target.server, object: resource.kind },
    ),
  );
  let done = 0;
  const remaining = new Map<string, number>();
  const report = (): void => {
    let rest = 0;
    for (const n of remaining.values()) rest += n;
    options.onProgress?.(done, done + rest);
  };
  const perKind = await Promise.all(
    served.map(async (s) => {
      const objects: ApiObject[] = [];
      for (const path of pathsFor(s, scope)) {
        if (path.kind === 'get') {
          const object = await getIfExists(api, path.path);
          if (object) objects.push({ value: object, path: path.path });
          continue;
        }
        let key = `${s.resource.kind} ${path.path}`;
        await listAll(
          api,
          path.path,
          {
            onPage(items, remainingItemCount) {
              for (const value of items) objects.push({ value, path: pathOf(s, value) });
              done += items.length;
              remaining.set(key, remainingItemCount ?? 0);
              report();
            },
            onRestart() {
              done -= objects.length;
              objects.length = 0;
              key += "'";
            },
          },
          options.pageSize ? { pageSize: options.pageSize } : {},
        ).catch((error: unknown) => {
          // A CRD deleted between discovery and the list, or one version short of a kind: absent.
          if (error instanceof KubeApiError && error.kind === 'not-found' && s.resource.optional) {
            diagnostics.push(
              makeDiagnostic(
                'API_RESOURCE_ABSENT',
                `the cluster does not serve ${s.resource.kind}: there are none`,
                {
                  file: api.target.server,
                  object: s.resource.kind,
                },
              ),
            );
            return;
          }
          throw error;
        });
      }
      return objects;
    }),
  );
  return { objects: perKind.flat(), diagnostics };
}

/** What to request for a kind: one list, one list per namespace, or one GET per namespace object. */
function pathsFor(s: ServedResource, scope: NamespaceScope): { kind: 'list' | 'get'; path: string }[] {
  if (scope.all) return [{ kind: 'list', path: collectionPath(s) }];
  if (s.resource.kind === 'Namespace') {
    return scope.namespaces.map((ns) => ({ kind: 'get', path: objectPath(s, undefined, ns) }));
  }
  if (!s.resource.namespaced) return [{ kind: 'list', path: collectionPath(s) }];
  return scope.namespaces.map((ns) => ({ kind: 'list', path: collectionPath(s, ns) }));
}

async function getIfExists(api: KubeApi, path: string): Promise<RawApiObject | undefined> {
  try {
    return await api.get(path);
  } catch (error) {
    if (error instanceof KubeApiError && error.kind === 'not-found') return undefined;
    throw error;
  }
}

function pathOf(s: ServedResource, value: RawApiObject): string {
  const metadata = (value.metadata ?? {}) as { name?: unknown; namespace?: unknown };
  const name = typeof metadata.name === 'string' ? metadata.name : '?';
  const namespace = typeof metadata.namespace === 'string' ? metadata.namespace : undefined;
  return objectPath(s, namespace, name);
}
