/**
 * `palisade compile`: the compiled path for manifests — per-pod rule tables, shared tables,
 * address groups and, for a node, the combined local tables and the global table.
 */
import { Command } from 'commander';
import { formatIp, type IpAddress } from '../../net/ip.ts';
import type { RuleTable } from '../../model/rule.ts';
import { compileJson, compileTextLines, styleFor, type CompileReport } from '../../analysis/index.ts';
import type { TieredTable } from '../../configurator/index.ts';
import { compileCluster, type GroupMember, type PolicyPipeline } from '../../pipeline/index.ts';
import { flattenedPods, RendererCache } from '../../datapaths/cache/index.ts';
import {
  checkChoice,
  loadInput,
  reportDiagnostics,
  resolveInputOptions,
  withInputOptions,
} from '../common.ts';
import { withHeapGrowingFreely } from '../heap.ts';
import { refuseLargeOutput, resolveMaxOutput, sizeOfPieces, withOutputLimit } from '../output-limit.ts';
import { phases } from '../progress.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError, writeStreaming, type CliIo } from '../io.ts';
import { jsonPieces } from '../json-pieces.ts';

export function compileCommand(io: CliIo, done: (code: number) => void): Command {
  return withOutputLimit(withInputOptions(new Command('compile')))
    .description(
      "compile policy into per-pod rule tables, shared tables, address groups and a node's global table",
    )
    .option(
      '--node <name>',
      "compile only this node's pods, and show its combined local tables and global table",
    )
    .option(
      '--side <side>',
      'with --node: the side local tables are combined to: ingress (ACL) or egress (VPPTCP)',
      'ingress',
    )
    .option('--stats', 'print counts and timing', false)
    .option('-o, --output <format>', 'text or json', 'text')
    .action(async (raw: Record<string, unknown>) => {
      const input = resolveInputOptions(raw);
      if (input.semantics !== 'v1')
        throw new UsageError("compile implements v1 semantics; use 'palisade convert --to v1' first");
      const output = checkChoice('--output', raw.output, ['text', 'json'] as const);
      const side = checkChoice('--side', raw.side, ['ingress', 'egress'] as const);
      const node = typeof raw.node === 'string' ? raw.node : undefined;
      const maxOutput = resolveMaxOutput(raw.maxOutput, raw.force);
      const progress = phases(io);
      const { inputErrors, pipeline, cache, millis } = await withHeapGrowingFreely(async () => {
        const loaded = await loadInput(input, io, { rawObjects: false, ...(progress ? { progress } : {}) });
        progress?.finish();
        const inputErrors = reportDiagnostics(loaded.diagnostics, io, input.verbose);
        if (node !== undefined && !loaded.cluster.endpoints.some((e) => e.node === node)) {
          throw new UsageError(`--node: no pod in the input runs on node "${node}"`);
        }
        const started = performance.now();
        progress?.phase(`compiling ${loaded.cluster.endpoints.length.toLocaleString('en-US')} pods`);
        let cache: RendererCache | undefined;
        // With a node, the renderer cache shows what the one-direction datapaths (the VPP stacks) get.
        const pipeline = compileCluster(loaded.cluster, {
          ...(node !== undefined ? { node } : {}),
          renderers: (store) => (node !== undefined ? [(cache = RendererCache.forStore(store, side))] : []),
        });
        return { inputErrors, pipeline, cache, millis: performance.now() - started };
      });
      progress?.phase('preparing the report');
      const report = buildReport(pipeline, cache, node, side, millis);
      // Written as it is made: at 100,000 pods the JSON is hundreds of megabytes.
      if (!io.stdoutIsTty) progress?.phase('writing the tables');
      else progress?.finish();
      const pieces = (): Iterable<string> =>
        output === 'json'
          ? jsonPieces(compileJson(report), '\n')
          : compileTextLines(report, styleFor(io.stdoutIsTty, io.env), raw.stats === true);
      try {
        // Counted before anything is written (only up to the limit): the tables of 100,000 pods
        // are hundreds of megabytes.
        refuseLargeOutput(sizeOfPieces(pieces(), maxOutput), maxOutput, [
          "--node NAME (one node's pods and tables)",
        ]);
        await writeStreaming(io.stdout, pieces());
      } finally {
        progress?.finish();
      }
      done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
    });
}

