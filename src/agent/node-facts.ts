/**
 * What an agent must know about its node before it can enforce anything, found the way a pod
 * finds it: the node's name from `--node` or `NODE_NAME` (the downward API's `spec.nodeName`),
 * and its pod CIDRs from `--pod-cidr` or else the Node object's `spec.podCIDRs` (what the
 * controller-manager allocated; `spec.podCIDR` on clusters older than dual-stack). A fact that
 * cannot be found is one line saying which and how to give it — never a guess: pod CIDRs are
 * what a kernel datapath fails closed on, so an agent without them does not start.
 */
import { KubeApiError, objectPath, ALL_RESOURCES } from '../kube/index.ts';
import type { KubeApi } from '../kube/types.ts';
import { parseCidr } from '../net/ip.ts';

/** The environment variable the DaemonSet fills from `spec.nodeName`. */
const NODE_NAME_ENV = 'NODE_NAME';

/** A fact about the node that cannot be found: its message is the one line a user reads. */
export class NodeFactError extends Error {}

/** The node's name: `--node`, else `NODE_NAME`; a NodeFactError when neither is set. */
export function nodeName(
  flag: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): string {
  const name = flag ?? env[NODE_NAME_ENV];
  if (name === undefined || name.trim() === '')
    throw new NodeFactError(
      `which node is this? give --node NAME, or set ${NODE_NAME_ENV} (in a pod: env ${NODE_NAME_ENV} from fieldRef spec.nodeName)`,
    );
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name) || name.length > 253)
    throw new NodeFactError(`node name "${name}" is not a Kubernetes node name (DNS subdomain)`);
  return name;
}

/**
 * The node's pod CIDRs from its Node object. Errors name what is missing: the Node (a wrong
 * NODE_NAME), the permission to get it, or CIDRs the cluster never allocated.
 */
export async function podCidrsOfNode(api: KubeApi, node: string): Promise<string[]> {
  const nodes = ALL_RESOURCES.find((r) => r.kind === 'Node')!;
  let object: Record<string, unknown>;
  try {
    object = await api.get(objectPath({ resource: nodes, version: 'v1' }, undefined, node));
  } catch (error) {
    if (error instanceof KubeApiError && error.kind === 'not-found')
      throw new NodeFactError(
        `node ${node}: the cluster has no Node of that name (is ${NODE_NAME_ENV} the pod's spec.nodeName?)`,
      );
    if (error instanceof KubeApiError)
      throw new NodeFactError(`node ${node}: cannot read its pod CIDRs: ${error.message}`);
    throw error;
  }
  const spec = (object.spec ?? {}) as { podCIDRs?: unknown; podCIDR?: unknown };
  const listed = Array.isArray(spec.podCIDRs)
    ? spec.podCIDRs.filter((c): c is string => typeof c === 'string')
    : typeof spec.podCIDR === 'string'
      ? [spec.podCIDR]
      : [];
  if (listed.length === 0)
    throw new NodeFactError(
      `node ${node}: its Node has no spec.podCIDRs (the cluster does not allocate pod CIDRs to nodes, or its network plugin keeps them elsewhere); give --pod-cidr CIDR…`,
    );
  for (const cidr of listed)
    if (!parseCidr(cidr).ok)
      throw new NodeFactError(`node ${node}: spec.podCIDRs holds "${cidr}", not a CIDR`);
  return listed;
}
