/**
 * The VPP stacks with ordered cluster policy (part of `npm run bench -- tiers … --vpp`): one
 * node's pods through the pipeline and the renderer cache, whose tiered sides are flattened
 * (renderers/cache/flatten-tiers.ts) — the time to flatten, then VPP ACL and VPPTCP output for
 * the node (store + compile + flatten + combine, render, rules). VPP has no address sets, so
 * every group an Admin rule names is one rule per member address: output grows with them.
 */
import { stateGroupLookup } from '../src/configurator/index.ts';
import type { Cluster } from '../src/model/types.ts';
import { buildTarget, compileCluster } from '../src/pipeline/index.ts';
import { flattenTiers } from '../src/datapaths/cache/index.ts';
import { vppAclTarget } from '../src/datapaths/vpp-acl/index.ts';
import { vpptcpTarget } from '../src/datapaths/vpptcp/index.ts';
import type { TargetImplementation } from '../src/datapaths/index.ts';
import { median } from './stats.ts';

export function vppTierFigures(cluster: Cluster, runs: number): void {
  const node = cluster.endpoints.find((e) => e.node)?.node;
  if (!node) return;
  const local = cluster.endpoints.filter((e) => e.node === node).length;
  // Flattening alone: every local pod's tiered sides, from the compiled tables.
  const pipeline = compileCluster(cluster, { node });
  const groups = stateGroupLookup(pipeline.state);
  const flattens: number[] = [];
  let flattened = 0;
  for (let run = 0; run < runs; run++) {
    globalThis.gc?.();
    const t = performance.now();
    flattened = 0;
    for (const [, tables] of pipeline.compiledPods()) {
      const flat = flattenTiers(tables, (reference) => groups.addresses(reference)).tables;
      flattened += (flat.ingress?.rules.length ?? 0) + (flat.egress?.rules.length ?? 0);
    }
    flattens.push(performance.now() - t);
  }
  process.stdout.write(
    `VPP flattening (${node}, ${local} pods): ${median(flattens).toFixed(0)} ms, ${flattened} rules in the pods' flattened sides\n`,
  );
  vppFigures('vpp-acl', cluster, node, vppAclTarget, (o) =>
    o.acls.reduce((n, acl) => n + acl.rules.length, 0),
  );
  vppFigures('vpptcp', cluster, node, vpptcpTarget, (o) => o.rules.length);
}

/** One VPP target for the node: store + compile + flatten + combine, then render, and its rules. */
function vppFigures<Output>(
  name: string,
  cluster: Cluster,
  node: string,
  target: TargetImplementation<Output>,
  rules: (output: Output) => number,
): void {
  globalThis.gc?.();
  const t = performance.now();
  const { instance } = buildTarget(target, cluster, { node });
  const build = performance.now() - t;
  const r = performance.now();
  const count = rules(instance.output());
  process.stdout.write(
    `${name.padEnd(8)} store + compile + flatten + combine ${build.toFixed(0)} ms; render ${(performance.now() - r).toFixed(0)} ms; ${count} ${name === 'vpp-acl' ? 'ACL' : 'session'} rules\n`,
  );
}
