/**
 * The Neutron render target: the whole cluster's security groups, read from the store (one
 * group per policy: the seed's model, not per-pod tables), printed with the API requests that
 * create them — or, given an earlier output, only those that turn it into this one. Security
 * groups only add allows, so ordered cluster policy (deny, pass, tiers) has no rendering. Its
 * interpreter judges a packet by the sender port's egress rules and the receiver port's ingress
 * rules; traffic between a pod and its own node bypasses policy, as the evaluator says.
 */
import type { Cluster } from '../../model/types.ts';
import { clusterAddresses } from '../cluster-addresses.ts';
import { storeReader } from '../store-reader.ts';
import type { Rendered, TargetImplementation, VerdictPacket } from '../types.ts';
import { NeutronModel } from './interpreter.ts';
import type { NeutronRendering } from './model.ts';
import { renderNeutron } from './render.ts';
import { neutronRequests } from './requests.ts';

export const neutronTarget: TargetImplementation<NeutronRendering> = {
  capabilities: {
    scope: 'cluster',
    nodeRequired: false,
    orderedClusterPolicy: {
      refusal:
        'cannot express ordered cluster policy: security groups only add allows, so a Deny, a Pass or the order of tiers has no rendering',
    },
    policesOwnNode: false,
  },
  formats: ['json'],
  create: (store) => ({ renderer: storeReader('neutron'), output: () => renderNeutron(store) }),
  print(rendered, { previous }) {
    const rendering = only(rendered);
    const requests = neutronRequests(previous as NeutronRendering | undefined, rendering);
    return { document: { json: { ...rendering, requests } }, warnings: [] };
  },
  checkPrevious(value) {
    const rendering = value as Partial<NeutronRendering> | null;
    return rendering !== null &&
      typeof rendering === 'object' &&
      Array.isArray(rendering.security_groups) &&
      Array.isArray(rendering.ports)
      ? undefined
      : "not an output of 'palisade render --target neutron'";
  },
  interpreter: { verdicts: neutronVerdicts },
};

function only(rendered: readonly Rendered<NeutronRendering>[]): NeutronRendering {
  const [first] = rendered;
  if (!first || rendered.length > 1) throw new Error('neutron renders the whole cluster at once');
  return first.output;
}

function neutronVerdicts(
  rendered: readonly Rendered<NeutronRendering>[],
  cluster: Cluster,
): (packet: VerdictPacket) => boolean {
  const model = new NeutronModel(only(rendered));
  const { podAt, ownNode } = clusterAddresses(cluster);
  return (packet) => {
    const srcPod = podAt(packet.src);
    const dstPod = podAt(packet.dst);
    const src = model.portAt(packet.src);
    const dst = model.portAt(packet.dst);
    const egress =
      !src || (srcPod && ownNode(srcPod, packet.dst)) || model.allows(src, 'egress', packet.dst, packet);
    const ingress =
      !dst || (dstPod && ownNode(dstPod, packet.src)) || model.allows(dst, 'ingress', packet.src, packet);
    return Boolean(egress) && Boolean(ingress);
  };
}
