/**
 * The questions before any rule for each side of a connection. First: is the side subject to
 * policy at all (in the cluster, not host-networked)? Then, once the Admin tier has passed or not
 * matched: is the pod isolated by NetworkPolicy, and by which policies? Traffic between a pod and
 * its own node is a NetworkPolicy matter: an isolated pod always allows it, but cluster policy
 * tiers judge it like any other traffic (the upstream conformance suite denies a pod's egress to
 * its own node with an AdminNetworkPolicy or BaselineAdminNetworkPolicy nodes peer).
 * Shared by the single-connection evaluator and the port-set computation so they cannot drift.
 * A gate says what it found (a status); the sentence for people is made by `gateReason` only
 * when a verdict is explained — the matrix asks these questions millions of times and prints
 * none of the sentences.
 */
import type { Endpoint, NetworkPolicy, Semantics } from '../model/types.ts';
import { describeAddress } from './describe.ts';
import { noteExplanation } from './explanation-meter.ts';
import { isOwnNode, selectingPolicies, type ClusterIndex } from './match.ts';
import type { Address, EvaluateOptions, SideStatus } from './types.ts';

export interface OpenGate {
  readonly open: true;
  readonly status: SideStatus;
  readonly endpoint?: Endpoint;
  /** The NetworkPolicy tier allowed it for good (node-local traffic of an isolated pod); no Baseline tier. */
  readonly final?: boolean;
}

type SubjectGate = OpenGate | { readonly open: false; readonly endpoint: Endpoint };

export type NetworkPolicyGate =
  | OpenGate
  | { readonly open: false; readonly endpoint: Endpoint; readonly policies: readonly NetworkPolicy[] };

const OUTSIDE: OpenGate = { open: true, status: 'not-applicable' };

/** Whether any policy (of any tier) can apply to this side. */
export function subjectGate(subject: Address): SubjectGate {
  if (subject.kind !== 'endpoint') return OUTSIDE;
  const endpoint = subject.endpoint;
  if (endpoint.hostNetwork) return { open: true, status: 'host-network', endpoint };
  if (endpoint.pseudo) return { open: true, status: 'pseudo-peer', endpoint };
  return { open: false, endpoint };
}

/** The sentence for people saying why a side is open (`subject` is the side's own address). */
export function gateReason(gate: OpenGate, subject: Address, direction: 'egress' | 'ingress'): string {
  noteExplanation();
  const id = gate.endpoint?.id ?? describeAddress(subject);
  switch (gate.status) {
    case 'not-applicable':
      return `${describeAddress(subject)} is outside the cluster; no ${direction} policy applies`;
    case 'host-network':
      return `${id} uses the host network and is not subject to network policy`;
    case 'pseudo-peer':
      return `${id} stands for the ingress controller's pods, which the input does not hold: its own ${direction} policy is not in question`;
    case 'egress-not-modelled':
      return 'the v1beta1 proposal has no egress policy; egress is allowed';
    case 'namespace-not-isolated':
      return `namespace ${gate.endpoint?.namespace ?? ''} has no DefaultDeny ingress isolation, so ingress is allowed`;
    case 'not-isolated':
      return `no policy selects ${id} for ${direction}, so it is not isolated`;
    case 'node-local':
      return `traffic between ${id} and its own node is always allowed`;
    default:
      return `${id}: ${gate.status}`;
  }
}

/** The NetworkPolicy tier: isolated pods are decided here; others go on to the Baseline tier. */
export function networkPolicyGate(
  index: ClusterIndex,
  endpoint: Endpoint,
  other: Address,
  direction: 'egress' | 'ingress',
  options: EvaluateOptions,
): NetworkPolicyGate {
  const semantics: Semantics = options.semantics ?? 'v1';
  const open = (status: SideStatus): NetworkPolicyGate => ({ open: true, status, endpoint });
  if (semantics === 'v1beta1-proposal') {
    if (direction === 'egress') return open('egress-not-modelled');
    if (index.cluster.namespaces.get(endpoint.namespace)?.legacyIngressIsolation !== 'DefaultDeny')
      return open('namespace-not-isolated');
  }
  const policies = selectingPolicies(index, endpoint, direction, semantics);
  if (policies.length === 0 && semantics === 'v1') return open('not-isolated');
  if ((options.allowNodeLocal ?? true) && isOwnNode(index, endpoint, other))
    return { open: true, final: true, status: 'node-local', endpoint };
  return { open: false, endpoint, policies };
}
