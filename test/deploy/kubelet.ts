/**
 * What a kubelet does for the agent DaemonSet's container, done by hand (root): the node's
 * address reached over a veth (hostNetwork: the process lives in the node's network namespace),
 * the pod's service account projected where the official client looks for it, and the
 * container's command started with exactly its manifest's capabilities and uid (setpriv) and its
 * environment (NODE_NAME from spec.nodeName). The API server it talks to is the fake one, over
 * TLS with the service account's token.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '../../src/dataplane/index.ts';
import { palisadeArgv } from '../helpers/executable.ts';
import { render, type Json } from './kustomize.ts';

export const OPENSSL = ['/usr/bin/openssl', '/bin/openssl'].find((p) => existsSync(p));
export const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));
export const UNSHARE = ['/usr/bin/unshare', '/bin/unshare'].find((p) => existsSync(p));
export const NSENTER = ['/usr/bin/nsenter', '/bin/nsenter'].find((p) => existsSync(p));

/** A workload's first container, with what a kubelet needs from its pod spec. */
export interface AgentContainer {
  readonly args: readonly string[];
  readonly env: readonly Json[];
  readonly caps: readonly string[];
  readonly uid: number;
  /** The group the process runs as (runAsGroup; the uid's own group 0 when unset). */
  readonly gid: number;
  /** The pod's fsGroup: a supplementary group, and the group of its secret volumes' files. */
  readonly fsGroup?: number;
  /** Whether the container mounts the host's BPF filesystem. */
  readonly bpffs: boolean;
  /** Secret volumes: where each is mounted, which Secret, and its files' mode. */
  readonly secrets: readonly {
    readonly mountPath: string;
    readonly secretName: string;
    readonly mode: number;
  }[];
}

/** The first container of `kind` (DaemonSet, Deployment) in an install (`deploy/<install>`). */
export function podContainer(install: string, kind = 'DaemonSet'): AgentContainer {
  const workload = render(install).find((o) => o.kind === kind);
  if (!workload) throw new Error(`deploy/${install} has no ${kind}`);
  const pod = ((workload.spec as Json).template as { spec: Json }).spec;
  const container = (pod.containers as Json[])[0]!;
  const security = container.securityContext as {
    runAsUser: number;
    runAsGroup?: number;
    capabilities: { add?: string[] };
  };
  const mounts = (container.volumeMounts as { name: string; mountPath: string }[] | undefined) ?? [];
  const volumes =
    (pod.volumes as { name: string; secret?: { secretName: string; defaultMode?: number } }[]) ?? [];
  const fsGroup = (pod.securityContext as { fsGroup?: number } | undefined)?.fsGroup;
  return {
    args: container.args as string[],
    env: (container.env as Json[] | undefined) ?? [],
    caps: security.capabilities.add ?? [],
    uid: security.runAsUser,
    gid: security.runAsGroup ?? 0,
    ...(fsGroup !== undefined ? { fsGroup } : {}),
    bpffs: mounts.some((m) => m.mountPath === '/sys/fs/bpf'),
    secrets: mounts.flatMap((mount) => {
      const secret = volumes.find((v) => v.name === mount.name)?.secret;
      return secret
        ? [{ mountPath: mount.mountPath, secretName: secret.secretName, mode: secret.defaultMode ?? 0o644 }]
        : [];
    }),
  };
}

/** The agent container of an install's DaemonSet. */
export const agentContainer = (install: string): AgentContainer => podContainer(install, 'DaemonSet');

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

/**
 * The i-th node's link to the host: a /30 of link-local addresses, host side first, in the
 * test file's own /24 (`subnet`, the third octet): test files run at once, and two of them
 * giving the host the same address would each reach the other's nodes.
 */
export function nodeLinkAddresses(subnet: number, index: number): { host: string; node: string } {
  return { host: `169.254.${subnet}.${4 * index + 1}`, node: `169.254.${subnet}.${4 * index + 2}` };
}

/** Connects a node's namespace to the host over a veth; returns its removal. */
export async function linkNodeToHost(
  netns: string,
  subnet: number,
  index: number,
): Promise<() => Promise<unknown>> {
  const { host, node } = nodeLinkAddresses(subnet, index);
  const hostLink = `pk${subnet}-${process.pid % 10000}-${index}`;
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

/** `$(NAME)` in a command or argument is the variable's value, as a kubelet expands it; `$$` is `$`. */
export function expandReferences(text: string, env: NodeJS.ProcessEnv): string {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string | undefined) =>
    name === undefined ? '$' : (env[name] ?? whole),
  );
}

export interface KubeletOptions {
  readonly container: AgentContainer;
  /** The pod's name (a DaemonSet's pods: the node's name stands in for it). */
  readonly podName: string;
  readonly nodeName: string;
  /** hostNetwork: the node's namespace; a pod of its own network otherwise (undefined: the host's). */
  readonly netns?: string;
  readonly apiHost: string;
  readonly apiPort: string;
  readonly account: { readonly token: string; readonly ca: string };
  /** ConfigMaps by name, then key. */
  readonly configMaps?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /** Secrets by name, then file. */
  readonly secrets?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  readonly dir: string;
}

