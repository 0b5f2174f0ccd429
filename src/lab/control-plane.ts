/**
 * The lab's control plane (`lab up --control-plane`): the processes a real cluster runs to
 * enforce policy, on the lab's network — a real etcd (control-plane-etcd.ts: TLS, client
 * certificates, RBAC; its data in the lab's directory), the reflector writing the lab's objects
 * into it exactly as `palisade reflect -f FILE --once` does, and one `palisade agent` per node,
 * started inside its node's network namespace with its own certificate. Loopback is not the
 * agents' there, so they reach etcd through its unix socket in the lab's directory.
 *
 * Processes outlive the command that starts them (detached, output to a log file each) and are
 * stopped by pid — checked against /proc first, since pids are reused.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EtcdStore } from '../etcd/types.ts';
import { agentUser, readStatus, type ClusterStatus, type NodeStatus } from '../agent/index.ts';
import { DEFAULT_ROOT, KeyLayout } from '../reflected/index.ts';
import { labEtcdConnection } from './control-plane-etcd.ts';
import type { ControlPlaneRecord } from './control-plane-record.ts';
import { familyOf, LabError, type LabPlan } from './topology.ts';
import { sourceEntryCommand } from './source-entry.ts';

/**
 * The `palisade` command line: beside this code when bundled (dist/bin/palisade.js) or compiled
 * (dist/cli/main.js); from the sources, see source-entry.ts.
 */
function palisadeCommand(): string[] {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts')) return sourceEntryCommand('palisade.js', join(dirname(here), '../cli/main.ts'));
  const bundled = fileURLToPath(new URL('./palisade.js', import.meta.url));
  return [existsSync(bundled) ? bundled : fileURLToPath(new URL('../cli/main.js', import.meta.url))];
}

/**
 * Starts one `palisade agent` per node inside the node's network namespace, enforcing with
 * nftables or eBPF in that namespace, reaching etcd through its unix socket as the node's own
 * identity; each node's pod addresses fail closed until its first snapshot is realized. eBPF
 * agents enter the namespace with `nsenter --net` (`ip netns exec` mounts a fresh /sys, which
 * hides the BPF filesystem and the pins there).
 */
export function startNodeAgents(
  plan: LabPlan,
  dir: string,
  etcd: ControlPlaneRecord['etcd'],
  options: {
    readonly allowNodeLocal: boolean;
    readonly datapath: 'nftables' | 'ebpf';
    readonly prefix?: string;
    /** Agents report flows, served on a Unix socket in the lab's directory. */
    readonly flowLog?: boolean;
  },
): ControlPlaneRecord['agents'] {
  return plan.nodes.map((node) => {
    const log = join(dir, `agent-${node.name}.log`);
    const podCidrs = plan.pods
      .filter((p) => p.node === node.name)
      .flatMap((p) => p.ips.map((ip) => `${ip}/${familyOf(ip) === 4 ? 32 : 128}`));
    const connection = labEtcdConnection(etcd, agentUser(node.name), 'socket');
    const socket = options.flowLog ? join(dir, `agent-${node.name}.sock`) : undefined;
    const args = [
      'agent',
      '--node',
      node.name,
      '--etcd',
      connection.endpoints.join(','),
      ...(connection.caFile ? ['--etcd-cacert', connection.caFile] : []),
      ...(connection.certFile && connection.keyFile
        ? ['--etcd-cert', connection.certFile, '--etcd-key', connection.keyFile]
        : []),
      '--datapath',
      options.datapath,
      '--netns',
      node.netns,
      '--prefix',
      options.prefix ?? DEFAULT_ROOT,
      // Status at most every 100 ms: `lab probe` waits for it.
      '--status-interval',
      '100',
      '--lease-ttl',
      '5',
      ...(podCidrs.length > 0 ? ['--pod-cidr', ...podCidrs] : []),
      ...(options.allowNodeLocal ? [] : ['--no-node-local']),
      ...(socket ? ['--flow-log', '--listen', `unix:${socket}`] : []),
    ];
    const out = openSync(log, 'a', 0o600);
    try {
      const enter =
        options.datapath === 'ebpf'
          ? ['nsenter', `--net=/run/netns/${node.netns}`]
          : ['ip', 'netns', 'exec', node.netns];
      const child = spawn(enter[0]!, [...enter.slice(1), process.execPath, ...palisadeCommand(), ...args], {
        detached: true,
        stdio: ['ignore', out, out],
      });
      child.unref();
      if (child.pid === undefined) throw new LabError(`could not start the agent of ${node.name}`);
      return { node: node.name, pid: child.pid, log, ...(socket ? { socket } : {}) };
    } finally {
      closeSync(out);
    }
  });
}

