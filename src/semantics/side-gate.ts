/**
 * The first question for each side of a connection: is it subject to policy at all (in the
 * cluster, not host-networked, not node-local, isolated)? If so, which policies decide it.
 * Shared by the single-connection evaluator and the port-set computation so they cannot drift.
 */
import type { Endpoint, NetworkPolicy, Semantics } from '../model/types.ts';
import { describeAddress } from './describe.ts';
import { isOwnNode, selectingPolicies, type ClusterIndex } from './match.ts';
import type { Address, EvaluateOptions, SideStatus } from './types.ts';

export type SideGate =
  | {
      readonly open: true;
      readonly status: SideStatus;
      readonly reason: string;
      readonly endpoint?: Endpoint;
    }
  | { readonly open: false; readonly endpoint: Endpoint; readonly policies: readonly NetworkPolicy[] };

export function gateSide(
  index: ClusterIndex,
  subject: Address,
  other: Address,
  direction: 'egress' | 'ingress',
  options: EvaluateOptions,
): SideGate {
  const semantics: Semantics = options.semantics ?? 'v1';
  if (subject.kind !== 'endpoint') {
    return {
      open: true,
      status: 'not-applicable',
      reason: `${describeAddress(subject)} is outside the cluster; no ${direction} policy applies`,
    };
  }
  const endpoint = subject.endpoint;
  const open = (status: SideStatus, reason: string): SideGate => ({ open: true, status, reason, endpoint });
  if (endpoint.hostNetwork) {
    return open('host-network', `${endpoint.id} uses the host network and is not subject to NetworkPolicy`);
  }
  if ((options.allowNodeLocal ?? true) && isOwnNode(index, endpoint, other)) {
    return open('node-local', `traffic between ${endpoint.id} and its own node is always allowed`);
  }
  if (semantics === 'v1beta1-proposal') {
    if (direction === 'egress') {
      return open('egress-not-modelled', 'the v1beta1 proposal has no egress policy; egress is allowed');
    }
    if (index.cluster.namespaces.get(endpoint.namespace)?.legacyIngressIsolation !== 'DefaultDeny') {
      return open(
        'namespace-not-isolated',
        `namespace ${endpoint.namespace} has no DefaultDeny ingress isolation, so ingress is allowed`,
      );
    }
  }
  const policies = selectingPolicies(index, endpoint, direction, semantics);
  if (policies.length === 0 && semantics === 'v1') {
    return open('not-isolated', `no policy selects ${endpoint.id} for ${direction}, so it is not isolated`);
  }
  return { open: false, endpoint, policies };
}