/**
 * Starts the container's command as a kubelet would: in a mount namespace of its own, a tmpfs on
 * /run (the projected service account under /var/run, and the hostPath /run/palisade); each
 * secret volume's files owned by root and the pod's fsGroup with the volume's mode, mounted at
 * its path (over an overlay of the directory above it when the path does not exist, so the
 * host's tree is untouched); a BPF filesystem of its own on /sys/fs/bpf when the container mounts
 * the host's (each node has its own, and the test's nodes share one host — its pins go with the
 * mount namespace when the process exits). The environment: the manifest's values, fieldRefs
 * (spec.nodeName, metadata.name) and configMapKeyRefs; `$(VAR)` in args expanded.
 */
export function runAsKubelet(options: KubeletOptions): KubeletRun {
  const { container, dir } = options;
  const volumes = join(dir, `volumes-${options.podName}`);
  const account = join(volumes, 'serviceaccount');
  mkdirSync(account, { recursive: true });
  writeFileSync(join(account, 'token'), options.account.token);
  writeFileSync(join(account, 'namespace'), 'palisade-system');
  writeFileSync(join(account, 'ca.crt'), options.account.ca);
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
    KUBERNETES_SERVICE_HOST: options.apiHost,
    KUBERNETES_SERVICE_PORT: options.apiPort,
  };
  const fields: Record<string, string> = {
    'spec.nodeName': options.nodeName,
    'metadata.name': options.podName,
  };
  for (const variable of container.env) {
    const from = variable.valueFrom as
      { fieldRef?: { fieldPath: string }; configMapKeyRef?: { name: string; key: string } } | undefined;
    const value =
      variable.value !== undefined
        ? typeof variable.value === 'string'
          ? variable.value
          : JSON.stringify(variable.value)
        : from?.fieldRef
          ? fields[from.fieldRef.fieldPath]
          : from?.configMapKeyRef
            ? options.configMaps?.[from.configMapKeyRef.name]?.[from.configMapKeyRef.key]
            : undefined;
    if (value === undefined) throw new Error(`env ${String(variable.name)}: no value a kubelet could give`);
    env[String(variable.name)] = value;
  }
  const mounts: string[] = [];
  for (const [index, secret] of container.secrets.entries()) {
    const files = options.secrets?.[secret.secretName];
    if (!files) throw new Error(`the Secret ${secret.secretName} is not given`);
    const source = join(volumes, `secret-${index}`);
    mkdirSync(source, { recursive: true });
    for (const [file, content] of Object.entries(files)) {
      const path = join(source, file);
      writeFileSync(path, content);
      chownSync(path, 0, container.fsGroup ?? 0);
      chmodSync(path, secret.mode);
    }
    const top = `/${secret.mountPath.split('/')[1]}`;
    if (!existsSync(secret.mountPath)) {
      const overlay = join(volumes, `overlay-${index}`);
      mkdirSync(join(overlay, 'upper'), { recursive: true });
      mkdirSync(join(overlay, 'work'), { recursive: true });
      mounts.push(
        `mount -t overlay overlay -o lowerdir=${top},upperdir=${overlay}/upper,workdir=${overlay}/work ${top}`,
        `mkdir -p ${secret.mountPath}`,
      );
    }
    mounts.push(`mount --bind -o ro ${source} ${secret.mountPath}`);
  }
  const caps = container.caps.map((c) => `+${c.toLowerCase()}`).join(',');
  const capabilities = caps === '' ? '-all' : `-all,${caps}`;
  const script = [
    'set -e',
    'mount -t tmpfs tmpfs /run',
    'mkdir -p /run/secrets/kubernetes.io/serviceaccount /run/palisade',
    `cp ${account}/token ${account}/ca.crt ${account}/namespace /run/secrets/kubernetes.io/serviceaccount/`,
    ...(container.bpffs ? ['mount -t bpf bpf /sys/fs/bpf'] : []),
    ...mounts,
    'exec "$@"',
  ].join('\n');
  const command = [
    SETPRIV!,
    `--reuid=${container.uid}`,
    `--regid=${container.gid}`,
    ...(container.fsGroup !== undefined ? [`--groups=${container.fsGroup}`] : ['--clear-groups']),
    `--inh-caps=${capabilities}`,
    `--ambient-caps=${capabilities}`,
    `--bounding-set=${capabilities}`,
    '--',
    process.execPath,
    ...palisadeArgv(),
    ...container.args.map((arg) => expandReferences(arg, env)),
  ];
  // nsenter enters only the network namespace (`ip netns exec` would also remount /sys, hiding
  // the BPF filesystem); unshare gives the mount namespace.
  const enter = options.netns !== undefined ? [NSENTER!, `--net=/run/netns/${options.netns}`] : [];
  const argv = [...enter, UNSHARE!, '-m', 'sh', '-c', script, 'sh', ...command];
  const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
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
