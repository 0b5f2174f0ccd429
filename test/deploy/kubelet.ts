/**
 * What a kubelet does for the agent DaemonSet's container, done by hand (root): the node's
 * address reached over a veth (hostNetwork: the process lives in the node's network namespace),
 * the pod's service account projected where the official client looks for it, and the
 * container's command started with exactly its manifest's capabilities and uid (setpriv) and its
 * environment (NODE_NAME from spec.nodeName). The API server it talks to is the fake one, over
 * TLS with the service account's token.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '../../src/dataplane/index.ts';
import { palisadeArgv } from '../helpers/executable.ts';
import { render, type Json } from './kustomize.ts';

export const OPENSSL = ['/usr/bin/openssl', '/bin/openssl'].find((p) => existsSync(p));
export const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));
export const UNSHARE = ['/usr/bin/unshare', '/bin/unshare'].find((p) => existsSync(p));
export const NSENTER = ['/usr/bin/nsenter', '/bin/nsenter'].find((p) => existsSync(p));

/** The agent container of an install's DaemonSet (`deploy/<install>`). */
export interface AgentContainer {
  readonly args: readonly string[];
  readonly env: readonly Json[];
  readonly caps: readonly string[];
  readonly uid: number;
  /** Where the container mounts the host's BPF filesystem, when it does. */
  readonly bpffs: boolean;
}

export function agentContainer(install: string): AgentContainer {
  const daemonSet = render(install).find((o) => o.kind === 'DaemonSet')!;
  const pod = ((daemonSet.spec as Json).template as { spec: Json }).spec;
  const container = (pod.containers as Json[])[0]!;
  const security = container.securityContext as { runAsUser: number; capabilities: { add: string[] } };
  const mounts = (container.volumeMounts as { mountPath: string }[] | undefined) ?? [];
  return {
    args: container.args as string[],
    env: container.env as Json[],
    caps: security.capabilities.add,
    uid: security.runAsUser,
    bpffs: mounts.some((m) => m.mountPath === '/sys/fs/bpf'),
  };
}

/** Linux capability numbers of the names manifests use. */
const CAPABILITY_BITS: Readonly<Record<string, number>> = {
  NET_ADMIN: 12,
  SYS_RESOURCE: 24,
  PERFMON: 38,
  BPF: 39,
};

/** The CapEff mask a process given exactly `caps` has. */
export function capabilityMask(caps: readonly string[]): bigint {
  return caps.reduce((mask, cap) => {
    const bit = CAPABILITY_BITS[cap];
    if (bit === undefined) throw new Error(`unknown capability ${cap}`);
    return mask | (1n << BigInt(bit));
  }, 0n);
}

/** The capabilities this process may pass on (its bounding set). */
export function hostBoundingSet(): bigint {
  const status = readFileSync('/proc/self/status', 'utf8');
  return BigInt(`0x${/^CapBnd:\s*([0-9a-f]+)/m.exec(status)![1]}`);
}

/** The manifest's capabilities this host cannot grant (not in its bounding set). */
export function ungrantable(caps: readonly string[]): string[] {
  const bounding = hostBoundingSet();
  return caps.filter((cap) => (capabilityMask([cap]) & bounding) === 0n);
}

/** A self-signed certificate (its own CA) for the addresses the API server is reached at. */
export function apiServerCertificate(
  dir: string,
  addresses: readonly string[],
): { key: string; cert: string } {
  execFileSync(OPENSSL!, [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1',
    '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'ca.crt'),
    '-subj', `/CN=${addresses[0]}`, '-addext', `subjectAltName=${addresses.map((a) => `IP:${a}`).join(',')}`,
  ], { stdio: 'ignore' }); // prettier-ignore
  return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'ca.crt'), 'utf8') };
}

/** The i-th node's link to the host: a /30 of link-local addresses, host side first. */
export function nodeLinkAddresses(index: number): { host: string; node: string } {
  return { host: `169.254.77.${4 * index + 1}`, node: `169.254.77.${4 * index + 2}` };
}