/** A group member as the report shows it (shared between groups: never changed). */
type ReportMember = CompileReport['groups'][number]['members'][number];

function buildReport(
  pipeline: PolicyPipeline,
  cache: RendererCache | undefined,
  node: string | undefined,
  side: 'ingress' | 'egress',
  millis: number,
): CompileReport {
  const pods = [...pipeline.compiledPods()].sort(([a], [b]) => (a < b ? -1 : 1));
  const tables = new Map<string, RuleTable>();
  const tiers = new Map<string, TieredTable>();
  const usage = new Map<string, number>();
  for (const [, t] of pods) {
    for (const tiered of [t.ingressTiers, t.egressTiers]) if (tiered) tiers.set(tiered.id, tiered);
    for (const table of [t.ingress, t.egress]) {
      if (!table) continue;
      tables.set(table.id, table);
      usage.set(table.id, (usage.get(table.id) ?? 0) + 1);
    }
  }
  // Members and pods are built by assignment, not conditional spreads: a spread in a literal
  // copies through the runtime's slow path, and the report makes some 300,000 of these at ×1.
  // A pod is a member of several groups, and its members share its address list: the list is
  // formatted once, and a member without a port (the same in every such group) made once.
  // (By the address list alone: a list belongs to one pod, or is one group's filtered copy.)
  const plainMembers = new Map<readonly IpAddress[], ReportMember>();
  const reportMember = (m: GroupMember): ReportMember => {
    let plain = plainMembers.get(m.ips);
    if (plain?.pod !== m.pod) plainMembers.set(m.ips, (plain = { pod: m.pod, ips: m.ips.map(formatIp) }));
    return m.port === undefined ? plain : { pod: m.pod, ips: plain.ips, port: m.port };
  };
  const groups = [...pipeline.state.groupKeys()].sort().map((key) => ({
    key,
    members: [...(pipeline.state.group(key)?.members.values() ?? [])]
      .map(reportMember)
      .sort((a, b) => (a.pod < b.pod ? -1 : 1)),
  }));
  const distinct = [...tables.values()];
  const bindings = [...usage.values()].reduce((a, b) => a + b, 0);
  return {
    pods: pods.map(([id, t]) => {
      const pod: { -readonly [K in keyof CompileReport['pods'][number]]: CompileReport['pods'][number][K] } =
        {
          id,
        };
      // In this order: it is the order of the JSON output's fields.
      if (t.ingress) pod.ingress = t.ingress.id;
      if (t.egress) pod.egress = t.egress.id;
      if (t.ingressTiers) pod.ingressTiers = t.ingressTiers.id;
      if (t.egressTiers) pod.egressTiers = t.egressTiers.id;
      return pod;
    }),
    postponed: pipeline.postponed(),
    tables: distinct,
    tiers: [...tiers.values()],
    usage,
    groups,
    ...(cache && node !== undefined
      ? {
          node: {
            name: node,
            side,
            local: [...cache.snapshot.binding]
              .sort(([a], [b]) => (a < b ? -1 : 1))
              .map(([pod, table]) => ({ pod, table })),
            flattened: flattenedPods(cache.snapshot),
            tables: [...cache.snapshot.tables.values()],
            global: cache.snapshot.global,
          },
        }
      : {}),
    stats: {
      pods: pods.length,
      tables: distinct.length,
      rules: distinct.reduce((n, t) => n + t.rules.length, 0),
      groups: groups.length,
      sharedTableRatio: distinct.length ? bindings / distinct.length : 0,
      millis,
    },
  };
}
