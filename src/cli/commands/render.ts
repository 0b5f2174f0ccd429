/**
 * `palisade render`: the compiled policy for a datapath, through the render-target registry —
 * printed (an nft script, ligato ACLs, session rules, security groups, the classifier's maps) or,
 * for targets that apply, applied to the kernel. What a target can do (its scope, whether it
 * applies, whether it handles ordered cluster policy) comes from its capabilities, not its name.
 */
import { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { parseCidr, type Cidr } from '../../net/ip.ts';
import type { Cluster } from '../../model/types.ts';
import { makeDiagnostic, type Diagnostic } from '../../model/diagnostics.ts';
import { clusterPolicyLabel } from '../../model/cluster-policy.ts';
import { renderCluster } from '../../pipeline/index.ts';
import {
  DEFAULT_RUN_DIR,
  TARGET_NAMES,
  loadTarget,
  lockForProcess,
  targetDescription,
  type RenderTarget,
  type TargetOptions,
} from '../../datapaths/index.ts';
import { isRoot } from '../../dataplane/index.ts';
import {
  checkChoice,
  loadInput,
  refuseClusterPolicies,
  refuseEnginePolicies,
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
      `datapath: ${TARGET_NAMES.map((name) => `${name} (${targetDescription(name)})`).join('; ')}`,
    )
    .option(
      '--node <name>',
      'the node whose pods to render (nftables: required; vpp-acl, vpptcp: default every node; neutron, bitmap: the whole cluster, bitmap printing only this node)',
    )
    .option('--apply', 'apply the ruleset to the kernel (root), replacing the table atomically', false)
    .option('--netns <name>', 'with --apply: the network namespace to apply in')
    .option(
      '--run-dir <dir>',
      "with --apply: where the datapath's lock lives (an agent on the node holds it)",
      DEFAULT_RUN_DIR,
    )
    .option(
      '--pod-cidr <cidrs...>',
      "the node's pod CIDRs: addresses in them without a rendered pod are dropped",
    )
    .option(
      '--no-node-local',
      'police traffic between the node and its own pods too (default: it bypasses policy)',
    )
    .option('--keep-flows', 'keep tracked connections that a later policy denies (default: cut them)')
    .option(
      '--no-direct-delivery',
      "ebpf: every packet takes the host's path (default: packets between two pods of the node that the host does not translate go straight into the receiver)",
    )
    .option(
      '--previous <file>',
      'neutron: a previous output; print only the API calls that turn it into this one',
    )
    .option('-o, --output <format>', 'nftables: text (an nft script); the other targets: json')
    .option('--stats', 'print counts of chains, rules, sets and elements on stderr', false)
    .action(async (raw: Record<string, unknown>) => {
      const input = resolveInputOptions(raw);
      const name = checkChoice('--target', raw.target, TARGET_NAMES);
      const target = await loadTarget(name);
      const format = checkChoice('--output', raw.output ?? target.formats[0], target.formats);
      if (input.semantics !== 'v1')
        throw new UsageError("render implements v1 semantics; use 'palisade convert --to v1' first");
      const node = typeof raw.node === 'string' ? raw.node : undefined;
      if (target.capabilities.nodeRequired && node === undefined)
        throw new UsageError(`--target ${name} needs --node`);
      const options = resolveTargetOptions(raw, target);
      const loaded = await loadInput(input, io, { rawObjects: false });
      const inputErrors = reportDiagnostics(loaded.diagnostics, io, input.verbose);
      if (node !== undefined && !loaded.cluster.endpoints.some((e) => e.node === node))
        throw new UsageError(`--node: no pod in the input runs on node "${node}"`);
      const ordered = target.capabilities.orderedClusterPolicy;
      if (ordered !== true) refuseClusterPolicies(loaded.cluster, `render --target ${name}`, ordered.refusal);
      const engines = target.capabilities.enginePolicy;
      if (engines) refuseEnginePolicies(loaded.cluster, `render --target ${name}`, engines.refusal);
      reportDiagnostics(unenforceableDomainNames(loaded.cluster, name), io, input.verbose);
      const previous = typeof raw.previous === 'string' ? readPrevious(raw.previous, target) : undefined;
      // Applying changes the node's kernel datapath: one process at a time, like an agent — a
      // running agent on this node (or network namespace) makes this fail in one line, not race it.
      const lock = options.apply
        ? lockForProcess(name, {
            ...(options.apply.netns !== undefined ? { netns: options.apply.netns } : {}),
            ...(typeof raw.runDir === 'string' ? { runDir: raw.runDir } : {}),
          })
        : undefined;
      const rendered = (() => {
        try {
          return renderCluster(target, loaded.cluster, { ...(node !== undefined ? { node } : {}), options });
        } finally {
          lock?.release();
        }
      })();
      const printed = target.print(rendered, {
        format,
        stats: raw.stats === true,
        ...(previous !== undefined ? { previous } : {}),
      });
      for (const warning of printed.warnings) io.stderr.write(`palisade: warning: ${warning}\n`);
      if ('json' in printed.document) writeJson(io, printed.document.json);
      else io.stdout.write(printed.document.text);
      if (printed.stats !== undefined) io.stderr.write(`${printed.stats}\n`);
      done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
    });
}

/** The flags every target may read, checked once. */
function resolveTargetOptions(raw: Record<string, unknown>, target: RenderTarget): TargetOptions {
  const apply = raw.apply === true;
  if (apply && target.capabilities.applies === undefined)
    throw new UsageError(`--apply: --target ${target.name} only prints its output`);
  if (apply && !isRoot()) throw new UsageError('--apply needs root (it changes the kernel ruleset)');
  if (apply && target.capabilities.scope === 'node' && typeof raw.node !== 'string')
    throw new UsageError(`--apply: --target ${target.name} applies one node's policy; name it with --node`);
  return {
    podCidrs: parseCidrs((raw.podCidr as string[] | undefined) ?? []),
    allowNodeLocal: raw.nodeLocal !== false,
    recheckFlows: raw.keepFlows !== true,
    directDelivery: raw.directDelivery !== false,
    ...(apply ? { apply: typeof raw.netns === 'string' ? { netns: raw.netns } : {} } : {}),
  };
}

function parseCidrs(texts: readonly string[]): Cidr[] {
  return texts.map((text) => {
    const parsed = parseCidr(text);
    if (!parsed.ok)
      throw new UsageError(`--pod-cidr ${text}: ${parsed.problems.map((p) => p.message).join('; ')}`);
    return parsed.value;
  });
}

/** An earlier output of the same target, checked by the target before it is diffed against. */
function readPrevious(path: string, target: RenderTarget): unknown {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new UsageError(`--previous ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!target.checkPrevious) throw new UsageError(`--previous: --target ${target.name} prints no API calls`);
  const problem = target.checkPrevious(parsed);
  if (problem !== undefined) throw new UsageError(`--previous ${path}: ${problem}`);
  return parsed;
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