/** Every node's agent against the store's policy revision, and the nodes not yet there. */
export interface Realization {
  readonly status: ClusterStatus;
  /** Nodes whose agent has not realized the policy revision (or is not alive), with why. */
  readonly lagging: readonly { readonly node: string; readonly why: string }[];
}

/** Reads the agents' status and says which of the plan's nodes lag. */
export async function realization(
  store: EtcdStore,
  plan: LabPlan,
  prefix = DEFAULT_ROOT,
): Promise<Realization> {
  const status = await readStatus(store, new KeyLayout(prefix));
  const byNode = new Map(status.nodes.map((n) => [n.node, n]));
  const lagging = plan.nodes.flatMap((node) => {
    const why = lagReason(byNode.get(node.name), status.policyRevision);
    return why ? [{ node: node.name, why }] : [];
  });
  return { status, lagging };
}

function lagReason(node: NodeStatus | undefined, policyRevision: number): string | undefined {
  if (!node) return 'no agent has registered';
  if (node.state !== 'alive') return `agent ${node.state}`;
  const record = node.record!;
  if (record.lastError && record.phase === 'failing')
    return `failing: ${record.lastError.message.split('\n')[0]}`;
  if (record.realizedRevision < policyRevision)
    return `realized revision ${record.realizedRevision} of ${policyRevision} (${record.phase})`;
  return undefined;
}

/**
 * Waits until every node's agent has realized the store's policy revision, at most `timeoutMs`;
 * returns the last reading (its `lagging` is empty when they all did).
 */
export async function waitRealized(
  store: EtcdStore,
  plan: LabPlan,
  timeoutMs: number,
  prefix = DEFAULT_ROOT,
): Promise<Realization> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reading = await realization(store, plan, prefix);
    if (reading.lagging.length === 0 || Date.now() >= deadline) return reading;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Stops the control plane's processes: agents first (SIGTERM: each finishes its transaction and
 * revokes its lease), then etcd; SIGKILL for any still running after `graceMs`. Returns what
 * could not be stopped.
 */
export async function stopControlPlane(record: ControlPlaneRecord, graceMs = 5000): Promise<string[]> {
  const problems: string[] = [];
  const stopAll = async (
    targets: readonly { pid: number; what: string; marker: string }[],
  ): Promise<void> => {
    const running = targets.filter((t) => signal(t.pid, t.marker, 'SIGTERM', problems, t.what));
    const deadline = Date.now() + graceMs;
    while (running.some((t) => isOurs(t.pid, t.marker)) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    for (const t of running)
      if (isOurs(t.pid, t.marker)) signal(t.pid, t.marker, 'SIGKILL', problems, t.what);
  };
  await stopAll(record.agents.map((a) => ({ pid: a.pid, what: `agent of ${a.node}`, marker: a.node })));
  await stopAll([{ pid: record.etcd.pid, what: 'etcd', marker: record.etcd.dataDir }]);
  return problems;
}

/** Whether `pid` still runs the process we started (its command line names `marker`). */
function isOurs(pid: number, marker: string): boolean {
  try {
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
    return command.includes(marker) && state !== 'Z';
  } catch {
    return false;
  }
}

/** Sends a signal to a process of ours; true when it was sent. */
function signal(
  pid: number,
  marker: string,
  name: NodeJS.Signals,
  problems: string[],
  what: string,
): boolean {
  if (!isOurs(pid, marker)) return false;
  try {
    process.kill(pid, name);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH')
      problems.push(`${what} (pid ${pid}): ${(error as Error).message}`);
    return false;
  }
}
