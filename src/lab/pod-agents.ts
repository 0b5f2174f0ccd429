/**
 * The lab's pod agents: one process per pod, started in the pod's network namespace, reached
 * through a Unix socket in the lab's directory; stopped by pid after checking the pid is still
 * an agent's (pids are reused).
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AgentClient } from './agent-client.ts';
import { sourceEntryCommand } from './source-entry.ts';
import { LabError, type LabPlan } from './topology.ts';

const socketPath = (dir: string, index: number): string => join(dir, `pod${index}.sock`);

/** A client per pod of the plan, for its agent's socket in the lab's directory (not yet connected). */
export function podClients(plan: LabPlan, dir: string): Map<string, AgentClient> {
  return new Map(plan.pods.map((p, i) => [p.id, new AgentClient(socketPath(dir, i))]));
}

/** The agent of a pod of the lab; a LabError names the lab when it has no such pod. */
export function podClient(clients: ReadonlyMap<string, AgentClient>, pod: string, lab: string): AgentClient {
  const client = clients.get(pod);
  if (!client) throw new LabError(`no pod ${pod} in lab ${lab}`);
  return client;
}

/** Connects to every pod's agent and has it listen on the pod's TCP and UDP ports. */
export async function connectPodAgents(
  plan: LabPlan,
  clients: ReadonlyMap<string, AgentClient>,
): Promise<void> {
  await Promise.all([...clients.values()].map((c) => c.connect()));
  await Promise.all(
    plan.pods.flatMap((pod) => {
      const client = clients.get(pod.id);
      return client
        ? [
            client.listen(
              pod.ports
                .filter((p) => p.protocol !== 'SCTP')
                .map((p) => ({ port: p.port, protocol: p.protocol as 'TCP' | 'UDP' })),
            ),
          ]
        : [];
    }),
  );
}

/**
 * The agent's entry point and how to start Node on it: compiled (dist/lab/) or bundled
 * (dist/bin/, scripts/bundle-cli.mjs), `pod-agent.js` beside this code; from the sources, see
 * source-entry.ts.
 */
function agentCommand(): string[] {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts'))
    return sourceEntryCommand('pod-agent.js', here.replace(/pod-agents\.ts$/, 'pod-agent.ts'));
  return [fileURLToPath(new URL('./pod-agent.js', import.meta.url))];
}

export function startAgents(plan: LabPlan, dir: string): { pod: string; pid: number; socket: string }[] {
  const log = openSync(join(dir, 'agents.log'), 'a', 0o600);
  try {
    return plan.pods.map((pod, index) => {
      const socket = socketPath(dir, index);
      const child = spawn('ip', ['netns', 'exec', pod.netns, process.execPath, ...agentCommand(), socket], {
        detached: true,
        stdio: ['ignore', log, log],
      });
      child.unref();
      if (child.pid === undefined) throw new LabError(`could not start the agent of ${pod.id}`);
      return { pod: pod.id, pid: child.pid, socket };
    });
  } finally {
    closeSync(log);
  }
}

/**
 * Stops an agent, after checking the pid is still one of ours (pids are reused). Returns what
 * went wrong, or undefined when it was stopped or was already gone.
 */
export function stopAgent(pid: number): string | undefined {
  let command: string;
  try {
    command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ESRCH'
      ? undefined
      : `cannot inspect pid ${pid}: ${(error as Error).message}`;
  }
  if (!command.includes('pod-agent')) return undefined; // gone, and the pid reused by another process
  try {
    process.kill(pid, 'SIGKILL');
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ESRCH' ? undefined : `cannot stop pid ${pid}: ${(error as Error).message}`;
  }
}
