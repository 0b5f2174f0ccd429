/**
 * `palisade render`: a node's compiled policy for a datapath — an nftables ruleset (printed, or
 * applied to the kernel) or ligato vpp-agent ACLs (JSON).
 */
import { Command } from 'commander';
import { parseCidr, type Cidr } from '../../net/ip.ts';
import { PolicyPipeline } from '../../pipeline/index.ts';
import type { Cluster } from '../../model/types.ts';
import { stateGroupLookup } from '../../configurator/index.ts';
import { RendererCache } from '../../renderers/cache/index.ts';
import { renderAcls, type Acl } from '../../renderers/vpp-acl/index.ts';
import { renderSessionRules, type NodeSessionRules } from '../../renderers/vpptcp/index.ts';
import { neutronRequests, renderNeutron, type NeutronRendering } from '../../renderers/neutron/index.ts';
import { readFileSync } from 'node:fs';
import { Classifier, type TierTable } from '../../classifier/index.ts';
import { makeDiagnostic, type Diagnostic } from '../../model/diagnostics.ts';
import { clusterPolicyLabel } from '../../model/cluster-policy.ts';
import { formatIp } from '../../net/ip.ts';
import { NftablesRenderer } from '../../renderers/nftables/index.ts';
import { ClusterState } from '../../state/index.ts';
import { isRoot, nftRunner, recordingRunner } from '../../dataplane/index.ts';
import {
  checkChoice,
  loadInput,
  refuseClusterPolicies,
  reportDiagnostics,
  resolveInputOptions,
  withInputOptions,
  writeJson,
} from '../common.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError, type CliIo } from '../io.ts';

export function renderCommand(io: CliIo, done: (code: number) => void): Command {
  return withInputOptions(new Command('render'))
    .description("render a node's compiled policy for a datapath: print the ruleset, or apply it")
    .requiredOption(
      '--target <name>',
      'datapath: nftables, vpp-acl (ligato ACLs), vpptcp (VPP session rules), neutron (security groups) or bitmap (Mizar-style maps); all but nftables print JSON',
    )
    .option(
      '--node <name>',
      'the node whose pods to render (nftables: required; vpp-acl, vpptcp: default every node)',
    )
    .option('--apply', 'apply the ruleset to the kernel (root), replacing the table atomically', false)
    .option('--netns <name>', 'with --apply: the network namespace to apply in')
    .option(
      '--pod-cidr <cidrs...>',
      "the node's pod CIDRs: addresses in them without a rendered pod are dropped",
    )
    .option(
      '--no-node-local',
      'police traffic between the node and its own pods too (default: it bypasses policy)',
    )
    .option('--keep-flows', 'keep tracked connections that a later policy denies (default: cut them)', false)
    .option(
      '--previous <file>',
      'neutron: a previous output; print only the API calls that turn it into this one',
    )
    .option('-o, --output <format>', 'nftables: text (an nft script); the other targets: json')
    .option('--stats', 'print counts of chains, rules, sets and elements on stderr', false)
    .action(async (raw: Record<string, unknown>) => {
      const input = resolveInputOptions(raw);
      const target = checkChoice('--target', raw.target, [
        'nftables',
        'vpp-acl',
        'vpptcp',
        'neutron',
        'bitmap',
      ] as const);
      if (raw.output !== undefined)
        checkChoice(
          '--output',
          raw.output,
          target === 'nftables' ? (['text'] as const) : (['json'] as const),
        );
      if (input.semantics !== 'v1')
        throw new UsageError("render implements v1 semantics; use 'palisade convert --to v1' first");
      const node = typeof raw.node === 'string' ? raw.node : undefined;
      if (target === 'nftables' && node === undefined) throw new UsageError('--target nftables needs --node');
      const podCidrs = parseCidrs((raw.podCidr as string[] | undefined) ?? []);
      if (raw.apply === true && !isRoot())
        throw new UsageError('--apply needs root (it changes the kernel ruleset)');
      const loaded = await loadInput(input, io);
      const inputErrors = reportDiagnostics(loaded.diagnostics, io, input.verbose);
      if (node !== undefined && !loaded.cluster.endpoints.some((e) => e.node === node))
        throw new UsageError(`--node: no pod in the input runs on node "${node}"`);
      if (target === 'bitmap') {
        writeJson(io, renderBitmaps(loaded.cluster, node));
        return done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
      }
      if (target === 'neutron')
        refuseClusterPolicies(
          loaded.cluster,
          'render --target neutron',
          'cannot express ordered cluster policy: security groups only add allows, so a Deny, a Pass or the order of tiers has no rendering',
        );
      reportDiagnostics(unenforceableDomainNames(loaded.cluster, target), io, input.verbose);
      if (target === 'neutron') {
        const previous = typeof raw.previous === 'string' ? readPrevious(raw.previous) : undefined;
        const state = new ClusterState();
        state.resync(loaded.cluster);
        const rendering = renderNeutron(state);
        writeJson(io, { ...rendering, requests: neutronRequests(previous, rendering) });
        return done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
      }
      if (target === 'vpp-acl' || target === 'vpptcp') {
        writeJson(io, renderVpp(target, loaded.cluster, node, io));
        return done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
      }
      if (node === undefined) return; // unreachable: checked above, kept for the type
      const state = new ClusterState();
      const recorder = recordingRunner();
      const renderer = new NftablesRenderer({
        state,
        runner:
          raw.apply === true
            ? nftRunner(typeof raw.netns === 'string' ? { netns: raw.netns } : {})
            : recorder,
        podCidrs,
        allowNodeLocal: raw.nodeLocal !== false,
        recheckFlows: raw.keepFlows !== true,
      });
      const pipeline = new PolicyPipeline({ state, node, renderers: [renderer] });
      pipeline.apply({ type: 'resync', cluster: loaded.cluster });
      if (raw.apply === true) io.stdout.write(`applied table inet palisade for node ${node}\n`);
      else io.stdout.write(recorder.scripts.join(''));
      if (raw.stats === true) {
        const s = renderer.stats();
        io.stderr.write(
          `${s.chains} chains, ${s.rules} rules, ${s.sets} sets, ${s.elements} set elements, ${s.mapEntries} dispatch entries\n`,
        );
      }
      done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
    });
}

