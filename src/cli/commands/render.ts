/**
 * `palisade render`: a node's compiled policy as a datapath ruleset (nftables), printed or
 * applied to the kernel.
 */
import { Command } from 'commander';
import { parseCidr, type Cidr } from '../../net/ip.ts';
import { PolicyPipeline } from '../../pipeline/index.ts';
import { NftablesRenderer } from '../../renderers/nftables/index.ts';
import { ClusterState } from '../../state/index.ts';
import { isRoot, nftRunner, recordingRunner } from '../../dataplane/index.ts';
import {
  checkChoice,
  loadInput,
  reportDiagnostics,
  resolveInputOptions,
  withInputOptions,
} from '../common.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError, type CliIo } from '../io.ts';

export function renderCommand(io: CliIo, done: (code: number) => void): Command {
  return withInputOptions(new Command('render'))
    .description("render a node's compiled policy for a datapath: print the ruleset, or apply it")
    .requiredOption('--target <name>', 'datapath: nftables')
    .requiredOption('--node <name>', 'the node whose pods to render')
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
    .option('--stats', 'print counts of chains, rules, sets and elements on stderr', false)
    .action(async (raw: Record<string, unknown>) => {
      const input = resolveInputOptions(raw);
      checkChoice('--target', raw.target, ['nftables'] as const);
      if (input.semantics !== 'v1')
        throw new UsageError("render implements v1 semantics; use 'palisade convert --to v1' first");
      const node = String(raw.node);
      const podCidrs = parseCidrs((raw.podCidr as string[] | undefined) ?? []);
      if (raw.apply === true && !isRoot())
        throw new UsageError('--apply needs root (it changes the kernel ruleset)');
      const loaded = await loadInput(input, io);
      const inputErrors = reportDiagnostics(loaded.diagnostics, io, input.verbose);
      if (!loaded.cluster.endpoints.some((e) => e.node === node))
        throw new UsageError(`--node: no pod in the input runs on node "${node}"`);
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
