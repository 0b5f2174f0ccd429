/**
 * Where a lab keeps its state and how its commands take turns: the state directory and lock of
 * a named lab, the state files (written atomically, trusted only when private), and the checks
 * every command makes first (root, a usable name). Shared by the plain lab (lab.ts) and the lab
 * with a control plane (control-plane-lab.ts).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  acquireDatapathLock,
  acquireLock,
  ensurePrivateDir,
  isRoot,
  readTrustedFile,
  StateFileError,
  writeFileAtomic,
  type HeldLock,
} from '../dataplane/index.ts';
import type { Cluster } from '../model/types.ts';
import { LAB_NAME, LabError, planLab, type LabPlan } from './topology.ts';

export const DEFAULT_STATE_ROOT = '/run/palisade/lab';

/** Where a lab's state lives and how long a command waits for another holding its lock. */
export interface LabLocation {
  /** Where labs keep their state files, locks and agent sockets. */
  readonly stateRoot?: string;
  /** How long to wait for another command holding the lab's lock, in ms. Default 30 s. */
  readonly waitMs?: number;
}

/** Where a lab's state lives, and its lock (outside the lab's directory, which `down` removes). */
export function labPaths(name: string, stateRoot: string | undefined) {
  const root = stateRoot ?? DEFAULT_STATE_ROOT;
  return { root, dir: join(root, name), lock: join(root, '.locks', `${name}.lock`) };
}

/** The state file of a lab with a control plane (control-plane-lab.ts), where a plain lab keeps lab.json. */
export const CONTROL_PLANE_STATE = 'control-plane.json';

/** Whether the named lab runs with a control plane (its commands go to control-plane-lab.ts). */
export function hasControlPlane(name: string, stateRoot?: string): boolean {
  return existsSync(join(labPaths(name, stateRoot).dir, CONTROL_PLANE_STATE));
}

/**
 * Runs `body` holding the lab's lock and, when given, the datapath locks of its nodes' network
 * namespaces (taken in a fixed order, so two holders never wait for each other).
 */
export function locked<T>(
  name: string,
  options: LabLocation,
  body: () => T,
  netns: readonly string[] = [],
): T {
  const locks = [takeLock(name, options)];
  const release = (): void => {
    for (const lock of locks.reverse()) lock.release();
  };
  try {
    for (const ns of [...netns].sort())
      locks.push(acquireDatapathLock(ns, options.waitMs !== undefined ? { waitMs: options.waitMs } : {}));
    const result = body();
    if (result instanceof Promise) return result.finally(release) as T;
    release();
    return result;
  } catch (error) {
    release();
    throw error;
  }
}

export function takeLock(name: string, options: LabLocation): HeldLock {
  const { root, lock } = labPaths(name, options.stateRoot);
  try {
    ensurePrivateDir(root);
    return acquireLock(lock, {
      what: `lab "${name}"`,
      ...(options.waitMs !== undefined ? { waitMs: options.waitMs } : {}),
    });
  } catch (error) {
    if (error instanceof StateFileError) throw new LabError(error.message);
    throw error;
  }
}

/** Root, and a name usable in namespace and interface names. */
export function checkLabName(name: string): void {
  requireRoot();
  if (!LAB_NAME.test(name)) throw new LabError(`lab name "${name}": 1-16 lowercase letters, digits or '-'`);
}

/** The lab changes network namespaces and nftables: root only, said in one line. */
export function requireRoot(): void {
  if (!isRoot()) throw new LabError('the lab needs root (network namespaces and nftables); run it as root');
}

export function ensureDir(dir: string): void {
  try {
    ensurePrivateDir(dir);
  } catch (error) {
    throw new LabError((error as Error).message);
  }
}

/** Writes a lab's state file atomically (0600); a failure is a LabError. */
export function writeStateFile(path: string, state: object): void {
  try {
    writeFileAtomic(path, JSON.stringify(state));
  } catch (error) {
    throw new LabError((error as Error).message);
  }
}

/** Reads a lab's state file, trusted only when private; `missing` says what its absence means. */
export function readStateFile<T extends { readonly version: number }>(path: string, missing: string): T {
  if (!existsSync(path)) throw new LabError(`${missing} (no ${path})`);
  let state: T;
  try {
    state = JSON.parse(readTrustedFile(path)) as T;
  } catch (error) {
    if (error instanceof StateFileError) throw new LabError(error.message);
    throw new LabError(`${path}: not a lab state file (${(error as Error).message})`);
  }
  if (state.version !== 1) throw new LabError(`${path}: not a lab state this version reads`);
  return state;
}

/**
 * The plan of a lab about to be built in `dir`: refused when a lab of that name is up (of
 * either kind) or when the manifests have no pod to build.
 */
export function planNewLab(name: string, dir: string, cluster: Cluster, nodes: number | undefined): LabPlan {
  if (existsSync(join(dir, 'lab.json')) || existsSync(join(dir, CONTROL_PLANE_STATE)))
    throw new LabError(`lab "${name}" is already up (palisade lab down first)`);
  const plan = planLab(name, cluster, nodes !== undefined ? { nodes } : {});
  if (plan.pods.length === 0) throw new LabError('the manifests have no pods or workloads to build');
  return plan;
}

/**
 * The Unix sockets of a control-plane lab's agents that report flows (`lab up --control-plane
 * --flow-log`), by node; a LabError when the lab is not up or its agents report none.
 */
export function labFlowSockets(name: string, stateRoot?: string): { node: string; socket: string }[] {
  const state = readStateFile<{
    readonly version: number;
    readonly controlPlane?: {
      readonly agents: readonly { readonly node: string; readonly socket?: string }[];
    };
  }>(join(labPaths(name, stateRoot).dir, CONTROL_PLANE_STATE), `no lab "${name}" with a control plane is up`);
  const agents = state.controlPlane?.agents ?? [];
  const sockets = agents.flatMap((a) => (a.socket ? [{ node: a.node, socket: a.socket }] : []));
  if (sockets.length === 0)
    throw new LabError(
      `the agents of lab "${name}" do not report flows (start it with 'lab up --control-plane --flow-log')`,
    );
  return sockets;
}
