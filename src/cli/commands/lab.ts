/**
 * `palisade lab`: a mini cluster in network namespaces, enforced with the nftables renderer (or
 * the eBPF programs, `up --datapath ebpf`) and probed with real packets (`up`, `probe`, `apply`,
 * `down`). Root only.
 */
import { Command } from 'commander';
import {
  formatApplyReport,
  formatPlan,
  formatProbeReport,
  DATAPATHS,
  hasControlPlane,
  Lab,
  probeLab,
  requireRoot,
} from '../../lab/index.ts';
import {
  checkChoice,
  loadInput,
  reportDiagnostics,
  resolveInputOptions,
  withInputOptions,
  writeJson,
} from '../common.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError, type CliIo } from '../io.ts';
import { parseProbePorts, probePorts } from '../probe-ports.ts';
import {
  controlPlaneApply,
  controlPlaneDown,
  controlPlaneRestartEtcd,
  controlPlaneProbe,
  controlPlaneStatus,
  controlPlaneUp,
  realizeTimeout,
  etcdTimeout,
} from './lab-control-plane.ts';

const nameOption = (command: Command): Command =>
  command
    .option('--name <name>', 'the lab to act on', 'palisade')
    .option('--state-dir <path>', 'where labs keep their state', '/run/palisade/lab')
    .option('--wait <seconds>', 'how long to wait while another command holds the lab', '30');

/** The lab options every subcommand shares. */
function labOptions(raw: Record<string, unknown>): { stateRoot: string; waitMs: number } {
  const wait = Number(raw.wait);
  if (!Number.isFinite(wait) || wait < 0)
    throw new UsageError('--wait must be a number of seconds, 0 or more');
  return { stateRoot: String(raw.stateDir), waitMs: wait * 1000 };
}

/** Nodes whose table (or maps) was not what the lab's state says when the command attached. */
function driftNotes(lab: Lab, fixing: boolean): string {
  const what = lab.datapathKind === 'ebpf' ? 'maps differ' : 'table differs';
  return lab.drift
    .map(
      (d) =>
        `note: ${d.node}'s ${what} from the lab's policy (${d.pending === 'replace' ? 'missing or of another shape' : `${d.pending} operations`}): ` +
        (fixing
          ? 'this apply starts from what it holds'
          : `an apply did not finish, or it was changed outside palisade; 'palisade lab apply' corrects it`) +
        '\n',
    )
    .join('');
}

