/**
 * Finds the cluster as kubectl does: `--kubeconfig PATH` alone when given; otherwise the files
 * of `KUBECONFIG` merged (missing files ignored; for clusters, users and contexts the first file
 * to define a name wins, and the first `current-context` set wins), otherwise `~/.kube/config`;
 * and when none of these defines anything, the pod's service account (in-cluster). `--context`
 * picks a context, otherwise the current one. Parsing each file and authenticating (tokens,
 * client certificates, exec plugins) is the official client's `KubeConfig`, loaded lazily so
 * commands that read files never pay for it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import type { Cluster, Context, User } from '@kubernetes/client-node/dist/config_types.js';
import { KubeApiError } from './errors.ts';
import type { ClusterTarget, KubeconfigRequest } from './types.ts';

const SERVICE_ACCOUNT_ROOT = '/var/run/secrets/kubernetes.io/serviceaccount';

interface ResolvedKubeconfig {
  readonly config: KubeConfig;
  readonly target: ClusterTarget;
}

/** Whether any cluster configuration exists for this request (without loading the client). */
export function kubeconfigAvailable(request: KubeconfigRequest): boolean {
  if (request.kubeconfig !== undefined) return true;
  if (configFiles(request).files.some((f) => existsSync(f))) return true;
  return inClusterAvailable(request);
}

export async function resolveKubeconfig(request: KubeconfigRequest): Promise<ResolvedKubeconfig> {
  const { KubeConfig } = await import('@kubernetes/client-node/dist/config.js');
  const { files, source } = configFiles(request);
  if (request.kubeconfig !== undefined && !existsSync(request.kubeconfig)) {
    throw new KubeApiError('config', `--kubeconfig ${request.kubeconfig}: no such file`);
  }
  const clusters: Cluster[] = [];
  const users: User[] = [];
  const contexts: Context[] = [];
  let currentContext = '';
  for (const file of files) {
    if (!existsSync(file)) continue; // kubectl ignores missing files in KUBECONFIG
    const one = new KubeConfig();
    try {
      one.loadFromFile(file);
    } catch (error) {
      throw new KubeApiError('config', `cannot read kubeconfig ${file}: ${firstLine(error)}`);
    }
    // The first file to define a name wins, as in kubectl's merge.
    for (const c of one.getClusters()) if (!clusters.some((x) => x.name === c.name)) clusters.push(c);
    for (const u of one.getUsers()) if (!users.some((x) => x.name === u.name)) users.push(u);
    for (const c of one.getContexts()) if (!contexts.some((x) => x.name === c.name)) contexts.push(c);
    if (!currentContext && one.getCurrentContext()) currentContext = one.getCurrentContext();
  }
  const config = new KubeConfig();
  if (clusters.length === 0 && contexts.length === 0 && request.kubeconfig === undefined) {
    if (!inClusterAvailable(request)) {
      throw new KubeApiError(
        'config',
        `no cluster configured: ${source} defines none and this is not a pod with a service account; give -f PATH… or --kubeconfig PATH`,
      );
    }
    return inCluster(config, request);
  }
  const contextName = request.context ?? currentContext;
  if (!contextName) {
    throw new KubeApiError(
      'config',
      `${source} sets no current-context; give --context (one of: ${names(contexts)})`,
    );
  }
  const context = contexts.find((c) => c.name === contextName);
  if (!context) {
    throw new KubeApiError(
      'config',
      `context "${contextName}" is not in ${source} (contexts: ${names(contexts)})`,
    );
  }
  const cluster = clusters.find((c) => c.name === context.cluster);
  if (!cluster || !cluster.server) {
    throw new KubeApiError(
      'config',
      `context "${contextName}" names cluster "${context.cluster}", which ${source} does not define with a server`,
    );
  }
  // The client refuses plain http unless TLS checks are off; there is no TLS to check (kubectl allows it).
  const usable: Cluster = cluster.server.startsWith('http:') ? { ...cluster, skipTLSVerify: true } : cluster;
  // The client applies a cluster's CA only when the context has a user: give it an anonymous one.
  const user = users.find((u) => u.name === context.user) ?? { name: context.user || 'anonymous' };
  config.loadFromOptions({
    clusters: [usable],
    users: [user],
    contexts: [{ ...context, user: user.name }],
    currentContext: contextName,
  });
  return {
    config,
    target: {
      server: cluster.server,
      context: contextName,
      namespace: context.namespace || 'default',
      source,
    },
  };
}

/** The files to read and how to name them in messages. */
function configFiles(request: KubeconfigRequest): { files: string[]; source: string } {
  if (request.kubeconfig !== undefined) return { files: [request.kubeconfig], source: request.kubeconfig };
  const fromEnv = request.env.KUBECONFIG;
  if (fromEnv) {
    const files = fromEnv.split(delimiter).filter((f) => f !== '');
    return { files, source: `KUBECONFIG (${files.join(delimiter)})` };
  }
  const home = request.env.HOME ?? request.env.USERPROFILE;
  const file = home ? join(home, '.kube', 'config') : '';
  return { files: file ? [file] : [], source: file || '~/.kube/config' };
}

function inClusterAvailable(request: KubeconfigRequest): boolean {
  const root = request.serviceAccountRoot ?? SERVICE_ACCOUNT_ROOT;
  return (
    Boolean(request.env.KUBERNETES_SERVICE_HOST && request.env.KUBERNETES_SERVICE_PORT) &&
    existsSync(join(root, 'token'))
  );
}

/** A pod's service account: the token file (re-read as it rotates), its CA, its namespace. */
function inCluster(config: KubeConfig, request: KubeconfigRequest): ResolvedKubeconfig {
  const root = request.serviceAccountRoot ?? SERVICE_ACCOUNT_ROOT;
  const host = request.env.KUBERNETES_SERVICE_HOST!;
  const port = request.env.KUBERNETES_SERVICE_PORT!;
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const namespaceFile = join(root, 'namespace');
  let namespace = 'default';
  if (existsSync(namespaceFile)) {
    // Read synchronously at start-up: a few bytes, once.
    namespace = readFileSync(namespaceFile, 'utf8').trim() || 'default';
  }
  config.loadFromOptions({
    clusters: [{ name: 'in-cluster', server, caFile: join(root, 'ca.crt'), skipTLSVerify: false }],
    users: [
      {
        name: 'service-account',
        authProvider: { name: 'tokenFile', config: { tokenFile: join(root, 'token') } },
      },
    ],
    contexts: [{ name: 'in-cluster', cluster: 'in-cluster', user: 'service-account', namespace }],
    currentContext: 'in-cluster',
  });
  return {
    config,
    target: { server, context: 'in-cluster', namespace, source: `the service account in ${root}` },
  };
}

function names(contexts: readonly Context[]): string {
  return contexts.length ? contexts.map((c) => c.name).join(', ') : 'none';
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
}