/** Connects a node's namespace to the host over a veth; returns its removal. */
export async function linkNodeToHost(netns: string, index: number): Promise<() => Promise<unknown>> {
  const { host, node } = nodeLinkAddresses(index);
  const hostLink = `pds${process.pid % 10000}n${index}`;
  await run('ip', ['link', 'add', hostLink, 'type', 'veth', 'peer', 'name', 'apiserver0', 'netns', netns]);
  await run('ip', ['addr', 'add', `${host}/30`, 'dev', hostLink]);
  await run('ip', ['link', 'set', hostLink, 'up']);
  for (const command of [
    ['addr', 'add', `${node}/30`, 'dev', 'apiserver0'],
    ['link', 'set', 'apiserver0', 'up'],
    ['link', 'set', 'lo', 'up'],
  ])
    await run('ip', ['-n', netns, ...command]);
  return () => run('ip', ['link', 'delete', hostLink]).catch(() => undefined);
}

export interface KubeletRun {
  readonly child: ChildProcess;
  readonly log: () => string;
  /** SIGTERM, then SIGKILL after 5 s. */
  readonly stop: () => Promise<void>;
}

/**
 * Starts the container's command in node `nodeName`'s namespace as a kubelet would. A mount
 * namespace of its own gets a tmpfs on /run (the projected service account under /var/run, and
 * the hostPath /run/palisade) and, when the container mounts the host's BPF filesystem, a BPF
 * filesystem of its own on /sys/fs/bpf: each node has its own, and the test's nodes share one
 * host. Its pins go with the mount namespace when the process exits.
 */
export function runAsKubelet(options: {
  readonly container: AgentContainer;
  readonly nodeName: string;
  readonly netns: string;
  readonly apiHost: string;
  readonly apiPort: string;
  readonly account: { readonly token: string; readonly ca: string };
  readonly dir: string;
}): KubeletRun {
  const { container } = options;
  const account = join(options.dir, `serviceaccount-${options.nodeName}`);
  mkdirSync(account, { recursive: true });
  writeFileSync(join(account, 'token'), options.account.token);
  writeFileSync(join(account, 'namespace'), 'palisade-system');
  writeFileSync(join(account, 'ca.crt'), options.account.ca);
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
    KUBERNETES_SERVICE_HOST: options.apiHost,
    KUBERNETES_SERVICE_PORT: options.apiPort,
  };
  for (const variable of container.env) {
    const from = (variable.valueFrom as { fieldRef?: { fieldPath: string } } | undefined)?.fieldRef
      ?.fieldPath;
    if (from !== 'spec.nodeName' && variable.value === undefined)
      throw new Error(`env ${String(variable.name)}: neither a value nor spec.nodeName`);
    env[String(variable.name)] = from === 'spec.nodeName' ? options.nodeName : String(variable.value);
  }
  const caps = container.caps.map((c) => `+${c.toLowerCase()}`).join(',');
  const script = [
    'set -e',
    'mount -t tmpfs tmpfs /run',
    'mkdir -p /run/secrets/kubernetes.io/serviceaccount /run/palisade',
    `cp ${account}/token ${account}/ca.crt ${account}/namespace /run/secrets/kubernetes.io/serviceaccount/`,
    ...(container.bpffs ? ['mount -t bpf bpf /sys/fs/bpf'] : []),
    'exec "$@"',
  ].join('\n');
  const command = [
    SETPRIV!,
    `--reuid=${container.uid}`,
    `--inh-caps=-all,${caps}`,
    `--ambient-caps=-all,${caps}`,
    `--bounding-set=-all,${caps}`,
    '--',
    process.execPath,
    ...palisadeArgv(),
    ...container.args,
  ];
  // nsenter enters only the network namespace (`ip netns exec` would also remount /sys, hiding
  // the BPF filesystem); unshare gives the mount namespace.
  const child = spawn(
    NSENTER!,
    [`--net=/run/netns/${options.netns}`, UNSHARE!, '-m', 'sh', '-c', script, 'sh', ...command],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  child.stdout.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
  child.stderr.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-20_000)));
  return {
    child,
    log: () => log,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
