/**
 * `palisade lab … ` for a lab with a control plane (`lab up --control-plane`): the subcommands'
 * actions when etcd, the reflector and node agents enforce the lab (src/lab/control-plane-lab.ts,
 * loaded only then). Probing waits until every agent has realized what etcd holds.
 */
import { formatStatus } from '../../agent/index.ts';
import type { Cluster } from '../../model/types.ts';
import {
  formatPlan,
  formatProbeReport,
  loadControlPlaneLab,
  probeLab,
  type DatapathKind,
} from '../../lab/index.ts';
import { writeJson } from '../common.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError, type CliIo } from '../io.ts';
import { probePorts, type ProbeQueries } from '../probe-ports.ts';

type Options = { readonly stateRoot: string; readonly waitMs: number };

/** `--etcd-timeout` in ms. */
export function etcdTimeout(raw: Record<string, unknown>): number {
  const seconds = Number(raw.etcdTimeout);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new UsageError('--etcd-timeout must be a number of seconds, more than 0');
  return seconds * 1000;
}

/** `--realize-timeout` in ms. */
export function realizeTimeout(raw: Record<string, unknown>): number {
  const seconds = Number(raw.realizeTimeout);
  if (!Number.isFinite(seconds) || seconds < 0)
    throw new UsageError('--realize-timeout must be a number of seconds, 0 or more');
  return seconds * 1000;
}

export async function controlPlaneUp(
  io: CliIo,
  name: string,
  objects: readonly object[],
  cluster: Cluster,
  options: Options & {
    nodes: number;
    datapath: DatapathKind;
    allowNodeLocal: boolean;
    realizeTimeoutMs: number;
    flowLog?: boolean;
  },
): Promise<void> {
  const { ControlPlaneLab } = await loadControlPlaneLab();
  const lab = await ControlPlaneLab.up(name, objects, cluster, options);
  try {
    const { status } = await lab.status();
    const { etcd, agents } = lab.record;
    const staged = lab.current.staged;
    const stagedCount = staged ? staged.policies.length + staged.clusterPolicies.length : 0;
    io.stdout.write(
      formatPlan(lab.plan, lab.current.policies.length).replace(
        ' enforced',
        ` enforced by node agents${options.datapath === 'ebpf' ? ' on eBPF' : ''}` +
          (stagedCount > 0 ? ` (${stagedCount} staged: evaluated against flows, not enforced)` : ''),
      ) +
        `control plane: etcd ${etcd.endpoint} (pid ${etcd.pid}, ${etcd.socket}), reflected at revision ${status.policyRevision}\n` +
        agents.map((a) => `  palisade agent --node ${a.node} (pid ${a.pid}): realized\n`).join(''),
    );
  } finally {
    lab.close();
  }
}

export async function controlPlaneProbe(
  io: CliIo,
  name: string,
  options: Options,
  probe: {
    /** What --port asked for; undefined: every container port. */
    asked: ProbeQueries | undefined;
    timeoutMs: number;
    output: 'text' | 'json';
    realizeTimeoutMs: number;
  },
): Promise<number> {
  const { ControlPlaneLab, lagLines } = await loadControlPlaneLab();
  const lab = await ControlPlaneLab.attach(name, options);
  try {
    const reading = await lab.waitRealized(probe.realizeTimeoutMs);
    const revision = reading.status.policyRevision;
    if (reading.lagging.length > 0)
      io.stderr.write(
        `note: after ${probe.realizeTimeoutMs / 1000} s these agents have not realized revision ${revision}; probing what the kernels hold now:\n${lagLines(reading)}\n`,
      );
    const { ports, notProbed } = probePorts(probe.asked, lab.plan.pods);
    const report = await probeLab(lab, ports, { timeoutMs: probe.timeoutMs, notProbed });
    if (probe.output === 'json') writeJson(io, { ...report, revision, lagging: reading.lagging });
    else io.stdout.write(formatProbeReport(report));
    return report.disagreements.length > 0 || reading.lagging.length > 0 ? EXIT_FINDINGS : EXIT_OK;
  } finally {
    lab.close();
  }
}

export async function controlPlaneApply(
  io: CliIo,
  name: string,
  options: Options,
  objects: readonly object[],
  change: { readonly prune: boolean; readonly etcdTimeoutMs: number },
): Promise<void> {
  const { ControlPlaneLab } = await loadControlPlaneLab();
  const lab = await ControlPlaneLab.attach(name, options);
  try {
    const report = await lab.apply(objects, change.prune, { etcdTimeoutMs: change.etcdTimeoutMs });
    for (const note of report.notes) io.stderr.write(`note: ${note}\n`);
    io.stdout.write(
      `${report.keysWritten} keys written to etcd; policy revision ${report.revision} (the agents realize it; 'lab probe' waits for them)\n`,
    );
  } finally {
    lab.close();
  }
}

export async function controlPlaneStatus(
  io: CliIo,
  name: string,
  options: Options,
  output: 'text' | 'json',
): Promise<number> {
  const { ControlPlaneLab, lagLines } = await loadControlPlaneLab();
  const lab = await ControlPlaneLab.attach(name, options);
  try {
    const reading = await lab.status();
    const { etcd, agents } = lab.record;
    if (output === 'json') writeJson(io, { etcd, agents, ...reading });
    else
      io.stdout.write(
        `etcd ${etcd.endpoint} (pid ${etcd.pid}); agents: ${agents.map((a) => `${a.node} pid ${a.pid}`).join(', ')}\n` +
          formatStatus(reading.status) +
          (reading.lagging.length > 0 ? `lagging:\n${lagLines(reading)}\n` : ''),
      );
    const trouble = reading.status.nodes.some((n) => n.state === 'dead' || n.record?.phase === 'failing');
    return trouble || reading.lagging.some((l) => !l.why.startsWith('realized')) ? EXIT_FINDINGS : EXIT_OK;
  } finally {
    lab.close();
  }
}

export async function controlPlaneRestartEtcd(io: CliIo, name: string, options: Options): Promise<void> {
  const { ControlPlaneLab } = await loadControlPlaneLab();
  const etcd = await ControlPlaneLab.restartEtcd(name, options);
  io.stdout.write(`etcd of lab ${name} runs again: ${etcd.endpoint} (pid ${etcd.pid}, ${etcd.socket})\n`);
}

export async function controlPlaneDown(io: CliIo, name: string, options: Options): Promise<void> {
  const { ControlPlaneLab } = await loadControlPlaneLab();
  const removed = await ControlPlaneLab.down(name, options);
  io.stdout.write(
    `lab ${name} is down (${removed.processes} processes stopped, ${removed.namespaces} network namespaces removed, etcd's data removed)\n`,
  );
}