function parseCidrs(texts: readonly string[]): Cidr[] {
  return texts.map((text) => {
    const parsed = parseCidr(text);
    if (!parsed.ok)
      throw new UsageError(`--pod-cidr ${text}: ${parsed.problems.map((p) => p.message).join('; ')}`);
    return parsed.value;
  });
}

/**
 * Every node's (or one node's) VPP configuration as its agent would receive it: ligato ACLs,
 * or session rules with each pod's application namespace. What the target cannot express is
 * reported on stderr.
 */
function renderVpp(
  target: 'vpp-acl' | 'vpptcp',
  cluster: Cluster,
  node: string | undefined,
  io: CliIo,
): { nodes: ({ node: string } & (AclRenderingJson | NodeSessionRules))[] } {
  const names =
    node !== undefined
      ? [node]
      : [...new Set(cluster.endpoints.flatMap((e) => (e.node ? [e.node] : [])))].sort();
  const nodes = names.map((name) => {
    const state = new ClusterState();
    const side = target === 'vpp-acl' ? 'ingress' : 'egress';
    const cache = new RendererCache({ side, groups: stateGroupLookup(state) });
    new PolicyPipeline({ state, node: name, renderers: [cache] }).apply({ type: 'resync', cluster });
    const { notes, ...rendering } =
      target === 'vpp-acl' ? renderAcls(cache.snapshot, state) : renderSessionRules(cache.snapshot, state);
    for (const note of notes) io.stderr.write(`palisade: warning: node ${name}: ${note}\n`);
    return { node: name, ...rendering };
  });
  return { nodes };
}

interface AclRenderingJson {
  readonly acls: readonly Acl[];
}

/** A previous `render --target neutron` output, checked enough to diff against. */
function readPrevious(path: string): NeutronRendering {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new UsageError(`--previous ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const rendering = parsed as Partial<NeutronRendering>;
  if (!Array.isArray(rendering.security_groups) || !Array.isArray(rendering.ports))
    throw new UsageError(`--previous ${path}: not an output of 'palisade render --target neutron'`);
  return rendering as NeutronRendering;
}

/**
 * The classifier's maps per endpoint and direction, keyed as the seed's schema (VNI, endpoint
 * IP, CIDR or protocol/port → bitmap of rule slots). Kubernetes has no VNI: it is 0.
 */
function renderBitmaps(cluster: Cluster, node: string | undefined): unknown {
  const state = new ClusterState();
  state.resync(cluster);
  const classifier = new Classifier(state, { tiers: true });
  const endpoints = classifier
    .endpoints()
    .filter((maps) => node === undefined || maps.endpoint.node === node)
    .sort((a, b) => (a.endpoint.id < b.endpoint.id ? -1 : 1));
  return {
    endpoints: endpoints.map(({ endpoint, ingress, egress, admin, baseline }) => {
      const ip = endpoint.ips.map(formatIp).join(',');
      return {
        endpoint: endpoint.id,
        ips: endpoint.ips.map(formatIp),
        ingress: ingress ? ingress.render(ip) : { enforce: [] },
        egress: egress ? egress.render(ip) : { enforce: [] },
        // Ordered tiers: slots in precedence order, the lowest matching bit decides with its action.
        ...(admin ? { admin: renderTier(admin, ip) } : {}),
        ...(baseline ? { baseline: renderTier(baseline, ip) } : {}),
      };
    }),
  };
}

function renderTier(tier: { ingress?: TierTable; egress?: TierTable }, ip: string): unknown {
  const one = (t: TierTable | undefined) =>
    t && { ...t.table.render(ip), actions: [...t.actions].map((a) => ['allow', 'deny', 'pass'][a]) };
  return {
    ...(tier.ingress ? { ingress: one(tier.ingress) } : {}),
    ...(tier.egress ? { egress: one(tier.egress) } : {}),
  };
}

/** domainNames peers: analysed by the evaluator, but no rendered datapath resolves names. */
function unenforceableDomainNames(cluster: Cluster, target: string): Diagnostic[] {
  return cluster.clusterPolicies.flatMap((policy) =>
    policy.egress
      .filter((rule) => rule.peers.some((p) => p.type === 'domainNames'))
      .map((rule) =>
        makeDiagnostic(
          'DOMAIN_NAMES_NOT_ENFORCED',
          `${clusterPolicyLabel(policy)} egress[${rule.index}]${rule.name ? ` "${rule.name}"` : ''}: --target ${target} cannot resolve domain names, so its domainNames peers match nothing there`,
          { ...(policy.location ?? { file: '<input>' }), object: `${policy.kind} ${policy.name}` },
        ),
      ),
  );
}
