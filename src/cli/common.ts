/**
 * What every analysis command shares: the input options (manifests with -f, or a live cluster:
 * --kubeconfig, --context, -A, -n), loading the cluster, and reporting diagnostics on stderr
 * (errors and warnings always; info with --verbose).
 */
import { hasErrors, makeDiagnostic, type Diagnostic } from '../model/diagnostics.ts';
import type { Cluster } from '../model/types.ts';
import { manifestKind, policyEngine } from '../model/cluster-policy.ts';
import { loadCluster } from '../ingest/index.ts';
import type { LoadResult } from '../ingest/types.ts';
import {
  formatDiagnostics,
  parseIngressControllerPlace,
  styleFor,
  type IngressControllerPlace,
} from '../analysis/index.ts';
import { UnsupportedInputError, UsageError, type CliIo } from './io.ts';
import { loadClusterInput } from './cluster-input.ts';
import { phases, type Progress } from './progress.ts';
import type { InputOptions } from './input-options.ts';

// The input options live apart so that a command can define and check them without loading the
// layers that read input (`serve` listens before it loads them).
export { checkChoice, resolveInputOptions, withInputOptions, type InputOptions } from './input-options.ts';

/** What a command adds to loading its input. */
interface LoadExtras {
  /** No semantics diagnostics: the command adds them once it knows the semantics (convert). */
  readonly deferSemantics?: boolean;
  /**
   * False for commands that read only the cluster: no file's text or parsed documents are kept
   * once decoded (`rawObjects` is empty). `convert`, `lint`, `serve` and the lab need them.
   */
  readonly rawObjects?: boolean;
  /** How the command takes a pod, for a pod's name written after -f by mistake: `--pod shop/web`. */
  readonly podOption?: (name: string) => string;
  /** Where the reading's phases are shown (a terminal's stderr; see progress.ts). */
  readonly progress?: Progress;
}

/** A loader's `(phase, done, total)` reports on a Progress line (total 0: the phase alone). */
function reportPhases(progress: Progress): (phase: string, done: number, total: number) => void {
  let current = '';
  return (phase, done, total) => {
    if (phase !== current) {
      current = phase;
      progress.phase(phase);
    }
    if (total > 0) progress.update(done, total);
  };
}

/**
 * Loads the input. From files, `-n` is read as kubectl reads it: one namespace given is the
 * namespace of objects that name none, and each given that has nothing in the input gets a
 * warning (NAMESPACE_NOT_IN_INPUT).
 */
export async function loadInput(
  options: InputOptions,
  io: CliIo,
  extras: LoadExtras = {},
): Promise<LoadResult> {
  if (options.cluster) return loadClusterInput(options.cluster, options.semantics, io);
  // Every command reads its input with the phases on a terminal; a command going on to phases
  // of its own passes its line, and clears it itself.
  const progress = extras.progress ?? phases(io);
  try {
    return await loadFiles(options, io, { ...extras, ...(progress ? { progress } : {}) });
  } finally {
    if (!extras.progress) progress?.finish();
  }
}

async function loadFiles(options: InputOptions, io: CliIo, extras: LoadExtras): Promise<LoadResult> {
  const namespaces = options.namespaces ?? [];
  const loaded = await loadCluster(options.file, {
    semantics: extras.deferSemantics ? 'deferred' : options.semantics,
    maxFileBytes: options.maxFileSize * 1024 * 1024,
    readStdin: (maxBytes) => io.readStdin(maxBytes),
    keepRawObjects: extras.rawObjects ?? true,
    ...(extras.podOption ? { podOption: extras.podOption } : {}),
    ...(namespaces.length === 1 ? { defaultNamespace: namespaces[0] } : {}),
    ...(extras.progress ? { onProgress: reportPhases(extras.progress) } : {}),
  });
  const empty = namespaces.filter(
    (ns) =>
      !loaded.cluster.endpoints.some((e) => e.namespace === ns) &&
      !loaded.cluster.policies.some((p) => p.namespace === ns),
  );
  if (empty.length === 0) return loaded;
  const warnings = [...new Set(empty)].map((ns) =>
    makeDiagnostic(
      'NAMESPACE_NOT_IN_INPUT',
      `no pods, workloads or policies in namespace "${ns}" (-n ${ns}); nothing of it is shown`,
      { file: '<cli>' },
    ),
  );
  return { ...loaded, diagnostics: [...warnings, ...loaded.diagnostics] };
}

/** Prints diagnostics to stderr; returns whether any is an error. */
export function reportDiagnostics(diagnostics: readonly Diagnostic[], io: CliIo, verbose: boolean): boolean {
  const style = styleFor(io.stderrIsTty, io.env);
  const shown = verbose ? diagnostics : diagnostics.filter((d) => d.severity !== 'info');
  for (const line of formatDiagnostics(shown, style, verbose)) io.stderr.write(line + '\n');
  const hidden = diagnostics.length - shown.length;
  if (hidden > 0 && shown.length > 0) {
    io.stderr.write(
      style.dim(`(${hidden} info message${hidden === 1 ? '' : 's'} hidden; -v shows them)`) + '\n',
    );
  }
  return hasErrors(diagnostics);
}

export function writeJson(io: CliIo, value: unknown): void {
  io.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

/**
 * A target that cannot express ordered cluster policy (AdminNetworkPolicy,
 * BaselineAdminNetworkPolicy, ClusterNetworkPolicy) refuses it rather than enforce something else
 * than the reference evaluator would.
 */
export function refuseClusterPolicies(cluster: Cluster, what: string, why: string): void {
  const first = cluster.clusterPolicies[0];
  if (!first) return;
  throw new UnsupportedInputError(
    `${what} ${why} (the input has ${cluster.clusterPolicies.length}, e.g. ${manifestKind(first.kind)} ${first.namespace !== undefined ? `${first.namespace}/` : ''}${first.name}); nothing was rendered. The reference evaluator, the classifier, nftables and the VPP targets handle them`,
  );
}

/** A target that cannot express Calico's or Cilium's policies refuses input with any. */
export function refuseEnginePolicies(cluster: Cluster, what: string, why: string): void {
  const engines = enginePolicies(cluster);
  if (!engines) return;
  throw new UnsupportedInputError(
    `${what} ${why} (${engines}); nothing was rendered. The reference evaluator, nftables and the VPP targets handle them`,
  );
}

/** `the input has N, e.g. Kind ns/name` for Calico's and Cilium's policies; undefined without any. */
export function enginePolicies(cluster: Cluster): string | undefined {
  const engines = cluster.clusterPolicies.filter((p) => policyEngine(p.kind) !== 'network-policy-api');
  const first = engines[0];
  if (!first) return undefined;
  return `the input has ${engines.length}, e.g. ${manifestKind(first.kind)} ${first.namespace !== undefined ? `${first.namespace}/` : ''}${first.name}`;
}

/** `--ingress-controller`'s place (matrix, check); the default place when not given. */
export function ingressControllerOption(value: unknown): IngressControllerPlace {
  if (typeof value !== 'string') return {};
  const place = parseIngressControllerPlace(value);
  if (typeof place === 'string') throw new UsageError(place);
  return place;
}
