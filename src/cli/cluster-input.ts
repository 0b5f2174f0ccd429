/**
 * The cluster as an analysis command's input: `--kubeconfig`, `--context`, `-A` and `-n`
 * resolved into what to read, and the read itself — the Kubernetes client is imported only here,
 * only when a command reads a cluster. API failures become one line and exit 2.
 */
import type { Command } from 'commander';
import type { LoadResult } from '../ingest/types.ts';
import type { KubeconfigRequest, NamespaceScope } from '../kube/types.ts';
import { sortDiagnostics } from '../model/diagnostics.ts';
import type { Semantics } from '../model/types.ts';
import { UsageError, type CliIo } from './io.ts';
import { progressBar } from './progress.ts';

/** Reading a cluster: which kubeconfig and context, and which namespaces. */
export interface ClusterInput {
  /** `--kubeconfig PATH`; absent: `KUBECONFIG`, `~/.kube/config`, then the pod's service account. */
  readonly kubeconfig?: string;
  /** `--context NAME`; absent: the current context. */
  readonly context?: string;
  /** `-n NS…` reads those namespaces; default (and `-A`): all of them. */
  readonly scope: NamespaceScope;
}

/** The cluster could not be read (configuration, credentials, permissions, network, TLS): exit 2. */
export class ClusterAccessError extends UsageError {}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** Adds --kubeconfig, --context, -A and -n to a command. */
export function withClusterOptions(command: Command): Command {
  return command
    .option(
      '--kubeconfig <path>',
      'read the cluster of this kubeconfig (default: KUBECONFIG, ~/.kube/config, in-cluster)',
    )
    .option('--context <name>', 'the kubeconfig context to use (default: its current context)')
    .option('-A, --all-namespaces', 'read every namespace of the cluster (the default)')
    .option(
      '-n, --namespace <namespace>',
      'only this namespace; repeatable. From a cluster, only its objects are read; from files (-f), only its pods are kept, and a single -n is also the namespace of objects that name none, as with kubectl -n',
      collect,
    );
}

/**
 * The cluster input the raw options ask for, or undefined when files are the input. Reading a
 * cluster is the default when no -f is given; -f together with --kubeconfig or --context is an error.
 */
export function resolveClusterInput(raw: Record<string, unknown>): ClusterInput | undefined {
  const files = raw.file as string[] | undefined;
  const kubeconfig = typeof raw.kubeconfig === 'string' ? raw.kubeconfig : undefined;
  const context = typeof raw.context === 'string' ? raw.context : undefined;
  const namespaces = raw.namespace as string[] | undefined;
  if (raw.allNamespaces === true && namespaces?.length) {
    throw new UsageError('-A (all namespaces) and -n (these namespaces) exclude each other');
  }
  if (files?.length) {
    if (kubeconfig !== undefined || context !== undefined) {
      throw new UsageError(
        `-f reads manifests and ${kubeconfig !== undefined ? '--kubeconfig' : '--context'} reads a cluster: give one or the other`,
      );
    }
    return undefined;
  }
  return {
    ...(kubeconfig !== undefined ? { kubeconfig } : {}),
    ...(context !== undefined ? { context } : {}),
    scope: namespaces?.length ? { all: false, namespaces: [...new Set(namespaces)] } : { all: true },
  };
}

/** What the kube layer needs to find the cluster, from the input and the environment. */
export function kubeconfigRequest(
  input: Pick<ClusterInput, 'kubeconfig' | 'context'>,
  io: CliIo,
): KubeconfigRequest {
  return {
    ...(input.kubeconfig !== undefined ? { kubeconfig: input.kubeconfig } : {}),
    ...(input.context !== undefined ? { context: input.context } : {}),
    env: io.env,
  };
}

/** Reads the cluster and decodes it as files are decoded; a progress bar on a terminal. */
export async function loadClusterInput(
  input: ClusterInput,
  semantics: Semantics,
  io: CliIo,
): Promise<LoadResult> {
  const kube = await import('../kube/index.ts');
  const { loadFromRawObjects } = await import('../ingest/index.ts');
  const request = kubeconfigRequest(input, io);
  if (!kube.kubeconfigAvailable(request)) {
    throw new ClusterAccessError(
      'no input: give -f PATH… (manifests), or point at a cluster with --kubeconfig PATH (or KUBECONFIG, ~/.kube/config, or run in a pod)',
    );
  }
  const progress = io.stderrIsTty && !io.env.NO_COLOR ? progressBar(io.stderr, 'reading cluster') : undefined;
  try {
    const api = await kube.connect(request);
    const read = await kube.readCluster(api, input.scope, progress ? { onProgress: progress.update } : {});
    progress?.finish();
    const loaded = loadFromRawObjects(kube.apiRawObjects(read.objects), semantics);
    return { ...loaded, diagnostics: sortDiagnostics([...read.diagnostics, ...loaded.diagnostics]) };
  } catch (error) {
    progress?.finish();
    if (error instanceof kube.KubeApiError) throw new ClusterAccessError(error.message);
    throw error;
  }
}
