/**
 * `convert --to v1alpha2`: AdminNetworkPolicy and BaselineAdminNetworkPolicy (v1alpha1, any peer
 * shape) rewritten as ClusterNetworkPolicy (v1alpha2) with the same behaviour: Admin tier with
 * the same priority; Baseline tier at priority 1000 for the BANP (which Palisade ranks after
 * every Baseline ClusterNetworkPolicy anyway); Allow becomes Accept; ports become protocols.
 * Written from the normalized model, so every accepted input shape converts the same way.
 * v0.1.1's sameLabels/notSameLabels have no v1alpha2 form: such a policy is left as it is.
 */
import {
  clusterPolicyLabel,
  type ClusterPeer,
  type ClusterPolicy,
  type ClusterPort,
  type ClusterRule,
} from '../model/cluster-policy.ts';
import type { Cluster, LabelSelector } from '../model/types.ts';
import { makeDiagnostic, type Diagnostic } from '../model/diagnostics.ts';
import type { RawObject } from '../ingest/types.ts';
import type { ConvertResult } from './convert.ts';

type Json = Record<string, unknown>;

/** Every AdminNetworkPolicy and BaselineAdminNetworkPolicy of the input converted; other objects unchanged. */
export function convertToV1alpha2(rawObjects: readonly RawObject[], cluster: Cluster): ConvertResult {
  const objects: unknown[] = [];
  const notes: Diagnostic[] = [];
  for (const raw of rawObjects) {
    const value = raw.value as Json;
    const name = String((value.metadata as Json | undefined)?.name);
    const policy = cluster.clusterPolicies.find(
      (p) => p.kind === value.kind && p.kind !== 'ClusterNetworkPolicy' && p.name === name,
    );
    if (!policy) {
      objects.push(value); // not convertible, or invalid (reported by ingest): passed through
      continue;
    }
    const converted = toClusterNetworkPolicy(policy);
    const where = { ...raw.locator.valueAt(raw.basePath), object: `${policy.kind} ${policy.name}` };
    if (converted.ok) {
      objects.push(converted.object);
      notes.push(
        makeDiagnostic(
          'CONVERT_CLUSTER_POLICY',
          `${clusterPolicyLabel(policy)} became cnp/${policy.name} (tier ${policy.tier})`,
          where,
        ),
      );
    } else {
      objects.push(value);
      notes.push(makeDiagnostic('CONVERT_NOT_EXPRESSIBLE', `${converted.reason}; left as it is`, where));
    }
  }
  return { objects, notes };
}

export type CnpConversion = { ok: true; object: Json } | { ok: false; reason: string };

export function toClusterNetworkPolicy(policy: ClusterPolicy): CnpConversion {
  const relative = [...policy.ingress, ...policy.egress].some((rule) =>
    rule.peers.some((p) => p.type === 'pods' && !p.namespaces.selector),
  );
  if (relative) {
    return {
      ok: false,
      reason: `${clusterPolicyLabel(policy)} uses sameLabels/notSameLabels, which ClusterNetworkPolicy cannot express`,
    };
  }
  if ([...policy.ingress, ...policy.egress].some((rule) => rule.failClosed)) {
    return {
      ok: false,
      reason: `${clusterPolicyLabel(policy)} has a peer Palisade cannot read (fails closed)`,
    };
  }
  const subject = policy.subject.podSelector
    ? {
        pods: {
          namespaceSelector: rawSelector(policy.subject.namespaceSelector),
          podSelector: rawSelector(policy.subject.podSelector),
        },
      }
    : { namespaces: rawSelector(policy.subject.namespaceSelector) };
  const spec: Json = {
    tier: policy.tier,
    priority: policy.kind === 'BaselineAdminNetworkPolicy' ? 1000 : policy.priority,
    subject,
  };
  if (policy.ingress.length) spec.ingress = policy.ingress.map((rule) => rawRule(rule, 'from'));
  if (policy.egress.length) spec.egress = policy.egress.map((rule) => rawRule(rule, 'to'));
  return {
    ok: true,
    object: {
      apiVersion: 'policy.networking.k8s.io/v1alpha2',
      kind: 'ClusterNetworkPolicy',
      metadata: { name: policy.name },
      spec,
    },
  };
}

function rawRule(rule: ClusterRule, peersField: 'from' | 'to'): Json {
  return {
    ...(rule.name ? { name: rule.name } : {}),
    action: rule.action === 'allow' ? 'Accept' : rule.action === 'deny' ? 'Deny' : 'Pass',
    [peersField]: rule.peers.map(rawPeer),
    ...(rule.ports ? { protocols: rule.ports.map(rawProtocol) } : {}),
  };
}

function rawPeer(peer: ClusterPeer): Json {
  switch (peer.type) {
    case 'pods': {
      const namespaces = rawSelector(peer.namespaces.selector ?? { requirements: [], key: '' });
      return peer.podSelector
        ? { pods: { namespaceSelector: namespaces, podSelector: rawSelector(peer.podSelector) } }
        : { namespaces };
    }
    case 'nodes':
      return { nodes: rawSelector(peer.selector) };
    case 'networks':
    case 'outside': // never in what is converted: only AdminNetworkPolicies and the Baseline one are
      return { networks: peer.cidrs.map((c) => c.text) };
    case 'domainNames':
      return { domainNames: [...peer.names] };
  }
}

function rawProtocol(port: ClusterPort): Json {
  if (port.type === 'named') return { destinationNamedPort: port.name };
  const field = port.protocol.toLowerCase();
  if (port.port === undefined) return { [field]: { destinationPort: { range: { start: 1, end: 65535 } } } };
  const destinationPort =
    port.endPort !== undefined ? { range: { start: port.port, end: port.endPort } } : { number: port.port };
  return { [field]: { destinationPort } };
}

/** A canonical selector back in API form: single-value In as matchLabels, the rest as expressions. */
function rawSelector(selector: LabelSelector): Json {
  const matchLabels: Record<string, string> = {};
  const matchExpressions: Json[] = [];
  for (const r of selector.requirements) {
    if (r.operator === 'In' && r.values.length === 1 && !(r.key in matchLabels))
      matchLabels[r.key] = r.values[0] as string;
    else
      matchExpressions.push({
        key: r.key,
        operator: r.operator,
        ...(r.values.length ? { values: [...r.values] } : {}),
      });
  }
  return {
    ...(Object.keys(matchLabels).length ? { matchLabels } : {}),
    ...(matchExpressions.length ? { matchExpressions } : {}),
  };
}
