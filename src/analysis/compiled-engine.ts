/**
 * The compiled engine for analysis: verdicts from the classifier, for the commands that can run
 * on it (`matrix`, `check` with `--engine compiled`).
 */
import type { IpAddress } from '../net/ip.ts';
import type { Cluster, Protocol } from '../model/types.ts';
import type { EvaluateOptions } from '../semantics/types.ts';
import { Classifier } from '../classifier/index.ts';
import { ClusterState } from '../state/index.ts';

/**
 * Verdicts between two sets of addresses (an endpoint's, or one IP): allowed when every address
 * family both ends have allows it (the reference's dual-stack rule); undefined when they share
 * no family (no addresses, e.g. a workload read from a repository), for the reference to answer.
 */
export function compiledVerdicts(
  cluster: Cluster,
  options: EvaluateOptions,
): (
  src: readonly IpAddress[],
  dst: readonly IpAddress[],
  protocol: Protocol,
  port: number,
) => boolean | undefined {
  const state = new ClusterState();
  state.resync(cluster);
  const classifier = new Classifier(state, {
    allowNodeLocal: options.allowNodeLocal ?? true,
    tiers: true,
  });
  for (const node of cluster.nodes.values()) classifier.addNodeAddresses(node.name, node.addresses);
  return (src, dst, protocol, port) => {
    let decided = false;
    for (const family of [4, 6] as const) {
      const from = src.find((ip) => ip.family === family);
      const to = dst.find((ip) => ip.family === family);
      if (!from || !to) continue;
      decided = true;
      if (!classifier.allows({ src: from, dst: to, protocol, port })) return false;
    }
    return decided ? true : undefined;
  };
}
