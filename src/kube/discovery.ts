/**
 * Which version of each kind the cluster serves. Core kinds are always there; the cluster policy
 * CRDs may be missing (then the kind is absent: an info, not an error) or served only in a
 * version Palisade does not know (then it is read anyway, and the decoders report every object
 * with API_VERSION_UNKNOWN, as for a file). Discovery asks the group for its versions and each
 * version for the resources it serves, as kubectl's discovery does.
 */
import { KubeApiError } from './errors.ts';
import type { KubeApi, ResourceKind, ServedResource } from './types.ts';

interface Discovered {
  readonly served: readonly ServedResource[];
  /** Optional kinds the cluster does not serve. */
  readonly absent: readonly ResourceKind[];
}

/** A group's versions, preferred first, each with the plurals it serves. */
type GroupVersions = { version: string; plurals: Set<string> }[];

export async function discover(api: KubeApi, resources: readonly ResourceKind[]): Promise<Discovered> {
  const served: ServedResource[] = [];
  const absent: ResourceKind[] = [];
  const groups = new Map<string, Promise<GroupVersions>>();
  for (const resource of resources) {
    if (!resource.optional) {
      served.push({ resource, version: resource.versions[0]! });
      continue;
    }
    if (!groups.has(resource.group)) groups.set(resource.group, groupVersions(api, resource.group));
    const serving = (await groups.get(resource.group)!).filter((v) => v.plurals.has(resource.plural));
    const version =
      resource.versions.find((known) => serving.some((v) => v.version === known)) ?? serving[0]?.version;
    if (version === undefined) absent.push(resource);
    else served.push({ resource, version });
  }
  return { served, absent };
}

async function groupVersions(api: KubeApi, group: string): Promise<GroupVersions> {
  const body = await getOrAbsent(api, `/apis/${group}`);
  if (!body) return [];
  const { versions, preferredVersion } = body as {
    versions?: { version?: unknown }[];
    preferredVersion?: { version?: unknown };
  };
  const names = (versions ?? []).map((v) => v.version).filter((v): v is string => typeof v === 'string');
  const preferred = preferredVersion?.version;
  names.sort((a, b) => (a === preferred ? -1 : b === preferred ? 1 : 0));
  return Promise.all(
    names.map(async (version) => {
      const list = (await getOrAbsent(api, `/apis/${group}/${version}`)) as
        { resources?: { name?: unknown }[] } | undefined;
      const plurals = new Set(
        (list?.resources ?? []).map((r) => r.name).filter((n): n is string => typeof n === 'string'),
      );
      return { version, plurals };
    }),
  );
}

async function getOrAbsent(api: KubeApi, path: string): Promise<unknown> {
  try {
    return await api.get(path);
  } catch (error) {
    if (error instanceof KubeApiError && error.kind === 'not-found') return undefined;
    throw error;
  }
}