export function labCommand(io: CliIo, done: (code: number) => void): Command {
  const lab = new Command('lab').description(
    'a mini cluster in network namespaces, enforced by nftables or eBPF and probed with real packets (root)',
  );

  lab.addCommand(
    nameOption(withInputOptions(new Command('up')))
      .description(
        'build the lab from manifests: a namespace per node and per pod, policy enforced, listeners on every port',
      )
      .option('--nodes <n>', 'nodes to spread pods over when the manifests name none', '2')
      .option(
        '--datapath <kind>',
        "what enforces policy on the nodes: nftables (a table per node) or ebpf (TC programs on each pod's veth; needs clang and bpftool)",
        'nftables',
      )
      .option('--no-node-local', 'police traffic between a node and its own pods too')
      .option(
        '--control-plane',
        'run a real etcd, the reflector and one palisade agent per node (in its namespace); later changes go through etcd',
        false,
      )
      .option('--realize-timeout <seconds>', 'with --control-plane: how long to wait for the agents', '60')
      .option(
        '--flow-log',
        "with --control-plane: the agents report new connections' verdicts ('palisade flows --lab NAME')",
        false,
      )
      .option(
        '--keep-flows',
        'keep tracked connections that a later update denies (default: cut them at their next packet)',
        false,
      )
      .action(async (raw: Record<string, unknown>) => {
        requireRoot();
        const input = resolveInputOptions(raw);
        const datapath = checkChoice('--datapath', raw.datapath, DATAPATHS);
        const nodes = Number(raw.nodes);
        if (!Number.isInteger(nodes) || nodes < 1 || nodes > 64)
          throw new UsageError('--nodes must be 1 to 64');
        const loaded = await loadInput(input, io);
        const inputErrors = reportDiagnostics(loaded.diagnostics, io, input.verbose);
        if (inputErrors && loaded.cluster.endpoints.length === 0) return done(EXIT_FINDINGS);
        if (raw.controlPlane === true) {
          await controlPlaneUp(io, String(raw.name), validObjects(loaded), loaded.cluster, {
            ...labOptions(raw),
            nodes,
            datapath,
            allowNodeLocal: raw.nodeLocal !== false,
            realizeTimeoutMs: realizeTimeout(raw),
            flowLog: raw.flowLog === true,
          });
          return done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
        }
        // Objects that failed validation were reported and are left out, as in `lab apply`.
        const up = await Lab.up(String(raw.name), validObjects(loaded), loaded.cluster, {
          ...labOptions(raw),
          nodes,
          datapath,
          allowNodeLocal: raw.nodeLocal !== false,
          killDenied: raw.keepFlows !== true,
        });
        io.stdout.write(formatPlan(up.plan, up.current.policies.length, up.datapathKind));
        up.close();
        done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
      }),
  );

  lab.addCommand(
    nameOption(new Command('probe'))
      .description(
        'connect from every pod to every other pod and compare with the reference evaluator (exit 1 on any disagreement)',
      )
      .option(
        '--port <ports>',
        'ports to probe, comma-separated: numbers, names (the numbers the pods give them), either with its protocol (53/UDP) (default: every container port in the lab)',
      )
      .option(
        '--protocol <protocols>',
        'with --port: TCP, UDP or both, comma-separated, for the ports that name none',
        'TCP',
      )
      .option('--timeout <ms>', 'how long a blocked attempt waits', '1000')
      .option('-o, --output <format>', 'text or json', 'text')
      .option(
        '--realize-timeout <seconds>',
        'with a control plane: how long to wait until every agent has realized the store',
        '30',
      )
      .action(async (raw: Record<string, unknown>, command: Command) => {
        requireRoot();
        const output = checkChoice('--output', raw.output, ['text', 'json'] as const);
        const timeoutMs = Number(raw.timeout);
        if (!Number.isInteger(timeoutMs) || timeoutMs < 10)
          throw new UsageError('--timeout must be at least 10 (ms)');
        const asked = parseProbePorts(
          typeof raw.port === 'string' ? raw.port : undefined,
          String(raw.protocol),
          command.getOptionValueSource('protocol') === 'cli',
        );
        if (hasControlPlane(String(raw.name), labOptions(raw).stateRoot)) {
          return done(
            await controlPlaneProbe(io, String(raw.name), labOptions(raw), {
              asked,
              timeoutMs,
              output,
              realizeTimeoutMs: realizeTimeout(raw),
            }),
          );
        }
        const opened = await Lab.attach(String(raw.name), labOptions(raw));
        try {
          io.stderr.write(driftNotes(opened, false));
          const { ports, notProbed } = probePorts(asked, opened.plan.pods);
          const report = await probeLab(opened, ports, { timeoutMs, notProbed });
          if (output === 'json') writeJson(io, report);
          else io.stdout.write(formatProbeReport(report));
          done(report.disagreements.length > 0 ? EXIT_FINDINGS : EXIT_OK);
        } finally {
          opened.close();
        }
      }),
  );

  lab.addCommand(
    nameOption(withInputOptions(new Command('apply')))
      .description(
        'change policy in the running lab (like kubectl apply): one incremental transaction per node',
      )
      .option('--prune', 'also delete the lab policies that the files do not contain', false)
      .option(
        '--etcd-timeout <seconds>',
        'with a control plane: give up (recording nothing) when etcd takes longer to take the change',
        '30',
      )
      .action(async (raw: Record<string, unknown>) => {
        requireRoot();
        const etcdTimeoutMs = etcdTimeout(raw);
        const input = resolveInputOptions(raw);
        const loaded = await loadInput(input, io);
        const inputErrors = reportDiagnostics(loaded.diagnostics, io, input.verbose);
        const valid = validObjects(loaded);
        if (hasControlPlane(String(raw.name), labOptions(raw).stateRoot)) {
          await controlPlaneApply(io, String(raw.name), labOptions(raw), valid, {
            prune: raw.prune === true,
            etcdTimeoutMs,
          });
          return done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
        }
        const opened = await Lab.attach(String(raw.name), labOptions(raw));
        try {
          io.stderr.write(driftNotes(opened, true));
          const report = opened.apply(valid, raw.prune === true);
          io.stdout.write(formatApplyReport(report));
          done(inputErrors ? EXIT_FINDINGS : EXIT_OK);
        } finally {
          opened.close();
        }
      }),
  );

  lab.addCommand(
    nameOption(new Command('restart-etcd'))
      .description('a lab with a control plane: start its etcd again on its data after it died')
      .action(async (raw: Record<string, unknown>) => {
        requireRoot();
        if (!hasControlPlane(String(raw.name), labOptions(raw).stateRoot))
          throw new UsageError(`lab "${String(raw.name)}" has no control plane (lab up --control-plane)`);
        await controlPlaneRestartEtcd(io, String(raw.name), labOptions(raw));
        done(EXIT_OK);
      }),
  );

  lab.addCommand(
    nameOption(new Command('down'))
      .description('remove everything the lab created: agents, network namespaces, state')
      .action(async (raw: Record<string, unknown>) => {
        requireRoot();
        if (hasControlPlane(String(raw.name), labOptions(raw).stateRoot)) {
          await controlPlaneDown(io, String(raw.name), labOptions(raw));
          return done(EXIT_OK);
        }
        const removed = await Lab.down(String(raw.name), labOptions(raw));
        io.stdout.write(
          `lab ${String(raw.name)} is down (${removed.namespaces} network namespaces removed)\n`,
        );
        done(EXIT_OK);
      }),
  );
  lab.addCommand(
    nameOption(new Command('status'))
      .description(
        "a lab with a control plane: each node agent's realized revision against the store's, lag, errors",
      )
      .option('-o, --output <format>', 'text or json', 'text')
      .action(async (raw: Record<string, unknown>) => {
        requireRoot();
        const output = checkChoice('--output', raw.output, ['text', 'json'] as const);
        if (!hasControlPlane(String(raw.name), labOptions(raw).stateRoot))
          throw new UsageError(
            `lab ${String(raw.name)} has no control plane (its status is its tables: 'palisade lab probe'); start one with 'lab up --control-plane'`,
          );
        done(await controlPlaneStatus(io, String(raw.name), labOptions(raw), output));
      }),
  );
  return lab;
}

/** The raw objects that loaded without errors (a broken policy is reported and left out). */
function validObjects(loaded: Awaited<ReturnType<typeof loadInput>>): object[] {
  // Staged policies too: the lab's agents evaluate them against flows (never enforce them).
  const policies = new Set(
    [...loaded.cluster.policies, ...(loaded.cluster.staged?.policies ?? [])].map(
      (p) => `${p.namespace}/${p.name}`,
    ),
  );
  const namespaces = new Set(loaded.cluster.namespaces.keys());
  const pods = new Set(loaded.cluster.endpoints.map((e) => `${e.namespace}/${e.name}`));
  return loaded.rawObjects
    .map((r) => r.value as { kind?: unknown; metadata?: { name?: unknown; namespace?: unknown } })
    .filter((o) => {
      const name = String(o.metadata?.name);
      const namespace = typeof o.metadata?.namespace === 'string' ? o.metadata.namespace : 'default';
      if (o.kind === 'NetworkPolicy') return policies.has(`${namespace}/${name}`);
      if (o.kind === 'Namespace') return namespaces.has(name);
      if (o.kind === 'Pod') return pods.has(`${namespace}/${name}`);
      return true;
    });
}
