/**
 * The steps of a lab's life that the plain lab (lab.ts) and the lab with a control plane
 * (control-plane-lab.ts) take alike: connecting to the pod agents of a lab just opened, removing
 * what a lab made (its pod agents, namespaces, datapath leftovers and directory, each tried even
 * when another fails), and saying what could not be removed — after a failed `up`, or by `down`.
 */
import { rmSync } from 'node:fs';
import type { AgentClient } from './agent-client.ts';
import { deleteNamespaces, namespacesOf } from './network.ts';
import { connectPodAgents, stopAgent } from './pod-agents.ts';
import { LabError, type LabPlan } from './topology.ts';

/** A pod's agent as a lab's state file records it. */
export interface PodAgentRecord {
  readonly pod: string;
  readonly pid: number;
  readonly socket: string;
}

/**
 * Connects to the pod agents of a lab just opened (`up`, `attach`); when that fails, the lab is
 * closed (its clients, its datapath or store) before the error goes on.
 */
export async function connectOrClose<T extends { close(): void }>(
  lab: T,
  plan: LabPlan,
  clients: ReadonlyMap<string, AgentClient>,
): Promise<T> {
  try {
    await connectPodAgents(plan, clients);
  } catch (error) {
    lab.close();
    throw error;
  }
  return lab;
}

/**
 * Stops the pod agents, deletes the lab's namespaces, removes what its datapath leaves behind
 * (`removeDatapath`: eBPF's pins outlive the namespaces) and the lab's directory, trying each
 * step whatever the others did. Without `lab` (its state file could not be read) only the
 * directory goes. Returns what could not be removed, one line each; what was gone already is not
 * a problem.
 */
export async function removeLabParts(
  dir: string,
  lab: { readonly plan: LabPlan; readonly podAgents: readonly PodAgentRecord[] } | undefined,
  removeDatapath: (plan: LabPlan) => readonly string[] | Promise<readonly string[]>,
): Promise<string[]> {
  const problems: string[] = [];
  if (lab) {
    for (const agent of lab.podAgents) {
      const problem = stopAgent(agent.pid);
      if (problem) problems.push(`agent of ${agent.pod}: ${problem}`);
    }
    try {
      await deleteNamespaces(namespacesOf(lab.plan));
    } catch (error) {
      problems.push(String((error as Error).message));
    }
    problems.push(...(await removeDatapath(lab.plan)));
  }
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch (error) {
    problems.push(`cannot remove ${dir}: ${(error as Error).message}`);
  }
  return problems;
}

/** A failed `up`'s error, with what removing the half-built lab could not remove added to its message. */
export function withTeardownProblems(error: unknown, problems: readonly string[]): unknown {
  if (problems.length > 0 && error instanceof Error)
    error.message += `\nwhile removing the half-built lab: ${problems.join('; ')}`;
  return error;
}

/** `down` found things it could not remove: it fails, naming each. */
export function throwIfNotFullyDown(name: string, problems: readonly string[]): void {
  if (problems.length > 0)
    throw new LabError(`lab "${name}" is not fully down:\n${problems.map((p) => `  ${p}`).join('\n')}`);
}
