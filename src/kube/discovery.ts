/**
 * Which version of each kind the cluster serves. Core kinds are always there; the cluster policy
 * CRDs may be missing (then the kind is absent: an info, not an error) or served only in a
 * version Palisade does not know (then it is read anyway, and the decoders report every object
 * with API_VERSION_UNKNOWN, as for a file).
 */
import { KubeApiError } from './errors.ts';
import type { KubeApi, ResourceKind, ServedResource } from './types.ts';

export interface Discovered {
  readonly served: readonly ServedResource[];
  /** Optional kinds the cluster does not serve. */
  readonly absent: readonly ResourceKind[];
}

export async function discover(api: KubeApi, resources: readonly ResourceKind[]): Promise<Discovered> {
  const served: ServedResource[] = [];
  const absent: ResourceKind[] = [];
  const groups = new Map<string, { versions: string[]; preferred?: string } | undefined>();
  for (const resource of resources) {
    if (!resource.optional) {
      served.push({ resource, version: resource.versions[0]! });
      continue;
    }
    if (!groups.has(resource.group)) groups.set(resource.group, await groupVersions(api, resource.group));
    const group = groups.get(resource.group);
    if (!group) {
      absent.push(resource);
      continue;
    }
    const known = resource.versions.find((v) => group.versions.includes(v));
    served.push({ resource, version: known ?? group.preferred ?? group.versions[0]! });
  }
  return { served, absent };
}

async function groupVersions(
  api: KubeApi,
  group: string,
): Promise<{ versions: string[]; preferred?: string } | undefined> {
  try {
    const body = (await api.get(`/apis/${group}`)) as {
      versions?: { version?: unknown }[];
      preferredVersion?: { version?: unknown };
    };
    const versions = (body.versions ?? []).map((v) => v.version).filter((v): v is string => typeof v === 'string');
    if (versions.length === 0) return undefined;
    const preferred = body.preferredVersion?.version;
    return { versions, ...(typeof preferred === 'string' ? { preferred } : {}) };
  } catch (error) {
    if (error instanceof KubeApiError && error.kind === 'not-found') return undefined;
    throw error;
  }
}
